package promfacts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/alerts"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// fakeNode is one server's exporter: its CPU counters grow by one scrape's worth (4 CPUs, 1s)
// at each scrape, at the given busy share.
type fakeNode struct {
	pool    string
	busy    float64
	gpu     float64 // GPU utilisation; negative: no GPU
	serving bool
	idle    float64
	user    float64
}

// declared is the GPUs a fake node's pool declares: one for a node with a GPU.
func (n *fakeNode) declared() int {
	if n.gpu >= 0 {
		return 1
	}
	return 0
}

// fakeExporters serves each node's series at /n/<node>; a node that is not serving answers 503
// (its scrape fails, as when the server or its exporter is down).
type fakeExporters struct {
	mu    sync.Mutex
	nodes map[string]*fakeNode
}

func (f *fakeExporters) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path == "/fleet" {
		// rota's own series: what each server's pool declares.
		for name, n := range f.nodes {
			fmt.Fprintf(w, "rota_fleet_node_gpus_declared{node=%q,pool=%q} %d\n", name, n.pool, n.declared())
		}
		return
	}
	n, ok := f.nodes[strings.TrimPrefix(r.URL.Path, "/n/")]
	if !ok || !n.serving {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	n.idle += 4 * (1 - n.busy)
	n.user += 4 * n.busy
	fmt.Fprintf(w, "rota_node_cpu_seconds_total{mode=\"idle\"} %g\nrota_node_cpu_seconds_total{mode=\"user\"} %g\n", n.idle, n.user)
	fmt.Fprint(w, "rota_node_cpus 4\nrota_exporter_collector_success{collector=\"cpu\"} 1\n")
	if n.gpu >= 0 {
		fmt.Fprintf(w, "rota_gpu_devices 1\nrota_gpu_utilization_ratio{gpu=\"0\",uuid=\"GPU-0\"} %g\nrota_gpu_compute_processes{gpu=\"0\",uuid=\"GPU-0\"} 0\n", n.gpu)
	}
}

func (f *fakeExporters) set(node string, serving bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes[node].serving = serving
}

// startPrometheus runs a real Prometheus scraping every fake node each second, with the labels
// node and pool, and rota's fleet series, evaluating rules (a rule file's YAML) each second,
// and returns its URL.
func startPrometheus(t *testing.T, exporters string, nodes map[string]*fakeNode, rules []byte) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("  - job_name: rota-exporter\n    static_configs:\n")
	for name, n := range nodes {
		fmt.Fprintf(&b, "      - targets: [%q]\n        labels: {node: %q, pool: %q, __metrics_path__: %q}\n", exporters, name, n.pool, "/n/"+name)
	}
	fmt.Fprintf(&b, "  - job_name: rota\n    metrics_path: /fleet\n    static_configs: [{targets: [%q]}]\n", exporters)
	return startPrometheusWith(t, b.String(), rules)
}

// startPrometheusWith runs a real Prometheus with the scrape configs given (YAML list items),
// scraping and evaluating rules each second, and returns its URL.
func startPrometheusWith(t *testing.T, scrapeConfigs string, rules []byte) string {
	t.Helper()
	bin := testutil.Tool(t, "prometheus")
	dir := t.TempDir()
	rulesPath := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(rulesPath, rules, 0o644); err != nil {
		t.Fatal(err)
	}
	cfgYAML := fmt.Sprintf("global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}\nrule_files: [%q]\nscrape_configs:\n%s", rulesPath, scrapeConfigs)
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(cfgYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	testutil.Start(t, bin, "--config.file="+cfg, "--web.listen-address="+addr,
		"--storage.tsdb.path="+filepath.Join(dir, "data"))
	url := "http://" + addr
	testutil.WaitHTTP(t, url+"/-/ready", 60*time.Second)
	return url
}

// testConfig scales the windows down to seconds: scrape 1s, idle window 5s, underuse 10s.
func testConfig(url string) *config.Config {
	c := config.Default()
	c.Prometheus.URL = url
	c.Prometheus.ScrapeInterval = model.Duration(time.Second)
	c.Policy.Idle.Window = model.Duration(5 * time.Second)
	c.Policy.Underuse.Window = model.Duration(10 * time.Second)
	c.Policy.Telemetry.MaxAge = model.Duration(3 * time.Second)
	c.Policy.EvaluationInterval = model.Duration(time.Second)
	return c
}

func newReader(t *testing.T, c *config.Config) *Reader {
	t.Helper()
	r, err := New(c, logrus.NewEntry(logrus.New()))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReadFromPrometheus(t *testing.T) {
	nodes := map[string]*fakeNode{
		"idle":    {pool: "cpu", busy: 0.05, gpu: -1, serving: true},
		"busy":    {pool: "cpu", busy: 0.5, gpu: -1, serving: true},
		"gpuidle": {pool: "gpu", busy: 0.05, gpu: 0.01, serving: true},
		"stale":   {pool: "cpu", busy: 0.05, gpu: -1, serving: true},
		"late":    {pool: "cpu", busy: 0.05, gpu: -1},
		"missing": {pool: "cpu", busy: 0.05, gpu: -1},
	}
	exp := &fakeExporters{nodes: nodes}
	srv := httptest.NewServer(exp)
	t.Cleanup(srv.Close)
	// The rules generated from the same scaled-down config, so the idle alert can be compared
	// with what the reader says.
	rules, err := alerts.Generate(testConfig(""), "test")
	if err != nil {
		t.Fatal(err)
	}
	r := newReader(t, testConfig(startPrometheus(t, strings.TrimPrefix(srv.URL, "http://"), nodes, rules)))
	names := []string{"idle", "busy", "gpuidle", "stale", "late", "missing"}
	read := func() map[string]fleet.TelemetryView {
		got, err := r.Read(context.Background(), names, time.Now())
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		return got
	}
	present := func(want ...string) func() error {
		return func() error {
			got := read()
			for _, n := range want {
				if !got[n].Present {
					return fmt.Errorf("%s not present yet: %+v", n, got[n])
				}
			}
			return nil
		}
	}

	testutil.Eventually(t, 60*time.Second, "a full window of data", present("idle", "busy", "gpuidle", "stale"))
	got := read()
	near := func(name string, v, want float64) {
		if math.Abs(v-want) > 0.01 {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	near("idle CPUMax", got["idle"].CPUMax, 0.05)
	near("busy CPUMax", got["busy"].CPUMax, 0.5)
	near("gpuidle GPUMax", got["gpuidle"].GPUMax, 0.01)
	near("gpuidle GPUMean", got["gpuidle"].GPUMean, 0.01)
	if got["missing"].Present || got["late"].Present {
		t.Errorf("servers without data are present: missing %+v, late %+v", got["missing"], got["late"])
	}
	// The idle alert agrees: it fires for the idle servers the reader sees, not for the busy
	// one nor for those without data.
	testutil.Eventually(t, 30*time.Second, "RotaServerIdle firing for the idle servers", func() error {
		if firing := idleAlerts(t, r); firing != "gpuidle idle stale" {
			return fmt.Errorf("firing for %q", firing)
		}
		return nil
	})

	// A server just powered on has fresh samples but not a whole window: not present.
	exp.set("late", true)
	testutil.Eventually(t, 30*time.Second, "late's first sample", func() error {
		if v := read()["late"]; v.LastSample.IsZero() {
			return errors.New("no sample yet")
		} else if v.Present {
			t.Fatalf("late is present with one sample: %+v", v)
		}
		return nil
	})
	// Readiness after boot needs no window: up, with a fresh sample. missing never served.
	ready := func(node string) bool {
		ok, err := r.Ready(context.Background(), node, time.Now())
		if err != nil {
			t.Fatalf("Ready(%s): %v", node, err)
		}
		return ok
	}
	testutil.Eventually(t, 30*time.Second, "late ready", func() error {
		if !ready("late") {
			return errors.New("not ready")
		}
		return nil
	})
	if ready("missing") {
		t.Error("missing, never scraped, is ready")
	}
	testutil.Eventually(t, 60*time.Second, "late covers a window", present("late"))

	// A server whose exporter stops is not present any more.
	exp.set("stale", false)
	testutil.Eventually(t, 30*time.Second, "stale drops out", func() error {
		if v := read()["stale"]; v.Present {
			return fmt.Errorf("still present: %+v", v)
		}
		if ready("stale") {
			return errors.New("still ready")
		}
		return nil
	})
}

// TestReady reads a booted server's readiness from answers of a fake Prometheus: up with a
// fresh sample is ready; no series, a stale sample or an ambiguous answer is not; no answer
// is an error (the executor counts it as not ready).
func TestReady(t *testing.T) {
	now := time.Unix(1_000_000, 0).UTC() // max age 3s (testConfig)
	sample := func(node string, age time.Duration) string {
		return fmt.Sprintf(`{"metric":{"node":%q,"pool":"cpu"},"value":[%d,"%d"]}`, node, now.Unix(), now.Add(-age).Unix())
	}
	cases := []struct {
		name    string
		result  []string // the vector's samples; nil: Prometheus is down
		want    bool
		wantErr bool
	}{
		{name: "fresh sample", result: []string{sample("n", time.Second)}, want: true},
		{name: "sample just under max age", result: []string{sample("n", 2*time.Second)}, want: true},
		{name: "sample at max age (out of the rules' [max_age] window)", result: []string{sample("n", 3*time.Second)}},
		{name: "sample past max age", result: []string{sample("n", 4*time.Second)}},
		{name: "no series (target down or not scraped yet)", result: []string{}},
		{name: "another server's series", result: []string{sample("other", 0)}},
		{name: "two series for the server", result: []string{sample("n", 0), sample("n", 0)}},
		{name: "prometheus down", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url := fmt.Sprintf("http://127.0.0.1:%d", testutil.FreePort(t))
			var query string
			if tc.result != nil {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_ = r.ParseForm()
					query = r.Form.Get("query")
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, strings.Join(tc.result, ","))
				}))
				t.Cleanup(srv.Close)
				url = srv.URL
			}
			got, err := newReader(t, testConfig(url)).Ready(context.Background(), "n", now)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("Ready = %v, %v; want %v (error %v)", got, err, tc.want, tc.wantErr)
			}
			if tc.result != nil && (!strings.Contains(query, `up{node="n"} == 1`) || !strings.Contains(query, alerts.NodeCPUSeconds+`{node="n"}`)) {
				t.Errorf("query %q does not ask for n's up and CPU samples", query)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	warn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[]},"warnings":["shard 3 did not answer"]}`)
	}))
	t.Cleanup(warn.Close)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = io.WriteString(w, `{"status":"error","errorType":"execution","error":"query timed out"}`)
	}))
	t.Cleanup(failing.Close)
	answering := func(body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, body)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	cases := []struct {
		name    string
		url     string
		partial bool
	}{
		{"prometheus down", fmt.Sprintf("http://127.0.0.1:%d", testutil.FreePort(t)), false},
		{"query error", failing.URL, false},
		{"partial answer", warn.URL, true},
		// A proxy or store speaking the API badly: the client gives a nil value (its Type()
		// panicked in the daemon's pass).
		{"success without data", answering(`{"status":"success"}`), false},
		{"a matrix", answering(`{"status":"success","data":{"resultType":"matrix","result":[]}}`), false},
		{"a cut answer", answering(`{"status":"success","data":{"resultType":"vector","result":[{"metric":`), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := newReader(t, testConfig(tc.url)).Read(context.Background(), []string{"n"}, time.Now())
			if err == nil {
				t.Fatalf("Read = %v, want an error", got)
			}
			if errors.Is(err, ErrPartialAnswer) != tc.partial {
				t.Errorf("errors.Is(%v, ErrPartialAnswer) = %v, want %v", err, !tc.partial, tc.partial)
			}
		})
	}
}

// idleAlerts lists the nodes RotaServerIdle fires for, sorted.
func idleAlerts(t *testing.T, r *Reader) string { return firingFor(t, r, alerts.AlertIdle, false) }

// firingFor lists the nodes the alert fires for, sorted, each as node=value withValue.
func firingFor(t *testing.T, r *Reader, alert string, withValue bool) string {
	t.Helper()
	res, err := r.api.Alerts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for _, a := range res.Alerts {
		if string(a.Labels["alertname"]) != alert || a.State != v1.AlertStateFiring {
			continue
		}
		n := string(a.Labels["node"])
		if withValue {
			v, err := strconv.ParseFloat(a.Value, 64)
			if err != nil {
				t.Fatalf("alert value %q: %v", a.Value, err)
			}
			n += fmt.Sprintf("=%g", v)
		}
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	return strings.Join(nodes, " ")
}

// TestRedirects: a redirect is followed only where follow_redirects says so and it keeps the
// query (307, 308); any other fails naming where Prometheus sent rota. (A 302 was followed by
// GET without the query, and the error said only "no expression found in input".)
func TestRedirects(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.FormValue("query") == "" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:1: parse error: no expression found in input"}`)
			return
		}
		_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	}))
	t.Cleanup(target.Close)
	redirecting := func(code int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+r.URL.Path, code)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	for _, tc := range []struct {
		name   string
		code   int
		follow bool
		want   string // in the error; empty: the read works
	}{
		{"302, not followed", http.StatusFound, false, "prometheus answered 302, redirecting to " + target.URL},
		{"307, not followed", http.StatusTemporaryRedirect, false, "follow_redirects: true"},
		{"302, followed", http.StatusFound, true, "a 302 would lose the query"},
		{"301, followed", http.StatusMovedPermanently, true, "a 301 would lose the query"},
		{"307, followed", http.StatusTemporaryRedirect, true, ""},
		{"308, followed", http.StatusPermanentRedirect, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testConfig(redirecting(tc.code))
			c.Prometheus.HTTPClient.FollowRedirects = tc.follow
			_, err := newReader(t, c).Read(context.Background(), []string{"n"}, time.Now())
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Read: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Read = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
