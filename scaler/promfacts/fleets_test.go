package promfacts

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/alerts"
	"github.com/rotahq/rota/internal/testutil"
)

// TestReadOneFleet: two fleets in one real Prometheus, each with a server twin (busy in
// site-a, idle in site-b), every target labelled with its fleet. A rota with prometheus.fleet
// reads its own fleet's twin, and finds it ready; one without reads two series for twin, so no
// facts and not ready, as before the field.
func TestReadOneFleet(t *testing.T) {
	fleets := map[string]*fakeExporters{
		"site-a": {nodes: map[string]*fakeNode{"twin": {pool: "gpu", busy: 0.5, gpu: 0.9, serving: true}}},
		"site-b": {nodes: map[string]*fakeNode{"twin": {pool: "gpu", busy: 0.05, gpu: 0.01, serving: true}}},
	}
	var sc strings.Builder
	for name, exp := range fleets {
		srv := httptest.NewServer(exp)
		t.Cleanup(srv.Close)
		host := strings.TrimPrefix(srv.URL, "http://")
		fmt.Fprintf(&sc, "  - job_name: rota-exporter-%s\n    static_configs:\n      - targets: [%q]\n        labels: {fleet: %q, node: twin, pool: gpu, __metrics_path__: /n/twin}\n", name, host, name)
		fmt.Fprintf(&sc, "  - job_name: rota-%s\n    metrics_path: /fleet\n    static_configs: [{targets: [%q], labels: {fleet: %q}}]\n", name, host, name)
	}
	url := startPrometheusWith(t, sc.String(), []byte("groups: []\n"))

	readers := map[string]*Reader{}
	for _, name := range []string{"site-a", "site-b", ""} {
		c := testConfig(url)
		c.Prometheus.Fleet = name
		readers[name] = newReader(t, c)
	}
	read := func(fleetName string) (cpu, gpu float64, present, ready bool) {
		t.Helper()
		r := readers[fleetName]
		got, err := r.Read(context.Background(), []string{"twin"}, time.Now())
		if err != nil {
			t.Fatalf("Read (fleet %q): %v", fleetName, err)
		}
		ready, err = r.Ready(context.Background(), "twin", time.Now())
		if err != nil {
			t.Fatalf("Ready (fleet %q): %v", fleetName, err)
		}
		v := got["twin"]
		return v.CPUMax, v.GPUMax, v.Present, ready
	}
	want := map[string][2]float64{"site-a": {0.5, 0.9}, "site-b": {0.05, 0.01}}
	for name, w := range want {
		testutil.Eventually(t, 60*time.Second, name+"'s twin read whole", func() error {
			cpu, gpu, present, ready := read(name)
			if !present || !ready {
				return fmt.Errorf("present %v, ready %v", present, ready)
			}
			if math.Abs(cpu-w[0]) > 0.01 || math.Abs(gpu-w[1]) > 0.01 {
				return fmt.Errorf("cpu %v, gpu %v; want %v, %v", cpu, gpu, w[0], w[1])
			}
			return nil
		})
	}
	// Both fleets are read whole now; without the field twin is two servers in one answer.
	if _, _, present, ready := read(""); present || ready {
		t.Errorf("without prometheus.fleet, twin of two fleets is present %v, ready %v: want neither", present, ready)
	}
}

// selectorRE finds each series a query reads (rota's, node_exporter's, dcgm-exporter's, up) and
// the matchers that follow it.
var selectorRE = regexp.MustCompile(`\b(rota_[a-z_]+|node_[a-z_]+|DCGM_[A-Z_]+|up)\b(\{[^}]*\})?`)

// TestEveryQuerySelectsTheFleet: with prometheus.fleet set, every selector of every query the
// reader sends (each source's facts, unknown telemetry, readiness, GPU power) asks for the fleet;
// unset, none does.
func TestEveryQuerySelectsTheFleet(t *testing.T) {
	for _, fleetName := range []string{"site-a", ""} {
		c := sourcesConfig(t, "http://127.0.0.1:1", "auto", "    dcgm_exporter: {processes: DCGM_FI_DEV_COMPUTE_PIDS}")
		c.Prometheus.Fleet = fleetName
		r := newReader(t, c)
		var sent []string
		for i, e := range r.sources {
			for _, q := range queries(e) {
				sent = append(sent, q.expr)
			}
			for _, m := range e.Mapped(r.gpus[i]) {
				sent = append(sent, e.SeriesPresent(m))
			}
			sent = append(sent, e.ExporterNewestSample("dgx1"), e.GPUPower(), e.GPUPowerCount())
		}
		matcher := fmt.Sprintf(`%s="%s"`, alerts.FleetLabel, fleetName)
		seen := 0
		for _, q := range sent {
			for _, m := range selectorRE.FindAllStringSubmatch(q, -1) {
				seen++
				ok := strings.Contains(m[2], matcher)
				if fleetName == "" {
					ok = !strings.Contains(m[2], alerts.FleetLabel+"=")
				}
				if !ok {
					t.Errorf("fleet %q: selector %s of\n%s", fleetName, m[0], q)
				}
			}
		}
		if seen < len(sent) {
			t.Fatalf("fleet %q: %d selectors found in %d queries", fleetName, seen, len(sent))
		}
	}
}
