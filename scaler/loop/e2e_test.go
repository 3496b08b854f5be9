package loop

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/common/model"

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

// A server whose power-off keeps failing comes back On after each failure, but is drained
// again only once its retry time has passed, and that time doubles with each failure (10m,
// 20m, 40m, then 1h): the failure count survives its coming back, so it never cycles drain ->
// fail -> resume at the pace of the cooldowns.
func TestFailingPowerOffBacksOff(t *testing.T) {
	f := newFx(t, func(c *config.Config) {
		c.Pools[0].Min = 2 // the CPU servers stay on
		c.Policy.Node.MinOn = model.Duration(time.Minute)
		// A cycle costs its boot (10m) and shutdown and no wear: the break-even time stays
		// under the 10m backoff, which the test is about.
		c.Policy.BreakEven.WearTime = 0
	}, plan.Plan)
	f.world.Set("gpu01", func(s *executortest.Server) { s.OffFails = true })
	f.world.Set("gpu02", func(s *executortest.Server) { s.Jobs = 1 })
	f.tele.views["gpu02"] = fleet.TelemetryView{Present: true, CPUMax: 0.9}

	drains := func() int {
		return len(slices.DeleteFunc(f.world.Commands(), func(c executortest.Command) bool {
			return c.Node != "gpu01" || c.Op != "drain"
		}))
	}
	var drainedAt []time.Time
	for range 4 * 60 {
		before, err := f.st.Node("gpu01")
		if err != nil {
			t.Fatal(err)
		}
		n := drains()
		f.pass()
		if drains() > n {
			if before.RetryAfter.After(f.clock.Now()) {
				t.Fatalf("gpu01 drained at %s, before its retry time %s", f.clock.Now(), before.RetryAfter)
			}
			drainedAt = append(drainedAt, f.clock.Now())
		}
		f.clock.Advance(time.Minute)
	}
	var gaps []time.Duration
	for i := 1; i < len(drainedAt); i++ {
		gaps = append(gaps, drainedAt[i].Sub(drainedAt[i-1]).Round(10*time.Minute))
	}
	// Each gap is the backoff plus the few passes a drain, its failed power-off and the
	// node's return take.
	want := []time.Duration{10 * time.Minute, 20 * time.Minute, 40 * time.Minute, time.Hour, time.Hour}
	if !slices.Equal(gaps, want) {
		t.Errorf("gaps between drains %v (drains at %v), want %v", gaps, drainedAt, want)
	}
	n, err := f.st.Node("gpu01")
	if err != nil {
		t.Fatal(err)
	}
	if n.Failures != len(drainedAt) || n.FailedKind != fleet.PowerOff {
		t.Errorf("gpu01 has %d %s failures after %d failed power-offs", n.Failures, n.FailedKind, len(drainedAt))
	}
}

// A boot that repair finds ready (and resumes) is capacity in the very pass it happens: the
// job manager's view, read before repair, still shows rota's drain on it, and the planner must
// not wake a second server for the work the first is about to take (broughtOn).
func TestBootReadyIsCapacityInItsPass(t *testing.T) {
	f := newFx(t, nil, plan.Plan)
	for _, n := range executortest.NodeNames(f.cfg) {
		f.world.Set(n, func(s *executortest.Server) {
			s.Power, s.Responding, s.Drained, s.DrainedByRota = bmc.StateOff, false, true, true
		})
	}
	f.world.SetDemand([]fleet.Demand{{Class: "medium", Shape: config.Shape{CPUs: 4, GPUs: 1}, Nodes: 1, Count: 2, Since: f.clock.Now()}})
	for range 30 {
		f.pass()
		f.clock.Advance(time.Minute)
	}
	var on []string
	for _, c := range f.world.Commands() {
		if c.Op == "on" {
			on = append(on, c.Node)
		}
	}
	if len(on) != 1 || f.state(on[0]) != fleet.StateOn || f.world.Get(on[0]).Drained {
		t.Errorf("powered on %v for two 1-GPU jobs, want one GPU server, resumed (commands %v)", on, f.world.Commands())
	}
}
