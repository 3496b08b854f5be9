package plan

import (
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// budget is the fleet-wide disruption budget and concurrency cap, computed from the snapshot
// before any step acts and updated as actions are planned. Fields left at zero (a policy not
// filled in) allow nothing: the budget fails closed.
type budget struct {
	// maxOffs power-offs per disruption window; recentOffs happened in the window so far;
	// plannedOffs are planned by this pass.
	maxOffs, recentOffs, plannedOffs int
	// draining counts servers in Draining after this pass so far: each is a power-off to come,
	// so it holds a share of the budget until it is powered off or resumed.
	draining int
	// inFlight counts servers with an action under way (fleet.State.InFlight) after this pass
	// so far; maxConcurrent caps it when a scale-down starts.
	inFlight, maxConcurrent int
}

// newBudget is the budget before the snapshot's nodes are counted (see tally).
func newBudget(snap *fleet.Snapshot, pol *config.Policy, now time.Time) budget {
	n := len(snap.Nodes)
	b := budget{maxOffs: pol.Disruption.PowerOffs(n), maxConcurrent: pol.Disruption.Concurrent(n)}
	since := now.Add(-time.Duration(pol.Disruption.Window))
	for _, t := range snap.History.PowerOffs {
		// A time in the future (clock skew) counts too: when unsure, spend the budget.
		if t.After(since) {
			b.recentOffs++
		}
	}
	return b
}

// The budget follows each planned action. A power-off continues a drain (both in flight) and a
// resume ends one, so neither takes a concurrency slot: refusing them would strand servers in
// Draining.
func (b *budget) poweredOn()  { b.inFlight++ }
func (b *budget) drained()    { b.inFlight++; b.draining++ }
func (b *budget) resumed()    { b.inFlight--; b.draining-- }
func (b *budget) poweredOff() { b.draining--; b.plannedOffs++ }

// offIdle is a power-off of an On server, drained by the executor on the way: a new action
// in flight and one power-off of the budget.
func (b *budget) offIdle() { b.inFlight++; b.plannedOffs++ }
