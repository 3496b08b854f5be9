package bmc

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotahq/rota/bmc/redfishemu"
)

// TestRedfishGracefulOffIsQuiet: a graceful off that succeeds logs no failure, no warning, and
// counts its request as a success, so an operator has nothing to chase (bmclib's Redfish
// provider, which rota used to send it through, reported every accepted one as failed).
func TestRedfishGracefulOffIsQuiet(t *testing.T) {
	emu, ca := startEmulator(t, emuServer("n", "On", redfishemu.Faults{}))
	log, buf := testLogger()
	reg := prometheus.NewRegistry()
	c, err := NewController(map[string]Endpoint{"n": redfishEndpoint(t, emu, "n", ca)}, redfishOptions(Options{Logger: log, Registerer: reg}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Off(ctx, "n", true); err != nil {
		t.Fatalf("graceful off: %v", err)
	}
	srv := emu.Server("n")
	if got := srv.Power(); got != "Off" {
		t.Fatalf("emulator power %s, want Off", got)
	}
	wantResets(t, srv.Stats(), "GracefulShutdown")
	logs := buf.String()
	for _, noise := range []string{"failed", "level=warning", "level=error"} {
		if strings.Contains(logs, noise) {
			t.Errorf("a graceful off that succeeded logged %q:\n%s", noise, logs)
		}
	}
	if n := metricValue(t, reg, "rota_bmc_requests_total", map[string]string{"operation": actionSoft, "result": "success"}); n != 1 {
		t.Errorf("successful graceful shutdown requests counted %v, want 1", n)
	}
}
