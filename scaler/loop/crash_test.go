package loop

import (
	"errors"
	"testing"
	"time"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/plan"
)

// rota dies during each step of scaling an idle server down (one power-off that drains it on
// the way); the next rota, on the same file, finishes the job from its first pass: the server
// ends Off, and nothing is left drained while on.
func TestLoopFinishesWhatACrashLeft(t *testing.T) {
	crashAt := func(kind fleet.Kind, step executor.Step) func(string, fleet.Kind, executor.Step) error {
		return func(node string, k fleet.Kind, s executor.Step) error {
			if node == "gpu01" && k == kind && s == step {
				return errors.New("crash")
			}
			return nil
		}
	}
	points := []struct {
		kind fleet.Kind
		step executor.Step
	}{
		{fleet.PowerOff, executor.StepIntent}, {fleet.PowerOff, executor.StepDrained}, {fleet.PowerOff, executor.StepChecked},
		{fleet.PowerOff, executor.StepSent}, {fleet.PowerOff, executor.StepCommitted},
	}
	for _, p := range points {
		t.Run(string(p.kind)+"/"+string(p.step), func(t *testing.T) {
			f := newFx(t, func(c *config.Config) { c.Pools[0].Min = 2 }, plan.Plan)
			f.restart(crashAt(p.kind, p.step))
			crashed := false
			for i := 0; i < 90 && !crashed; i++ {
				f.pass()
				f.clock.Advance(time.Minute)
				for _, a := range f.loop.lastPass().dec.Actions {
					crashed = crashed || (a.Node == "gpu01" && a.Kind == p.kind)
				}
			}
			if !crashed {
				t.Fatalf("the planner never asked to %s gpu01", p.kind)
			}
			f.restart(nil)
			for range 40 {
				f.pass()
				f.clock.Advance(time.Minute)
			}
			if got := f.state("gpu01"); got != fleet.StateOff {
				t.Errorf("gpu01 is %s, want off", got)
			}
			if s := f.world.Get("gpu01"); s.Power != bmc.StateOff {
				t.Errorf("gpu01's BMC says %s, want off", s.Power)
			}
			for _, n := range []string{"cpu01", "cpu02"} {
				if s := f.world.Get(n); s.Drained || s.Power != bmc.StateOn {
					t.Errorf("%s is %+v, want on and in service (pool floor)", n, s)
				}
			}
		})
	}
}
