package executor

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

// A pass reads the BMCs while rota's own actions run in the background: one that lands after
// a server's BMC was read leaves the record newer than the reading. Repair judged the record
// by it: a power-on confirmed just after its BMC was read off was failed as "switched off
// while booting" (seen on a real cluster when one wake powered on two servers), a power-off
// confirmed just after its BMC was read on was taken for a power-on outside rota. Such a
// node waits for the next pass, whose fresh reading still catches a real switch-off by hand
// while it boots, or a power change outside rota.
func TestRepairJudgesNoReadingOlderThanTheRecord(t *testing.T) {
	cases := []struct {
		name  string
		setup func(f *fx)
		kind  fleet.Kind
		// landed is the state the action leaves, and the stale repair must keep.
		landed fleet.State
		// then is what a person does afterwards, caught by the next pass: the state it leads
		// to, its failures, and a change outside rota counted.
		then     func(s *executortest.Server)
		want     fleet.State
		failures int
		outside  fleet.State
	}{
		{name: "power-on confirmed after the BMC was read off", kind: fleet.PowerOn, landed: fleet.StateBooting,
			setup: func(f *fx) { f.off("cpu01") },
			then:  func(s *executortest.Server) { s.Power = bmc.StateOff }, want: fleet.StateFailed, failures: 1},
		{name: "power-off confirmed after the BMC was read on", kind: fleet.PowerOff, landed: fleet.StateOff,
			setup: func(f *fx) { f.draining("cpu01") },
			then:  func(s *executortest.Server) { s.Power = bmc.StateOn }, want: fleet.StateOn, outside: fleet.StateOn},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t, false, nil)
			c.setup(f)
			stale := f.observe() // the pass reads the BMC before the command lands
			f.clock.Advance(time.Second)
			if err := f.ex.run(context.Background(), act(c.kind, "cpu01")); err != nil {
				t.Fatal(err)
			}
			if err := f.ex.Repair(context.Background(), stale); err != nil {
				t.Fatal(err)
			}
			if n := f.node("cpu01"); n.State != c.landed || n.Failures != 0 {
				t.Fatalf("repaired by a reading older than the record: %+v, want %s with no failure", n, c.landed)
			}
			f.checkOutside("cpu01", "")
			f.repair() // a fresh reading agrees: nothing to do
			if n := f.node("cpu01"); n.State != c.landed || n.Failures != 0 {
				t.Fatalf("repaired by a fresh reading: %+v, want %s", n, c.landed)
			}
			f.world.Set("cpu01", c.then)
			f.clock.Advance(time.Minute)
			f.repair()
			if n := f.node("cpu01"); n.State != c.want || n.Failures != c.failures {
				t.Errorf("after a change by hand: %+v, want %s with %d failures", n, c.want, c.failures)
			}
			f.checkOutside("cpu01", c.outside)
		})
	}
}

// Repair read every record, then claimed each node in turn (waiting for room under
// max_concurrent): an action that ended meanwhile left repair working from the record it
// wrote over, and a power-off found still PoweringOff by a reading taken before it landed
// was sent and recorded again, its cycle counted twice. Each node is claimed before the
// records are read.
func TestRepairReadsTheRecordsAfterClaimingTheNodes(t *testing.T) {
	f := newFx(t, true, func(cfg *config.Config) { cfg.Policy.Disruption.MaxConcurrent = 1 })
	f.put("cpu01", store.Node{State: fleet.StateBooting, Since: t0,
		Intent: &store.Intent{Kind: fleet.PowerOn, Reason: fleet.ReasonBacklog, Started: t0, Attempt: 1}})
	f.draining("gpu01")
	checking, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f.ex.o.Fault = func(node string, kind fleet.Kind, s Step) error {
		if node == "gpu01" && s == StepChecked {
			once.Do(func() { close(checking); <-proceed })
		}
		return nil
	}
	// cpu01's repair holds the only room until gpu01's power-off has ended.
	readying, ready := make(chan struct{}), make(chan struct{})
	f.ex.o.Ready = func(_ context.Context, node string) (bool, error) {
		if node == "cpu01" {
			close(readying)
			<-ready
		}
		return true, nil
	}
	f.ex.Start(context.Background(), []fleet.Action{act(fleet.PowerOff, "gpu01")})
	<-checking
	stale := f.observe() // gpu01 still on
	f.clock.Advance(time.Second)
	repaired := make(chan error)
	go func() { repaired <- f.ex.Repair(context.Background(), stale) }()
	<-readying
	close(proceed)
	f.ex.Wait() // gpu01 is off and recorded so
	close(ready)
	if err := <-repaired; err != nil {
		t.Fatal(err)
	}
	n := f.node("gpu01")
	g, err := f.st.Global()
	if err != nil {
		t.Fatal(err)
	}
	if n.State != fleet.StateOff || n.CyclesToday(f.clock.Now()) != 1 || len(g.PowerOffs) != 1 {
		t.Errorf("gpu01 %+v, fleet power-offs %v: want off, one cycle counted", n, g.PowerOffs)
	}
	if got := f.node("cpu01").State; got != fleet.StateOn {
		t.Errorf("cpu01 %s, want on", got)
	}
}
