package inventory

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/atomicfile"
	"github.com/rotahq/rota/internal/testutil"
)

// TestPrometheusReadsTargets: a real Prometheus, run with deploy/prometheus/prometheus.yml,
// discovers the generated file, scrapes every server with its labels, and follows a rewrite that
// drops a server.
func TestPrometheusReadsTargets(t *testing.T) {
	prom := testutil.Tool(t, "prometheus")
	exporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "rota_node_cpus 8")
	}))
	t.Cleanup(exporter.Close)

	cfg := exampleConfig(t)
	for i := range cfg.Pools {
		for j := range cfg.Pools[i].Nodes {
			cfg.Pools[i].Nodes[j].Exporter = strings.TrimPrefix(exporter.URL, "http://")
		}
	}
	groups, err := Targets(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "targets"), 0o755); err != nil {
		t.Fatal(err)
	}
	promYML, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "deploy", "prometheus", "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	// A shorter scrape interval only makes the first scrape come sooner.
	promYML = []byte(strings.NewReplacer("scrape_interval: 15s", "scrape_interval: 1s",
		"scrape_timeout: 10s", "scrape_timeout: 1s").Replace(string(promYML)))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), promYML, 0o644); err != nil {
		t.Fatal(err)
	}
	targetsFile := filepath.Join(dir, "targets", "rota.json")
	writeTargets(t, targetsFile, groups)

	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	testutil.Start(t, prom, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	testutil.WaitHTTP(t, "http://"+addr+"/-/ready", 60*time.Second)

	want := map[string]map[string]string{}
	for _, g := range groups {
		want[g.Labels["node"]] = g.Labels
	}
	testutil.Eventually(t, 60*time.Second, "every server scraped with its labels", func() error {
		return checkTargets(addr, want)
	})

	writeTargets(t, targetsFile, groups[1:])
	delete(want, groups[0].Labels["node"])
	testutil.Eventually(t, 60*time.Second, "the rewritten file followed", func() error {
		return checkTargets(addr, want)
	})
}

func writeTargets(t *testing.T, path string, groups []TargetGroup) {
	t.Helper()
	b, err := Marshal(groups)
	if err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(path, b); err != nil {
		t.Fatal(err)
	}
}

// checkTargets compares the rota-exporter job's active targets, by node, with want: the same
// servers, each up and carrying every wanted label.
func checkTargets(addr string, want map[string]map[string]string) error {
	resp, err := http.Get("http://" + addr + "/api/v1/targets?state=active")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			ActiveTargets []struct {
				Labels map[string]string `json:"labels"`
				Health string            `json:"health"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return err
	}
	seen := 0
	for _, tg := range body.Data.ActiveTargets {
		if tg.Labels["job"] != "rota-exporter" {
			continue
		}
		seen++
		labels, ok := want[tg.Labels["node"]]
		if !ok {
			return fmt.Errorf("unexpected target %v", tg.Labels)
		}
		for k, v := range labels {
			if tg.Labels[k] != v {
				return fmt.Errorf("node %s: label %s=%q, want %q", labels["node"], k, tg.Labels[k], v)
			}
		}
		if tg.Health != "up" {
			return fmt.Errorf("node %s: health %q", labels["node"], tg.Health)
		}
	}
	if seen != len(want) {
		return fmt.Errorf("%d rota-exporter targets, want %d", seen, len(want))
	}
	return nil
}
