package loop

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/executor"
	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
)

// landing is the loop's BMC reader, over the world: once armed, its read of node is followed
// by land (the action under way landing), before the read is answered.
type landing struct {
	bmc.Power
	node string
	mu   sync.Mutex
	land func()
}

func (p *landing) State(ctx context.Context, node string) (bmc.State, error) {
	s, err := p.Power.State(ctx, node)
	p.mu.Lock()
	land := p.land
	if node == p.node {
		p.land = nil
	}
	p.mu.Unlock()
	if node == p.node && land != nil {
		land()
	}
	return s, err
}

// A power-on runs in the background: a pass read the server's BMC off just before the
// power-on landed and was confirmed (recorded Booting), and its repair failed the server as
// "switched off while booting" (seen on a real cluster when one wake powered on two servers).
// That pass leaves the server for the next one, whose fresh reading finds it up.
func TestPassJudgesNoBMCReadBeforeAnActionLanded(t *testing.T) {
	f := newFx(t, nil, nil)
	f.world.Set("gpu01", func(s *executortest.Server) { s.Power, s.Responding = bmc.StateOff, false })
	proceed := make(chan struct{})
	var once sync.Once
	f.restart(func(node string, kind fleet.Kind, s executor.Step) error {
		if node == "gpu01" && kind == fleet.PowerOn && s == executor.StepIntent {
			once.Do(func() { <-proceed }) // the power-on waits on its BMC
		}
		return nil
	})
	f.pass()
	f.propose = []fleet.Action{act(fleet.PowerOn, "gpu01", "gpu", fleet.ReasonBacklog)}
	if err := f.loop.runPass(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.propose = nil
	f.loop.o.Power = &landing{Power: f.world, node: "gpu01", land: func() {
		f.clock.Advance(time.Second)
		close(proceed)
		f.ex.Wait() // confirmed on and recorded Booting, after the read said off
	}}
	f.pass()
	n, err := f.st.Node("gpu01")
	if err != nil {
		t.Fatal(err)
	}
	if n.State != fleet.StateBooting || n.Failures != 0 {
		t.Fatalf("gpu01 after the pass that read its BMC before the power-on landed: %+v, want booting, no failure", n)
	}
	f.pass()
	if got := f.state("gpu01"); got != fleet.StateOn {
		t.Errorf("gpu01 after a fresh reading: %s, want on", got)
	}
}
