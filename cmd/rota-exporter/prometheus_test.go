package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/internal/testutil"
)

// cpuUtilisation is the PromQL docs/exporter.md documents for CPU use over a window.
const cpuUtilisation = `1 - sum(rate(rota_node_cpu_seconds_total{mode=~"idle|iowait"}[10s])) / sum(rate(rota_node_cpu_seconds_total[10s]))`

// TestPrometheusScrapesExporter: a real Prometheus scrapes the exporter every second and PromQL
// computes this machine's CPU utilisation from it, a ratio in [0, 1].
func TestPrometheusScrapesExporter(t *testing.T) {
	promBin := testutil.Tool(t, "prometheus")
	exporterAddr := startExporter(t)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: rota-exporter
    static_configs:
      - targets: ["%s"]
`, exporterAddr)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	promAddr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	testutil.Start(t, promBin, "--config.file="+cfgPath, "--web.listen-address="+promAddr,
		"--storage.tsdb.path="+filepath.Join(dir, "data"))
	testutil.WaitHTTP(t, "http://"+promAddr+"/-/ready", 60*time.Second)

	client, err := api.NewClient(api.Config{Address: "http://" + promAddr})
	if err != nil {
		t.Fatal(err)
	}
	prom := v1.NewAPI(client)
	var got float64
	testutil.Eventually(t, 90*time.Second, "CPU utilisation from PromQL", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, _, _, err := prom.Query(ctx, cpuUtilisation, time.Now())
		if err != nil {
			return err
		}
		vec, ok := res.(model.Vector)
		if !ok || len(vec) != 1 {
			return fmt.Errorf("result %v, want one sample", res)
		}
		got = float64(vec[0].Value)
		return nil
	})
	if got < 0 || got > 1 {
		t.Errorf("CPU utilisation %v, want a ratio in [0, 1]", got)
	}
	t.Logf("CPU utilisation over 10s, computed by Prometheus: %.3f", got)
}
