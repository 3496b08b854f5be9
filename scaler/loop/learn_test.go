package loop

import (
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
)

// The loop learns each pass what the planner reads in the snapshot: the need of each pool,
// boot times, when each server was last busy; it keeps the statistics in the store, and a new
// rota on the same file carries on from them.
func TestLoopLearnsAndKeeps(t *testing.T) {
	var seen fleet.Snapshot
	f := newFx(t, func(c *config.Config) { c.Policy.Forecast.MinHistory = 0 }, nil)
	f.planner = func(s fleet.Snapshot, _ *config.Config, _ time.Time) fleet.Decision {
		seen = s
		return fleet.Decision{}
	}
	f.restart(nil)
	// gpu01 has work for the first hour, then none; a power-on of gpu02 takes 4 minutes.
	f.world.Set("gpu01", func(s *executortest.Server) { s.Jobs = 1 })
	for m := range 4 * 60 {
		if m == 60 {
			f.world.Set("gpu01", func(s *executortest.Server) { s.Jobs = 0 })
		}
		f.pass()
		f.clock.Advance(time.Minute)
	}
	v := seen.Learned["gpu"]
	if v.Origins == 0 || v.Need != 0 {
		t.Fatalf("gpu view %+v: want origins counted and the need now 0", v)
	}
	var idle time.Time
	for _, n := range seen.Nodes {
		if n.Name == "gpu01" {
			idle = n.IdleSince
		}
	}
	if want := t0.Add(59 * time.Minute); !idle.Equal(want) {
		t.Errorf("gpu01 idle since %s, want %s (the last pass it had work)", idle, want)
	}
	// Saved at most five minutes ago; a new rota reads the same statistics back.
	origins := v.Origins
	f.restart(nil)
	f.pass()
	if got := seen.Learned["gpu"].Origins; got < origins-5 || got == 0 {
		t.Errorf("after a restart %d origins, want about %d", got, origins)
	}
}

// Boot and shutdown times are learned from the intent's start to the node's LastOn or LastOff.
func TestLoopLearnsBootTimes(t *testing.T) {
	var seen fleet.Snapshot
	f := newFx(t, nil, nil)
	f.planner = func(s fleet.Snapshot, _ *config.Config, _ time.Time) fleet.Decision {
		seen = s
		return fleet.Decision{Actions: f.propose}
	}
	f.restart(nil)
	f.world.Set("gpu02", func(s *executortest.Server) { s.Power = "off"; s.Responding = false })
	f.pass() // repair records gpu02 Off
	f.propose = []fleet.Action{act(fleet.PowerOn, "gpu02", "gpu", fleet.ReasonBacklog)}
	f.pass()
	f.propose = nil
	for range 10 {
		f.clock.Advance(time.Minute)
		f.pass()
	}
	if f.state("gpu02") != fleet.StateOn {
		t.Fatalf("gpu02 is %s, want on", f.state("gpu02"))
	}
	f.pass()
	if b := seen.Learned["gpu"].Boot; b <= 0 || b > 10*time.Minute {
		t.Errorf("boot time learned %s, want the power-on to ready time", b)
	}
}
