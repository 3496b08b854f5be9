package loop

import (
	"slices"
	"testing"
	"time"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/plan"
)

// With the real planner: an idle fleet is drained and powered off down to its floors, a busy
// server stays on, and queued GPU work wakes a GPU server, which is resumed once it responds.
// No step ever powers off a server with a job.
func TestIdleFleetScalesDownThenWakesForWork(t *testing.T) {
	f := newFx(t, func(c *config.Config) { c.Pools[0].Min = 1 }, plan.Plan)
	f.world.Set("cpu02", func(s *executortest.Server) { s.Jobs = 1 })
	f.tele.views["cpu02"] = fleet.TelemetryView{Present: true, CPUMax: 0.9}
	for range 90 {
		f.pass()
		f.clock.Advance(time.Minute)
	}
	want := map[string]fleet.State{"cpu01": fleet.StateOff, "cpu02": fleet.StateOn, "gpu01": fleet.StateOff, "gpu02": fleet.StateOff}
	for n, s := range want {
		if got := f.state(n); got != s {
			t.Errorf("after an idle hour and a half %s is %s, want %s", n, got, s)
		}
	}

	f.world.SetDemand([]fleet.Demand{{Class: "heavy", Shape: config.Shape{CPUs: 64, GPUs: 8}, Nodes: 1, Count: 12, Since: f.clock.Now()}})
	for range 10 {
		f.pass()
		f.clock.Advance(time.Minute)
	}
	var woken []string
	for _, n := range []string{"gpu01", "gpu02"} {
		if f.state(n) == fleet.StateOn && f.world.Get(n).Power == bmc.StateOn && !f.world.Get(n).Drained {
			woken = append(woken, n)
		}
	}
	if len(woken) == 0 {
		t.Errorf("no GPU server woken for 12 queued heavy jobs; commands %v", f.world.Commands())
	}
	if slices.Contains(f.world.Commands(), executortest.Command{Node: "cpu02", Op: "off"}) || len(f.world.Unsafe()) > 0 {
		t.Errorf("unsafe: %v", f.world.Unsafe())
	}
}
