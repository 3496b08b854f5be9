package executor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
)

var errCrash = errors.New("crash injected")

// crashAt returns a fault hook that crashes once, the first time node reaches step, and
// reports whether it did.
func crashAt(node string, step Step) (func(string, fleet.Kind, Step) error, func() bool) {
	var mu sync.Mutex
	fired := false
	hook := func(n string, _ fleet.Kind, s Step) error {
		mu.Lock()
		defer mu.Unlock()
		if n == node && s == step && !fired {
			fired = true
			return errCrash
		}
		return nil
	}
	return hook, func() bool { mu.Lock(); defer mu.Unlock(); return fired }
}

// Every action, crashed after each of its durable writes and side effects (optionally a second
// time, at the same step, while the next rota repairs it), with or without a job landing on the
// server meanwhile: the next rota's repair passes always reach a safe resting state, and
// nothing stays drained by rota.
func TestCrashAtEveryStepConverges(t *testing.T) {
	scenarios := []struct {
		name  string
		kind  fleet.Kind
		setup func(f *fx)
		steps []Step
	}{
		{"drain", fleet.Drain, func(f *fx) { f.put("cpu01", nodeOn()) },
			[]Step{StepIntent, StepSent, StepCommitted}},
		{"power off", fleet.PowerOff, func(f *fx) { f.draining("cpu01") },
			[]Step{StepIntent, StepChecked, StepSent, StepCommitted}},
		{"power off of an idle node in one step", fleet.PowerOff, func(f *fx) { f.put("cpu01", nodeOn()) },
			[]Step{StepIntent, StepDrained, StepChecked, StepSent, StepCommitted}},
		{"power off aborted by a job", fleet.PowerOff, func(f *fx) {
			f.draining("cpu01")
			f.world.Set("cpu01", func(s *executortest.Server) { s.Jobs = 2 })
		}, []Step{StepIntent, StepResumed, StepCommitted}},
		{"power on", fleet.PowerOn, func(f *fx) { f.off("cpu01") },
			[]Step{StepIntent, StepSent, StepCommitted, StepResumed, StepReady}},
		{"resume", fleet.Resume, func(f *fx) { f.draining("cpu01") },
			[]Step{StepIntent, StepSent, StepCommitted}},
		{"move", fleet.Move, func(f *fx) { f.busyWith("cpu01") },
			[]Step{StepIntent, StepSent, StepMoved, StepCommitted}},
	}
	for _, sc := range scenarios {
		for _, step := range sc.steps {
			for _, twice := range []bool{false, true} {
				for _, jobLands := range []bool{false, true} {
					name := fmt.Sprintf("%s/crash at %s/twice=%v/job lands=%v", sc.name, step, twice, jobLands)
					t.Run(name, func(t *testing.T) {
						f := newFx(t, true, nil)
						sc.setup(f)
						crashAndRepair(t, f, step, func() {
							if err := f.ex.run(context.Background(), act(sc.kind, "cpu01")); err != nil && !errors.Is(err, errCrash) && !errors.Is(err, ErrAborted) {
								t.Fatalf("action before the crash: %v", err)
							}
						})
						if jobLands && f.world.Get("cpu01").Power == bmc.StateOn {
							f.world.Set("cpu01", func(s *executortest.Server) { s.Jobs++ })
						}
						if twice {
							crashAndRepair(t, f, step, nil)
						}
						f.restart(nil)
						for range 5 {
							f.repair()
							f.clock.Advance(20 * time.Minute)
						}
						assertSafe(t, f, "cpu01")
					})
				}
			}
		}
	}
}

// crashAndRepair restarts rota with a crash armed at step, runs first (if any), then repair
// passes until the crash fires. A second crash may not be reachable (the first may have left
// nothing to do at that step); the first one always must be.
func crashAndRepair(t *testing.T, f *fx, step Step, first func()) {
	t.Helper()
	hook, fired := crashAt("cpu01", step)
	f.restart(hook)
	if first != nil {
		first()
	}
	for i := 0; i < 3 && !fired(); i++ {
		f.repair()
	}
	if first != nil && !fired() {
		t.Fatalf("the crash at %s never fired: the test would prove nothing", step)
	}
}

// assertSafe: no action left half done, the store agrees with the world, nothing is drained by
// rota while on, and no power-off ever hit a server with a job.
func assertSafe(t *testing.T, f *fx, node string) {
	t.Helper()
	n, s := f.node(node), f.world.Get(node)
	if n.Intent != nil {
		t.Errorf("intent %+v left after repair", n.Intent)
	}
	want := map[bmc.State]fleet.State{bmc.StateOn: fleet.StateOn, bmc.StateOff: fleet.StateOff}[s.Power]
	if n.State != want {
		t.Errorf("store says %s, the BMC says %s", n.State, s.Power)
	}
	if s.DrainedByRota && s.Power != bmc.StateOff {
		t.Errorf("left drained by rota while on (store state %s)", n.State)
	}
	if n.DrainedByRota != s.DrainedByRota {
		t.Errorf("store's drained-by-rota %v, job manager's %v", n.DrainedByRota, s.DrainedByRota)
	}
	if u := f.world.Unsafe(); len(u) > 0 {
		t.Errorf("unsafe commands: %v", u)
	}
	if s.Jobs > 0 && s.Power != bmc.StateOn {
		t.Errorf("a server with %d jobs is %s", s.Jobs, s.Power)
	}
}
