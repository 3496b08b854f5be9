package executor

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// The cap in flight may be far more than bmc.concurrency: the power-offs past it wait for a
// turn before their allocation check, so no more than bmc.concurrency are between that check
// and the end of their command at once. They used to all go on to the BMC layer, which held
// the rest waiting for a slot after their checks, against bmc.operation_timeout.
func TestPowerCommandsWaitForABMCTurn(t *testing.T) {
	f := newFx(t, true, func(cfg *config.Config) { cfg.BMC.Concurrency = 2 })
	var mu sync.Mutex
	at, most := 0, 0
	hold := make(chan struct{})
	f.restart(func(_ string, _ fleet.Kind, s Step) error {
		if s != StepChecked {
			return nil
		}
		mu.Lock()
		at++
		most = max(most, at)
		mu.Unlock()
		<-hold
		mu.Lock()
		at--
		mu.Unlock()
		return nil
	})
	nodes := []string{"cpu01", "cpu02", "gpu01", "gpu02"}
	var actions []fleet.Action
	for _, n := range nodes {
		f.draining(n)
		actions = append(actions, act(fleet.PowerOff, n))
	}
	if skips := f.ex.Start(context.Background(), actions); len(skips) != 0 {
		t.Fatalf("skips under max_concurrent 8: %v", skips)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		n := at
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
	}
	time.Sleep(50 * time.Millisecond) // time for any more to reach the check
	mu.Lock()
	waiting := at
	mu.Unlock()
	close(hold)
	f.ex.Wait()
	if waiting != 2 || most != 2 {
		t.Errorf("bmc.concurrency 2, 4 power-offs: %d past their allocation check at once (most %d), want 2", waiting, most)
	}
	for _, n := range nodes {
		if got := f.node(n).State; got != fleet.StateOff {
			t.Errorf("%s: %s after its turn, want off", n, got)
		}
	}
}
