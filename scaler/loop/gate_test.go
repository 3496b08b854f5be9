package loop

import (
	"testing"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/fleet"
)

// The gate holds a power-off by the planner's own rule (fleet.PowerOffBlock), so a planner
// that got it wrong cannot power off a server with work on it, or one the job manager lost.
func TestGateHoldsPowerOffByTheSharedRule(t *testing.T) {
	empty := fleet.JobsView{Known: true, Drained: true, DrainedByRota: true, Responding: true}
	busy := empty
	busy.Jobs, busy.CPUs = 1, 1
	cases := []struct {
		name    string
		jobs    fleet.JobsView
		reports bool
		want    fleet.Reason // "" kept
	}{
		{"drained and empty", empty, true, ""},
		{"a job landed", busy, true, fleet.SkipAllocated},
		{"not listed", fleet.JobsView{}, true, fleet.SkipJobsUnknown},
		{"no job manager", fleet.JobsView{}, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := fleet.Snapshot{Telemetry: true, JobsKnown: true, Nodes: []fleet.Node{
				{Name: "c1", Pool: "cpu", State: fleet.StateDraining, Power: bmc.StateOn, Jobs: tc.jobs},
			}}
			dec := gate(snap, fleet.Decision{Actions: []fleet.Action{{Kind: fleet.PowerOff, Node: "c1", Pool: "cpu"}}}, nil, tc.reports)
			switch {
			case tc.want == "" && len(dec.Actions) != 1:
				t.Fatalf("power-off held: %+v", dec.Skips)
			case tc.want != "" && (len(dec.Actions) != 0 || len(dec.Skips) != 1 || dec.Skips[0].Reason != tc.want):
				t.Fatalf("decision %+v, want the power-off held for %s", dec, tc.want)
			}
		})
	}
}
