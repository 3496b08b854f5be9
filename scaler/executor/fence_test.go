package executor

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

// deposable is a backend whose writes still go through but whose fence refuses once deposed
// is set: a leader deposed between its intent and its command (the write is fenced too in
// etcd; here only the fence is, to prove the executor asks it before every command).
type deposable struct {
	store.Backend
	deposed *atomic.Bool
}

func (d deposable) Fence(context.Context) error {
	if d.deposed.Load() {
		return fmt.Errorf("%w: deposed", store.ErrNotLeader)
	}
	return nil
}

// The fence is asked right before every command, after the intent: a rota deposed at the
// intent (the fault hook deposes it there) sends nothing, writes nothing more, keeps the
// intent for the leader's repair, and counts the action interrupted, not failed; repair of
// each interrupted action sends nothing either.
func TestNoCommandAfterTheFenceRefuses(t *testing.T) {
	cases := []struct {
		name  string
		kind  fleet.Kind
		setup func(f *fx)
	}{
		{"drain", fleet.Drain, func(f *fx) { f.put("cpu01", nodeOn()) }},
		{"power off", fleet.PowerOff, func(f *fx) { f.draining("cpu01") }},
		{"power on", fleet.PowerOn, func(f *fx) { f.off("cpu01") }},
		{"resume", fleet.Resume, func(f *fx) { f.draining("cpu01") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t, true, nil)
			c.setup(f)
			var deposed atomic.Bool
			f.ex.o.Store = store.New(deposable{Backend: f.st.Backend(), deposed: &deposed}, store.Options{}, false)
			f.ex.o.Fault = func(_ string, _ fleet.Kind, s Step) error {
				if s == StepIntent {
					deposed.Store(true)
				}
				return nil
			}
			before := len(f.world.Commands())
			err := f.ex.run(context.Background(), act(c.kind, "cpu01"))
			if err == nil {
				t.Fatal("the action succeeded past a refused fence")
			}
			if got := f.world.Commands()[before:]; len(got) != 0 {
				t.Errorf("commands sent after the fence refused: %v", got)
			}
			n := f.node("cpu01")
			if n.Intent == nil || n.Intent.Kind != c.kind {
				t.Errorf("intent %+v, want the %s intent kept for the leader's repair", n.Intent, c.kind)
			}
			if got := f.actions(c.kind, "cpu", fleet.ResultInterrupted); got != 1 {
				t.Errorf("interrupted %s actions = %v, want 1", c.kind, got)
			}
			if err := f.ex.Repair(context.Background(), f.observe()); err != nil {
				t.Fatal(err)
			}
			if got := f.world.Commands()[before:]; len(got) != 0 {
				t.Errorf("repair on a refused fence sent %v", got)
			}
		})
	}
}
