package promfacts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/config"
)

// TestNumber reads single numbers (a region's carbon intensity) from a real Prometheus that
// scrapes an exporter of carbon intensities: one series is its value, a scalar too; no
// series, two series or NaN are errors, never zero.
func TestNumber(t *testing.T) {
	exp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "# TYPE carbon_intensity_gco2_per_kwh gauge\n"+
			"carbon_intensity_gco2_per_kwh{zone=\"DE\"} 381\ncarbon_intensity_gco2_per_kwh{zone=\"FR\"} 56\n"+
			"# TYPE broken gauge\nbroken NaN\n")
	}))
	t.Cleanup(exp.Close)
	url := startPrometheusWith(t, fmt.Sprintf("  - job_name: carbon\n    static_configs: [{targets: [%q]}]\n", exp.Listener.Addr().String()), []byte("groups: []\n"))
	r := newReader(t, testConfig(url))
	ctx := context.Background()
	testutil.Eventually(t, 30*time.Second, "the first scrape", func() error {
		_, err := r.Number(ctx, `carbon_intensity_gco2_per_kwh{zone="DE"}`, time.Now())
		return err
	})
	now := time.Now()
	for _, tc := range []struct {
		query string
		want  float64
		err   bool
	}{
		{query: `carbon_intensity_gco2_per_kwh{zone="DE"}`, want: 381},
		{query: `scalar(carbon_intensity_gco2_per_kwh{zone="FR"})`, want: 56},
		{query: `carbon_intensity_gco2_per_kwh`, err: true},
		{query: `carbon_intensity_gco2_per_kwh{zone="PL"}`, err: true},
		{query: `scalar(carbon_intensity_gco2_per_kwh)`, err: true}, // NaN: two series
		{query: `broken`, err: true},
		{query: `sum(`, err: true},
	} {
		got, err := r.Number(ctx, tc.query, now)
		switch {
		case tc.err && err == nil:
			t.Errorf("%s = %v, want an error", tc.query, got)
		case !tc.err && (err != nil || got != tc.want):
			t.Errorf("%s = %v, %v; want %v", tc.query, got, err, tc.want)
		case tc.err && tc.query != "sum(" && !errors.Is(err, ErrNotOneNumber):
			t.Errorf("%s: %v, want ErrNotOneNumber", tc.query, err)
		}
	}
}

// TestNumberOfNoData: a success without data (a proxy or store speaking the API badly) is no
// number; it panicked.
func TestNumberOfNoData(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"success"}`)
	}))
	t.Cleanup(srv.Close)
	if got, err := newReader(t, testConfig(srv.URL)).Number(context.Background(), "x", time.Now()); !errors.Is(err, ErrNotOneNumber) {
		t.Errorf("Number = %v, %v; want ErrNotOneNumber", got, err)
	}
}

// TestGPUPower reads each server's GPU draw from a real Prometheus scraping rota-exporters:
// the sum over its GPUs when every GPU its pool declares has a reading, nothing when one lacks
// it (a sum short of a GPU would under-count), and nothing for a reading no GPU draws (+Inf,
// which the books would sum for ever).
func TestGPUPower(t *testing.T) {
	exp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "# TYPE rota_gpu_power_watts gauge\n")
		switch r.URL.Path {
		case "/g1":
			fmt.Fprint(w, "rota_gpu_power_watts{gpu=\"0\",uuid=\"GPU-0\"} 300\nrota_gpu_power_watts{gpu=\"1\",uuid=\"GPU-1\"} 350.5\n")
		case "/g2":
			fmt.Fprint(w, "rota_gpu_power_watts{gpu=\"0\",uuid=\"GPU-0\"} 300\n")
		case "/g3":
			fmt.Fprint(w, "rota_gpu_power_watts{gpu=\"0\",uuid=\"GPU-0\"} +Inf\nrota_gpu_power_watts{gpu=\"1\",uuid=\"GPU-1\"} 300\n")
		}
	}))
	t.Cleanup(exp.Close)
	host := exp.Listener.Addr().String()
	var sc strings.Builder
	sc.WriteString("  - job_name: rota-exporter\n    static_configs:\n")
	for _, n := range []string{"g1", "g2", "g3"} {
		fmt.Fprintf(&sc, "      - targets: [%q]\n        labels: {node: %q, pool: gpu, __metrics_path__: /%s}\n", host, n, n)
	}
	url := startPrometheusWith(t, sc.String(), []byte("groups: []\n"))
	c, err := config.ParseFor([]byte(`pools:
  - name: gpu
    profile: {cpu_cores: 8, gpus: 2}
    cost: {hourly: 1}
    nodes: [{name: g1}, {name: g2}, {name: g3}]
`), config.Replay)
	if err != nil {
		t.Fatal(err)
	}
	c.Prometheus.URL = url
	r := newReader(t, c)
	testutil.Eventually(t, 30*time.Second, "g1's GPU power", func() error {
		got, err := r.GPUPower(context.Background(), time.Now())
		if err != nil {
			return err
		}
		if len(got) != 1 || got["g1"] != 650.5 {
			return fmt.Errorf("GPU power %v, want g1 650.5 W alone", got)
		}
		return nil
	})
}
