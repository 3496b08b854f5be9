package main

import (
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/fleet"
)

// TestTelemetryLine: explain says what Prometheus had, or what is missing and that it never
// counts as idle, and names unknown telemetry of the server's source either way.
func TestTelemetryLine(t *testing.T) {
	at := time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)
	cases := []struct {
		name string
		view fleet.TelemetryView
		want string
	}{
		{"present", fleet.TelemetryView{Present: true, LastSample: at, CPUMax: 0.02, GPUMax: 0.01},
			"CPU max 2.0%, GPU max 1.0%, GPU mean 0.0%, 0 GPU processes (last sample 2026-11-20T09:30:00Z)"},
		{"never reported", fleet.TelemetryView{},
			"missing or stale (last sample never): never counts as idle"},
		{"declared gpus missing", fleet.TelemetryView{LastSample: at, Missing: "6 of the 8 GPUs its pool declares report readings"},
			"6 of the 8 GPUs its pool declares report readings (last sample 2026-11-20T09:30:00Z): never counts as idle"},
		{"blocking unknown telemetry", fleet.TelemetryView{LastSample: at, Missing: "unknown telemetry: no X series", UnknownTelemetry: "no X series"},
			"unknown telemetry: no X series (last sample 2026-11-20T09:30:00Z): never counts as idle"},
		{"unknown telemetry beside whole data", fleet.TelemetryView{Present: true, LastSample: at, UnknownTelemetry: "no DCGM_FI_PROF_SM_ACTIVE series names a server in label Hostname (gpu sm activity)"},
			"CPU max 0.0%, GPU max 0.0%, GPU mean 0.0%, 0 GPU processes (last sample 2026-11-20T09:30:00Z); unknown telemetry: no DCGM_FI_PROF_SM_ACTIVE series names a server in label Hostname (gpu sm activity)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := telemetryLine(tc.view); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
