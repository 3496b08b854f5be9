package alerts

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/config"
)

// TestPrometheusConfig checks deploy/prometheus as installed: the folder with the committed
// rules in rules/, checked by promtool (config, rule files and file_sd targets).
func TestPrometheusConfig(t *testing.T) {
	promtool := testutil.Tool(t, "promtool")
	src := filepath.Join(testutil.RepoRoot(t), "deploy", "prometheus")
	dst := t.TempDir()
	copyFile(t, filepath.Join(src, "prometheus.yml"), filepath.Join(dst, "prometheus.yml"))
	copyFile(t, filepath.Join(src, "targets", "rota.json"), filepath.Join(dst, "targets", "rota.json"))
	copyFile(t, committed, filepath.Join(dst, "rules", "rota-rules.yml"))
	b, err := os.ReadFile(filepath.Join(dst, "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("job_name: %s\n    static_configs:\n      - targets: [%q]", ScalerJob, config.DefaultListenAddress); !strings.Contains(string(b), want) {
		t.Errorf("prometheus.yml does not scrape rota as job %q at its default address; want:\n%s", ScalerJob, want)
	}
	out, err := exec.Command(promtool, "check", "config", filepath.Join(dst, "prometheus.yml")).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
	checkPrometheusLoads(t, dst)
}

// checkPrometheusLoads starts a real Prometheus on the installed folder and checks that it
// loaded rota's rule groups and discovered the example targets with the labels the rules use.
func checkPrometheusLoads(t *testing.T, dir string) {
	t.Helper()
	bin := testutil.Tool(t, "prometheus")
	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	testutil.Start(t, bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--web.listen-address="+addr,
		"--storage.tsdb.path="+filepath.Join(t.TempDir(), "data"))
	url := "http://" + addr
	testutil.WaitHTTP(t, url+"/-/ready", 60*time.Second)
	var rules struct {
		Data struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []any  `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	getJSON(t, url+"/api/v1/rules", &rules)
	got, want := map[string]int{}, map[string]int{}
	for _, g := range rules.Data.Groups {
		got[g.Name] = len(g.Rules)
	}
	for _, g := range Rules(config.Default()).Groups {
		want[g.Name] = len(g.Rules)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Prometheus loaded rule groups %v, want %v", got, want)
	}
	testutil.Eventually(t, 30*time.Second, "example targets discovered", func() error {
		var targets struct {
			Data struct {
				ActiveTargets []struct {
					Labels map[string]string `json:"labels"`
				} `json:"activeTargets"`
			} `json:"data"`
		}
		getJSON(t, url+"/api/v1/targets?state=active", &targets)
		seen := map[string]bool{}
		for _, tg := range targets.Data.ActiveTargets {
			l := tg.Labels
			seen[l["job"]+"/"+l["node"]+"/"+l["pool"]] = true
		}
		for _, w := range []string{"rota-exporter/cpu01/cpu-epyc", "rota-exporter/gpu02/gpu-h100", ScalerJob + "//"} {
			if !seen[w] {
				return fmt.Errorf("no target %s among %v", w, seen)
			}
		}
		return nil
	})
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
