package bmc

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/rotahq/rota/bmc/redfishemu"
)

// TestNoPasswordInLogsOrErrors captures everything a failing operation logs (bmclib's output
// included, at trace level), its error and the metrics, and finds no password in them: neither
// the wrong one that was sent nor the BMC's real one.
func TestNoPasswordInLogsOrErrors(t *testing.T) {
	const wrong = "Wr0ng-But-Still-Secret-42"
	emu, ca := startEmulator(t, emuServer("n", "Off", redfishemu.Faults{}))
	cases := []struct {
		name string
		ep   func(t *testing.T) Endpoint
	}{
		{"redfish session login", func(t *testing.T) Endpoint {
			ep := redfishEndpoint(t, emu, "n", ca)
			ep.PasswordFile = writeSecret(t, wrong)
			return ep
		}},
		{"redfish basic auth", func(t *testing.T) Endpoint {
			ep := redfishEndpoint(t, emu, "n", ca)
			ep.PasswordFile, ep.BasicAuth = writeSecret(t, wrong), true
			return ep
		}},
		{"ipmi", func(t *testing.T) Endpoint {
			needIPMI(t)
			sim := startIPMISim(t, false, simHealthy)
			return ipmiEndpoint(t, sim.port, wrong)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ep := tc.ep(t)
			log, buf := testLogger()
			reg := prometheus.NewRegistry()
			c, err := NewController(map[string]Endpoint{"n": ep}, redfishOptions(Options{Logger: log, Registerer: reg}))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err = c.On(ctx, "n")
			if err == nil {
				t.Fatal("On with a wrong password succeeded")
			}
			var metrics bytes.Buffer
			mfs, _ := reg.Gather()
			for _, mf := range mfs {
				_, _ = expfmt.MetricFamilyToText(&metrics, mf)
			}
			for _, secret := range []string{wrong, emuPassword, "secret"} {
				assertNoSecret(t, secret, buf.String()+metrics.String(), err)
			}
			if !strings.Contains(buf.String(), "level=") {
				t.Fatalf("captured no log output: the test proves nothing")
			}
		})
	}
}
