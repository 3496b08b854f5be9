package promfacts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/testutil"
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
