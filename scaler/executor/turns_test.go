package executor

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
)

// The cap in flight may be far more than the BMC layer serves in time: the power-offs past
// config.ShutdownsPerSlot x bmc.concurrency wait for a turn before their allocation check, so no more
// than that are between the check and the end of their command at once. Without it they all go
// on to the BMC layer, whose slots' queue then grows with them, against bmc.operation_timeout.
func TestPowerCommandsWaitForABMCTurn(t *testing.T) {
	// One slot, and 4 + 16 servers: 20 power-offs, 16 turns.
	f := newFx(t, true, func(cfg *config.Config) {
		cfg.BMC.Concurrency, cfg.Policy.Disruption.MaxConcurrent = 1, 40
		for i := range config.ShutdownsPerSlot {
			n := cfg.Pools[0].Nodes[0]
			n.Name = fmt.Sprintf("cpu%02d", i+3)
			cfg.Pools[0].Nodes = append(cfg.Pools[0].Nodes, n)
		}
	})
	turns := config.ShutdownsPerSlot
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
	nodes := executortest.NodeNames(f.cfg)
	var actions []fleet.Action
	for _, n := range nodes {
		f.draining(n)
		actions = append(actions, act(fleet.PowerOff, n))
	}
	if skips := f.ex.Start(context.Background(), actions); len(skips) != 0 {
		t.Fatalf("skips under max_concurrent 40: %v", skips)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		n := at
		mu.Unlock()
		if n >= turns || time.Now().After(deadline) {
			break
		}
	}
	time.Sleep(50 * time.Millisecond) // time for any more to reach the check
	mu.Lock()
	waiting := at
	mu.Unlock()
	close(hold)
	f.ex.Wait()
	if waiting != turns || most != turns {
		t.Errorf("bmc.concurrency 1, %d power-offs: %d past their allocation check at once (most %d), want %d", len(nodes), waiting, most, turns)
	}
	for _, n := range nodes {
		if got := f.node(n).State; got != fleet.StateOff {
			t.Errorf("%s: %s after its turn, want off", n, got)
		}
	}
}
