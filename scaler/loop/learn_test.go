package loop

import (
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/learn"
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

// idlePeriodsFx is a loop with policy.break_even.idle_periods on whose planner decides
// nothing and keeps in *seen the snapshot it was given last.
func idlePeriodsFx(t *testing.T) (f *fx, seen *fleet.Snapshot) {
	seen = &fleet.Snapshot{}
	f = newFx(t, func(c *config.Config) { c.Policy.BreakEven.IdlePeriods = true }, nil)
	f.planner = func(s fleet.Snapshot, _ *config.Config, _ time.Time) fleet.Decision {
		*seen = s
		return fleet.Decision{}
	}
	return f, seen
}

// With policy.break_even.idle_periods the loop follows each server's idle periods, as the
// replay does: gpu01, the first empty GPU server in placement order, gets a minute of work
// every five minutes (periods ended by work); gpu02, idle behind it, is
// powered off after two hours (one period of rank 2, cut).
func TestLoopLearnsIdlePeriods(t *testing.T) {
	f, seen := idlePeriodsFx(t)
	f.restart(nil)
	for m := range 3 * 60 {
		jobs := 0
		if m%5 == 4 {
			jobs = 1
		}
		f.world.Set("gpu01", func(s *executortest.Server) { s.Jobs = jobs })
		if m == 120 {
			f.world.Set("gpu02", func(s *executortest.Server) { s.Power = "off"; s.Responding = false })
		}
		f.pass()
		f.clock.Advance(time.Minute)
	}
	d := seen.Learned["gpu"].Idle
	if d == nil {
		t.Fatal("no idle periods learned")
	}
	count := func(c *[learn.IdleRanks][learn.IdleParts][learn.IdleBins]uint32, rank, bin int) (n uint32) {
		for h := range learn.IdleParts {
			n += c[rank][h][bin]
		}
		return n
	}
	// Rank 1 is bucket 0, rank 2 bucket 1; lengths in minutes are the bins. A period runs from
	// the last pass that saw work (IdleSince) to the first that sees work again: five minutes.
	if got := count(&d.Ended, 0, 5); got < 30 {
		t.Errorf("gpu01: %d periods of five minutes ended by work, want 30 or more", got)
	}
	if got := count(&d.Cut, 1, 120); got != 1 {
		t.Errorf("gpu02: %d periods of rank 2 cut after two hours, want 1 (cut at: %v)", got, d.Cut[1])
	}
	if seen.Learned["cpu"].Idle != nil && seen.Learned["cpu"].Idle.Seen != ([learn.IdleRanks][learn.IdleParts]uint32{}) {
		t.Error("cpu servers, never busy, closed an idle period")
	}
	// Saved at most five minutes ago; a new rota reads them back (on disk, bbolt) and goes on.
	stored, bad, err := f.st.LearnedIdle([]string{"gpu"})
	if err != nil || bad != nil || stored["gpu"] == nil {
		t.Fatalf("stored idle periods %v, %v, %v", stored, bad, err)
	}
	if got := count(&stored["gpu"].Ended, 0, 5); got+1 < count(&d.Ended, 0, 5) {
		t.Errorf("%d periods of five minutes stored, %d learned: want at most one not yet saved", got, count(&d.Ended, 0, 5))
	}
	f.restart(nil)
	f.pass()
	if got := seen.Learned["gpu"].Idle; got == nil || !slices.Equal(got.Counts(), stored["gpu"].Counts()) {
		t.Error("after a restart the idle periods differ from those stored")
	}
}

// A damaged record of idle periods is named, learned afresh in memory and never overwritten.
func TestLoopKeepsDamagedIdlePeriods(t *testing.T) {
	f, seen := idlePeriodsFx(t)
	if err := f.st.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(f.path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("learned_idle"))
		if err != nil {
			return err
		}
		return b.Put([]byte("gpu"), []byte(`{"v":1,"format":1,"counts":[[0,0,5,3,0],[0,0,4,1,0]]}`))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	f.build(nil)
	for m := range 30 {
		jobs := 0
		if m%5 == 4 {
			jobs = 1
		}
		f.world.Set("gpu01", func(s *executortest.Server) { s.Jobs = jobs })
		f.pass()
		f.clock.Advance(time.Minute)
	}
	if d := seen.Learned["gpu"].Idle; d == nil || d.Seen == ([learn.IdleRanks][learn.IdleParts]uint32{}) {
		t.Error("nothing learned in memory beside the damaged record")
	}
	if _, bad, err := f.st.LearnedIdle([]string{"gpu"}); err != nil || bad["gpu"] == nil || !strings.Contains(bad["gpu"].Error(), "out of order") {
		t.Errorf("the damaged record: %v, %v; want it still named out of order", bad, err)
	}
}
