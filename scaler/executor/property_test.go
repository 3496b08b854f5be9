package executor

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
)

// Property: whatever sequence of actions the executor is handed (sensible or not), whatever
// jobs land or leave, BMCs that come and go, and crashes at random steps, no server with a job
// is ever powered off; and once the BMCs answer, repair passes bring every server to rest with
// nothing drained by rota while on.
func TestRandomHistoriesStaySafe(t *testing.T) {
	kinds := []fleet.Kind{fleet.Drain, fleet.PowerOff, fleet.PowerOn, fleet.Resume}
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 7))
		f := newFx(t, rng.IntN(2) == 0, nil)
		names := executortest.NodeNames(f.cfg)
		// Repair runs nodes in parallel, so the crash dice are their own, behind a lock.
		var mu sync.Mutex
		dice := rand.New(rand.NewPCG(seed, 11))
		crash := func(string, fleet.Kind, Step) error {
			mu.Lock()
			defer mu.Unlock()
			if dice.IntN(6) == 0 {
				return errCrash
			}
			return nil
		}
		f.restart(crash)
		for range 25 {
			node := names[rng.IntN(len(names))]
			switch r := rng.IntN(10); {
			case r < 5:
				_ = f.ex.run(context.Background(), act(kinds[rng.IntN(len(kinds))], node))
			case r < 6:
				f.world.Set(node, func(s *executortest.Server) { s.Jobs = rng.IntN(2) })
			case r < 7:
				f.world.Set(node, func(s *executortest.Server) { s.PowerUnknown = !s.PowerUnknown })
			case r < 8:
				f.world.Set(node, func(s *executortest.Server) { s.Responding = s.Power == bmc.StateOn })
			case r < 9:
				f.restart(crash)
			default:
				f.repair()
			}
			f.clock.Advance(time.Duration(rng.IntN(15)) * time.Minute)
			if u := f.world.Unsafe(); len(u) > 0 {
				t.Fatalf("seed %d: %v", seed, u)
			}
		}
		f.restart(nil)
		for _, n := range names {
			f.world.Set(n, func(s *executortest.Server) {
				s.PowerUnknown = false
				s.Responding = s.Power == bmc.StateOn
			})
		}
		for range 6 {
			f.repair()
			f.clock.Advance(20 * time.Minute)
		}
		for _, n := range names {
			node, s := f.node(n), f.world.Get(n)
			if node.Intent != nil {
				t.Errorf("seed %d: %s left with intent %+v in state %s", seed, n, node.Intent, node.State)
			}
			if s.DrainedByRota && s.Power == bmc.StateOn {
				t.Errorf("seed %d: %s drained by rota while on (state %s)", seed, n, node.State)
			}
		}
	}
}
