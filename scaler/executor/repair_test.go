package executor

import (
	"context"
	"testing"
	"time"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

// Nodes with nothing in flight: repair takes resting states from the BMC and gives back what
// rota left drained.
func TestRepairSettles(t *testing.T) {
	cases := []struct {
		name        string
		setup       func(f *fx)
		passes      int
		want        fleet.State
		wantDrained bool // in the job manager, afterwards
	}{
		{name: "new node on is adopted", passes: 1, want: fleet.StateOn, setup: func(*fx) {}},
		{name: "new node off is adopted", passes: 1, want: fleet.StateOff, setup: func(f *fx) {
			f.world.Set("cpu01", func(s *executortest.Server) { s.Power = bmc.StateOff })
		}},
		{name: "new node with an unreadable BMC is unknown", passes: 1, want: fleet.StateUnknown, setup: func(f *fx) {
			f.world.Set("cpu01", func(s *executortest.Server) { s.PowerUnknown = true })
		}},
		{name: "failed drain is given back", passes: 1, want: fleet.StateOn, setup: func(f *fx) {
			f.put("cpu01", nodeOn())
			f.world.Set("cpu01", func(s *executortest.Server) { s.DrainFails = true })
			if err := f.ex.run(context.Background(), act(fleet.Drain, "cpu01")); err == nil {
				t.Fatal("refused drain succeeded")
			}
			f.world.Set("cpu01", func(s *executortest.Server) { s.DrainFails = false; s.Drained, s.DrainedByRota = true, true })
		}},
		{name: "off node powered on by a person is taken back and resumed", passes: 2, want: fleet.StateOn, setup: func(f *fx) {
			f.off("cpu01")
			f.world.Set("cpu01", func(s *executortest.Server) { s.Power = bmc.StateOn })
		}},
		{name: "on node powered off by a person is off", passes: 1, want: fleet.StateOff, setup: func(f *fx) {
			f.put("cpu01", nodeOn())
			f.world.Set("cpu01", func(s *executortest.Server) { s.Power = bmc.StateOff })
		}},
		{name: "draining within its timeout is left to the planner", passes: 1, want: fleet.StateDraining, wantDrained: true, setup: func(f *fx) {
			f.draining("cpu01")
		}},
		{name: "failed and off waits for its retry", passes: 1, want: fleet.StateFailed, wantDrained: true, setup: func(f *fx) {
			f.off("cpu01")
			f.put("cpu01", store.Node{State: fleet.StateFailed, Since: t0, Failures: 1, RetryAfter: t0.Add(time.Hour), DrainedByRota: true})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t, true, nil)
			c.setup(f)
			for range c.passes {
				f.repair()
			}
			if n := f.node("cpu01"); n.State != c.want || n.Intent != nil {
				t.Errorf("repaired to %+v, want %s", n, c.want)
			}
			if got := f.world.Get("cpu01").Drained; got != c.wantDrained {
				t.Errorf("drained in the job manager: %v, want %v", got, c.wantDrained)
			}
		})
	}
}

// A store lost or restored from an old backup forgets what rota drained; the job manager's
// marker still tells, and the node is given back.
func TestRepairTrustsRotasMarkerWhenTheStoreForgot(t *testing.T) {
	f := newFx(t, true, nil)
	f.world.Set("cpu01", func(s *executortest.Server) { s.Drained, s.DrainedByRota = true, true })
	f.world.Set("cpu02", func(s *executortest.Server) { s.Drained = true }) // a person's drain
	f.repair()                                                              // adopts both as On
	f.repair()                                                              // gives cpu01 back
	if f.world.Get("cpu01").Drained {
		t.Error("node drained by rota left drained")
	}
	if !f.world.Get("cpu02").Drained {
		t.Error("a person's drain was undone")
	}
}
