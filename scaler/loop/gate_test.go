package loop

import (
	"testing"
	"time"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// The gate holds a power-off by the planner's own rule (fleet.PowerOffBlock), so a planner
// that got it wrong cannot power off a server with work on it, one the job manager lost, or
// one a person took over.
func TestGateHoldsPowerOffByTheSharedRule(t *testing.T) {
	empty := fleet.JobsView{Known: true, Drained: true, DrainedByRota: true, Responding: true}
	busy := empty
	busy.Jobs, busy.CPUs = 1, 1
	cases := []struct {
		name         string
		jobs         fleet.JobsView
		noJobManager bool
		want         fleet.Reason // "" kept
	}{
		{"drained and empty", empty, false, ""},
		{"a job landed", busy, false, fleet.SkipAllocated},
		{"not listed", fleet.JobsView{}, false, fleet.SkipJobsUnknown},
		{"a person took the drain over", fleet.JobsView{Known: true, Drained: true, Responding: true}, false, fleet.SkipDrainedByPerson},
		{"no job manager", fleet.JobsView{}, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := fleet.Snapshot{Telemetry: true, JobsKnown: true, NoJobManager: tc.noJobManager, Nodes: []fleet.Node{
				{Name: "c1", Pool: "cpu", State: fleet.StateDraining, Power: bmc.StateOn, Jobs: tc.jobs},
			}}
			dec := gate(snap, fleet.Decision{Actions: []fleet.Action{{Kind: fleet.PowerOff, Node: "c1", Pool: "cpu"}}}, nil)
			switch {
			case tc.want == "" && len(dec.Actions) != 1:
				t.Fatalf("power-off held: %+v", dec.Skips)
			case tc.want != "" && (len(dec.Actions) != 0 || len(dec.Skips) != 1 || dec.Skips[0].Reason != tc.want):
				t.Fatalf("decision %+v, want the power-off held for %s", dec, tc.want)
			}
		})
	}
}

// Whether a job manager says what runs where is a fact of the snapshot, taken from jobs.adapter
// by the loop: the planner and the gate read it there, never the adapter's name.
func TestSnapshotSaysWhetherAJobManagerReports(t *testing.T) {
	for adapter, want := range map[string]bool{"none": true, "slurm": false, "exec": false} {
		t.Run(adapter, func(t *testing.T) {
			got, planned := false, false
			f := newFx(t, func(c *config.Config) { c.Jobs.Adapter = adapter }, func(s fleet.Snapshot, _ *config.Config, _ time.Time) fleet.Decision {
				got, planned = s.NoJobManager, true
				return fleet.Decision{}
			})
			f.pass()
			if !planned || got != want {
				t.Errorf("snapshot NoJobManager = %v (planned: %v), want %v", got, planned, want)
			}
		})
	}
}
