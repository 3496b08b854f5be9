package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/promfacts"
)

// TestStartReportsUnknownTelemetry: at start, a mapping that names a series Prometheus does not
// have is logged as unknown telemetry, one warning per series, naming the source and series;
// a Prometheus that cannot answer is logged too.
func TestStartReportsUnknownTelemetry(t *testing.T) {
	// Prometheus has every series but SM activity.
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		result := `[{"metric":{},"value":[0,"1"]}]`
		if strings.Contains(r.Form.Get("query"), "DCGM_FI_PROF_SM_ACTIVE") {
			result = "[]"
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":%s}}`, result)
	}))
	t.Cleanup(prom.Close)
	cfg, err := config.Parse([]byte(`
server: {webhook_auth_disabled: true}
telemetry_sources: [{name: fleet}]
pools:
  - name: dgx
    telemetry_source: fleet
    profile: {cpu_cores: 8, gpus: 8}
    cost: {hourly: 20}
    nodes: [{name: dgx1, bmc: {protocol: ipmi, host: 127.0.0.2, username: admin, password_env: PW}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, url string
		want      []string
	}{
		{"an absent series", prom.URL, []string{"unknown telemetry in source fleet: no DCGM_FI_PROF_SM_ACTIVE series names a server in label Hostname (gpu sm activity); reported only"}},
		{"prometheus down", "http://127.0.0.1:1", []string{"could not check the telemetry sources' series at start"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg.Prometheus.URL = tc.url
			logger, hook := test.NewNullLogger()
			facts, err := promfacts.New(cfg, logrus.NewEntry(logger))
			if err != nil {
				t.Fatal(err)
			}
			telemetryCheck(facts, clock.Real{}, logrus.NewEntry(logger))(context.Background())
			var got []string
			for _, e := range hook.AllEntries() {
				if e.Level == logrus.WarnLevel {
					got = append(got, e.Message)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("warnings %q, want %q", got, tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("warning %q, want %q", got[i], tc.want[i])
				}
			}
		})
	}
}
