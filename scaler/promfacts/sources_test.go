package promfacts

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rotahq/rota/alerts"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// sourcesYAML has two pools: dgx (2 GPUs each) reading node_exporter and dcgm-exporter
// through the source "fleet", and gpu (1 GPU each) reading rota-exporter. The CPU threshold is
// 100%: the CPUs node_exporter reads are this machine's, busy or not. %s is the rest of the
// source's settings (its defaults apply to what is left out).
const sourcesYAML = `
server: {webhook_auth_disabled: true}
policy: {idle: {cpu_threshold: 1}, gpu_signal: %s}
telemetry_sources:
  - name: fleet
%s
pools:
  - name: dgx
    telemetry_source: fleet
    profile: {cpu_cores: 2, gpus: 2}
    cost: {hourly: 10}
    nodes:
      - {name: dgx1, bmc: {protocol: ipmi, host: 10.0.0.1, username: a, password_env: PW}}
      - {name: dgx2, bmc: {protocol: ipmi, host: 10.0.0.2, username: a, password_env: PW}}
      - {name: dgx3, bmc: {protocol: ipmi, host: 10.0.0.3, username: a, password_env: PW}}
  - name: gpu
    profile: {cpu_cores: 4, gpus: 1}
    cost: {hourly: 5}
    nodes:
      - {name: full, bmc: {protocol: ipmi, host: 10.0.1.1, username: a, password_env: PW}}
      - {name: nocollector, bmc: {protocol: ipmi, host: 10.0.1.2, username: a, password_env: PW}}
`

// sourcesConfig is the config of sourcesYAML with testConfig's windows, reading url.
func sourcesConfig(t *testing.T, url, signal, source string) *config.Config {
	t.Helper()
	c, err := config.Parse([]byte(fmt.Sprintf(sourcesYAML, signal, source)))
	if err != nil {
		t.Fatal(err)
	}
	scaled := testConfig(url)
	c.Prometheus, c.Policy.Idle.Window, c.Policy.Underuse.Window = scaled.Prometheus, scaled.Policy.Idle.Window, scaled.Policy.Underuse.Window
	c.Policy.Telemetry, c.Policy.EvaluationInterval = scaled.Policy.Telemetry, scaled.Policy.EvaluationInterval
	return c
}

// dcgmExporters serves the recorded dcgm-exporter scrape as host dgx1's, and as dgx2's with
// its GPU 1 gone (it fell off the bus); a host marked down answers 503.
type dcgmExporters struct {
	mu      sync.Mutex
	fixture string
	down    map[string]bool
}

func (d *dcgmExporters) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	host := strings.TrimPrefix(r.URL.Path, "/")
	if d.down[host] {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	for _, line := range strings.SplitAfter(d.fixture, "\n") {
		if host == "dgx2" && strings.Contains(line, `gpu="1"`) {
			continue
		}
		fmt.Fprint(w, strings.ReplaceAll(line, `Hostname="dgx1"`, fmt.Sprintf("Hostname=%q", host)))
	}
}

func (d *dcgmExporters) setDown(host string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down[host] = true
}

// recorded lists a recorded per-server series now, as node=value sorted by node.
func recorded(t *testing.T, r *Reader, series string) string {
	t.Helper()
	v, err := r.query(context.Background(), series, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range slices.Sorted(maps.Keys(v)) {
		out = append(out, fmt.Sprintf("%s=%g", n, v[n]))
	}
	return strings.Join(out, " ")
}

// fleetSeries serves what rota's own /metrics says of the servers' declared GPUs.
func fleetSeries(c *config.Config) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for _, p := range c.Pools {
			for _, n := range p.Nodes {
				fmt.Fprintf(w, "%s{node=%q,pool=%q} %d\n", alerts.FleetNodeGPUs, n.Name, p.Name, p.Profile.GPUs)
			}
		}
	})
}

// TestEverySource holds the coverage rules for every telemetry source, in the scaler and in
// the generated rules alike, against a real Prometheus scraping a real node_exporter (as three
// hosts, its instance label set per target as a fleet's relabelling would), the recorded
// dcgm-exporter scrape, fake rota-exporters and rota's fleet series.
func TestEverySource(t *testing.T) {
	nodeExporter := testutil.Tool(t, "prometheus-node-exporter")
	neAddr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	testutil.Start(t, nodeExporter, "--web.listen-address="+neAddr, "--collector.disable-defaults", "--collector.cpu", "--collector.meminfo")
	testutil.WaitHTTP(t, "http://"+neAddr+"/metrics", 30*time.Second)

	fixture := testutil.Testdata(t, "dcgm-exporter.prom")
	dcgm := &dcgmExporters{fixture: string(fixture), down: map[string]bool{}}
	dcgmSrv := httptest.NewServer(dcgm)
	t.Cleanup(dcgmSrv.Close)
	rotaNodes := map[string]*fakeNode{
		"full":        {pool: "gpu", busy: 0.05, gpu: 0.01, serving: true},
		"nocollector": {pool: "gpu", busy: 0.05, gpu: -1, serving: true}, // --no-collector.gpu
	}
	fakes := httptest.NewServer(&fakeExporters{nodes: rotaNodes})
	t.Cleanup(fakes.Close)
	cfg := sourcesConfig(t, "http://127.0.0.1:1", "auto", "")
	fleetSrv := httptest.NewServer(fleetSeries(cfg))
	t.Cleanup(fleetSrv.Close)

	host := func(u string) string { return strings.TrimPrefix(u, "http://") }
	var sc strings.Builder
	sc.WriteString("  - job_name: node\n    static_configs:\n")
	for _, h := range []string{"dgx1", "dgx2", "dgx3"} {
		fmt.Fprintf(&sc, "      - targets: [%q]\n        labels: {instance: %q}\n", neAddr, h+":9100")
	}
	// dgx3 runs no dcgm-exporter: its GPUs have no readings.
	sc.WriteString("  - job_name: dcgm\n    static_configs:\n")
	for _, h := range []string{"dgx1", "dgx2"} {
		fmt.Fprintf(&sc, "      - targets: [%q]\n        labels: {__metrics_path__: %q}\n", host(dcgmSrv.URL), "/"+h)
	}
	sc.WriteString("  - job_name: rota-exporter\n    static_configs:\n")
	for name, n := range rotaNodes {
		fmt.Fprintf(&sc, "      - targets: [%q]\n        labels: {node: %q, pool: %q, __metrics_path__: %q}\n", host(fakes.URL), name, n.pool, "/n/"+name)
	}
	fmt.Fprintf(&sc, "  - job_name: rota\n    static_configs: [{targets: [%q]}]\n", host(fleetSrv.URL))
	rules, err := alerts.Generate(cfg, "test")
	if err != nil {
		t.Fatal(err)
	}
	url := startPrometheusWith(t, sc.String(), rules)
	r := newReader(t, sourcesConfig(t, url, "auto", ""))
	names := []string{"dgx1", "dgx2", "dgx3", "full", "nocollector"}
	read := func(r *Reader) map[string]fleet.TelemetryView {
		got, err := r.Read(context.Background(), names, time.Now())
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		return got
	}

	want := map[string]string{
		"dgx1":        "",
		"dgx2":        "1 of the 2 GPUs its pool declares report readings",
		"dgx3":        "0 of the 2 GPUs its pool declares report readings",
		"full":        "",
		"nocollector": "0 of the 1 GPUs its pool declares report readings",
	}
	testutil.Eventually(t, 60*time.Second, "every server's verdict", func() error {
		got := read(r)
		for n, missing := range want {
			if v := got[n]; v.Present != (missing == "") || v.Missing != missing {
				return fmt.Errorf("%s: present %v, missing %q; want missing %q", n, v.Present, v.Missing, missing)
			}
		}
		return nil
	})
	// Under auto, dgx1's GPU 0 (utilisation 100%, SM activity 2%) is judged by SM activity.
	if v := read(r)["dgx1"]; v.GPUMax < 0.021 || v.GPUMax > 0.022 {
		t.Errorf("dgx1 GPUMax = %v, want its SM activity 0.021354", v.GPUMax)
	}
	if v := read(newReader(t, sourcesConfig(t, url, "utilization", "")))["dgx1"]; v.GPUMax != 1 {
		t.Errorf("dgx1 GPUMax by utilisation = %v, want 1", v.GPUMax)
	}

	// The rules agree: they record every source's servers under rota's names and units, and
	// name the servers short of GPU readings with how many are missing. (Whether dgx1 is idle
	// rests on this machine's CPUs, busy or not; sources.test.yml checks the idle alert on an
	// external source deterministically. full's CPUs are a fake's, at 5%.)
	testutil.Eventually(t, 60*time.Second, "the rules' verdicts", func() error {
		if counts := recorded(t, r, alerts.RecGPUBusyCount); counts != "dgx1=2 dgx2=1 full=1" {
			return fmt.Errorf("%s = %q", alerts.RecGPUBusyCount, counts)
		}
		if missing := firingFor(t, r, alerts.AlertGPUsMissing, true); missing != "dgx2=1 dgx3=2 nocollector=1" {
			return fmt.Errorf("%s firing for %q", alerts.AlertGPUsMissing, missing)
		}
		if firing := firingFor(t, r, alerts.AlertIdle, false); !strings.Contains(firing, "full") || strings.Contains(firing, "dgx2") ||
			strings.Contains(firing, "dgx3") || strings.Contains(firing, "nocollector") {
			return fmt.Errorf("%s firing for %q", alerts.AlertIdle, firing)
		}
		return nil
	})

	// A mapping that names a series Prometheus does not have is unknown telemetry: reported,
	// and never read as zero (a process count that is not there cannot say "no processes").
	pr := newReader(t, sourcesConfig(t, url, "auto", "    dcgm_exporter: {processes: DCGM_FI_DEV_COMPUTE_PIDS}"))
	lines, err := pr.CheckTelemetry(context.Background(), time.Now())
	if err != nil || len(lines) != 1 || !strings.Contains(lines[0], "DCGM_FI_DEV_COMPUTE_PIDS") {
		t.Errorf("CheckTelemetry = %q, %v; want one line naming DCGM_FI_DEV_COMPUTE_PIDS", lines, err)
	}
	if v := read(pr)["dgx1"]; v.Present || !strings.HasPrefix(v.Missing, "unknown telemetry: no DCGM_FI_DEV_COMPUTE_PIDS series") {
		t.Errorf("dgx1 with an unknown process count: %+v", v)
	}
	if lines, err := r.CheckTelemetry(context.Background(), time.Now()); err != nil || len(lines) != 0 {
		t.Errorf("CheckTelemetry of the right mapping = %q, %v; want none", lines, err)
	}

	// dgx1's dcgm-exporter stops: its GPUs have no readings, in both.
	dcgm.setDown("dgx1")
	testutil.Eventually(t, 30*time.Second, "dgx1 drops out", func() error {
		if v := read(r)["dgx1"]; v.Present || v.Missing != "0 of the 2 GPUs its pool declares report readings" {
			return fmt.Errorf("dgx1: %+v", v)
		}
		if firing := firingFor(t, r, alerts.AlertIdle, false); strings.Contains(firing, "dgx1") {
			return fmt.Errorf("%s firing for %q", alerts.AlertIdle, firing)
		}
		if counts := recorded(t, r, alerts.RecGPUBusyCount); counts != "dgx2=1 full=1" {
			return fmt.Errorf("%s = %q", alerts.RecGPUBusyCount, counts)
		}
		return nil
	})
}
