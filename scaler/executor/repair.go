package executor

import (
	"context"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

// Observed is what a pass saw, for Repair.
type Observed struct {
	// Power is what each BMC said; a node absent is unknown.
	Power map[string]bmc.State
	// Jobs is the job manager's view; JobsKnown is false when it could not be read.
	Jobs      map[string]fleet.JobsView
	JobsKnown bool
}

// Repair brings every inventory node without an action under way, and neither pinned nor in
// maintenance, to a resting state: it finishes or rolls back what a crash interrupted (a node
// with an intent), moves booting nodes on when ready or to Failed past their boot timeout,
// resumes what rota left drained, and aligns resting states with what the BMC says. A node
// whose BMC cannot say its state is left as it is, and logged. It returns an error only when
// the store cannot be read; each node's trouble is logged and left for the next pass.
func (e *Executor) Repair(ctx context.Context, obs Observed) error {
	recs, err := e.o.Store.Nodes()
	if err != nil {
		return err
	}
	sem := make(chan struct{}, max(e.o.Config.Policy.Disruption.MaxConcurrent, 1))
	var wg sync.WaitGroup
	for _, p := range e.o.Config.Pools {
		for _, cn := range p.Nodes {
			if r := recs[cn.Name]; r.Pinned || r.Maintenance {
				continue // never touched, not even to finish
			}
			if ok, _ := e.claim(cn.Name, false); !ok {
				continue
			}
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				defer e.release(cn.Name)
				power, ok := obs.Power[cn.Name]
				if !ok {
					power = bmc.StateUnknown
				}
				if err := e.repairNode(ctx, cn.Name, p.Name, recs[cn.Name], power, obs); err != nil {
					e.log.WithFields(logrus.Fields{"node": cn.Name, "state": recs[cn.Name].State}).WithError(err).Warn("repair did not finish; next pass tries again")
				}
			}()
		}
	}
	wg.Wait()
	return nil
}

func (e *Executor) repairNode(ctx context.Context, name, pool string, n store.Node, power bmc.State, obs Observed) error {
	if n.Intent != nil {
		a := fleet.Action{Kind: n.Intent.Kind, Node: name, Pool: pool, Reason: n.Intent.Reason, Detail: n.Intent.Detail}
		return e.finishIntent(ctx, a, n, power, obs)
	}
	return e.settle(ctx, name, pool, n, power, obs)
}

// finishIntent takes an interrupted action up from where the store and the world say it is,
// in the action kind's own repair. In dry run a repair never moves a server away from serving:
// a drain or a power-off left in flight is rolled back (resumed), a power-on whose command never
// landed is recorded Off.
func (e *Executor) finishIntent(ctx context.Context, a fleet.Action, n store.Node, power bmc.State, obs Observed) error {
	var done bool
	var err error
	switch a.Kind {
	case fleet.Resume:
		done, err = true, e.finishResume(ctx, a)
	case fleet.Drain:
		done, err = true, e.repairDrain(ctx, a)
	case fleet.PowerOff:
		done, err = e.repairPowerOff(ctx, a, power)
	case fleet.PowerOn:
		done, err = e.repairPowerOn(ctx, a, n, power, obs)
	}
	if !done {
		e.log.WithFields(logrus.Fields{"node": a.Node, "intent": a.Kind, "power": power}).Warn("power state unknown or changing; interrupted action left for the next pass")
	}
	return err
}

// settle handles a node with no action in flight.
func (e *Executor) settle(ctx context.Context, name, pool string, n store.Node, power bmc.State, obs Observed) error {
	now := e.o.Clock.Now()
	a := fleet.Action{Node: name, Pool: pool}
	switch {
	case n.State == fleet.StateDraining && e.o.Config.Policy.DryRun:
		// No power-off follows a drain in dry run: give it back now, not at its timeout.
		return e.giveBack(ctx, a, "dry run: drain given back")
	case n.State == fleet.StateDraining:
		if now.Sub(n.Since) > time.Duration(e.o.Config.Policy.Drain.Timeout) {
			a.Kind, a.Reason, a.Detail = fleet.Resume, fleet.ReasonDrainTimeout, "drain did not finish in time"
			return e.resume(ctx, a)
		}
		return nil
	case power == bmc.StateOn && n.State == fleet.StateFailed:
		// A failed node that came up after all is taken back.
		a.Kind, a.Reason, a.Detail = fleet.PowerOn, fleet.ReasonRepair, "failed node is up"
		return e.finishBoot(ctx, a, n, obs, time.Time{})
	case power == bmc.StateOn && n.State != fleet.StateOn && n.State != fleet.StateFailed:
		return e.align(a, fleet.StateOn)
	case power == bmc.StateOff && n.State != fleet.StateOff && n.State != fleet.StateFailed:
		return e.align(a, fleet.StateOff)
	case power == bmc.StateUnknown && n.State == "":
		return e.align(a, fleet.StateUnknown)
	case n.State == fleet.StateOn && drainedByRota(name, n, obs):
		// Never drained by rota forever: an On node rota drained (an aborted or failed step) is
		// given back.
		return e.giveBack(ctx, a, "left drained by an interrupted action")
	}
	return nil
}

// align records a resting state the BMC reports (a node seen for the first time, or powered on
// or off by someone else).
func (e *Executor) align(a fleet.Action, state fleet.State) error {
	e.log.WithFields(logrus.Fields{"node": a.Node, "state": state}).Info("state taken from the BMC")
	return e.write(a, change{node: func(n *store.Node, now time.Time) {
		n.Enter(state, now)
		switch state {
		case fleet.StateOn:
			n.LastOn = now
		case fleet.StateOff:
			n.LastOff = now
		}
	}})
}
