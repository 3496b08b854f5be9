package bmc

import (
	"context"
	"strings"
	"testing"
	"time"

	bmclibbmc "github.com/bmc-toolbox/bmclib/v2/bmc"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotahq/rota/bmc/redfishemu"
)

// TestRedfishGracefulOffIsQuiet: bmclib's Redfish provider reports every GracefulShutdown the
// BMC accepted as failed ("failed to set power state"). A graceful off that then succeeds logs
// no failure, no warning, and counts its request as a success, so an operator has nothing to
// chase.
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

// TestAcceptedGraceful: only a Redfish graceful shutdown that the gofish provider sent without
// an error is taken for accepted; any failure it reported, another protocol or another action
// stays an error.
func TestAcceptedGraceful(t *testing.T) {
	sent := bmclibbmc.Metadata{ProvidersAttempted: []string{"gofish"}, FailedProviderDetail: map[string]string{}}
	failed := bmclibbmc.Metadata{ProvidersAttempted: []string{"gofish"}, FailedProviderDetail: map[string]string{"gofish": "400 Bad Request"}}
	tests := []struct {
		name   string
		action string
		proto  Protocol
		md     bmclibbmc.Metadata
		want   bool
	}{
		{"redfish graceful shutdown sent", actionSoft, ProtocolRedfish, sent, true},
		{"redfish graceful shutdown refused", actionSoft, ProtocolRedfish, failed, false},
		{"no provider tried (cancelled first)", actionSoft, ProtocolRedfish, bmclibbmc.Metadata{}, false},
		{"another provider tried", actionSoft, ProtocolRedfish, bmclibbmc.Metadata{ProvidersAttempted: []string{"dell"}}, false},
		{"hard off", actionOff, ProtocolRedfish, sent, false},
		{"ipmi soft", actionSoft, ProtocolIPMI, bmclibbmc.Metadata{ProvidersAttempted: []string{"ipmitool"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := acceptedGraceful(tt.action, tt.proto, tt.md); got != tt.want {
				t.Errorf("acceptedGraceful = %v, want %v", got, tt.want)
			}
		})
	}
}
