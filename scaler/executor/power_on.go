package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs"
	"github.com/rotahq/rota/scaler/store"
)

// powerOn: intent (PoweringOn) -> Power.On (confirmed) -> Booting; Repair then waits for ready.
func (e *Executor) powerOn(ctx context.Context, a fleet.Action) error {
	if err := e.begin(a, fleet.StatePoweringOn, nil, scaleUp(a.Pool)); err != nil {
		return err
	}
	return e.finishPowerOn(ctx, a)
}

func (e *Executor) finishPowerOn(ctx context.Context, a fleet.Action) error {
	return e.sendPower(ctx, a, "powering on",
		func(bctx context.Context) error { return e.o.Power.On(bctx, a.Node) },
		func() error { return e.commitBooting(a) })
}

// commitBooting records a confirmed power-on; the intent stays until the node is ready, and its
// start time bounds the boot.
func (e *Executor) commitBooting(a fleet.Action) error {
	return e.write(a, change{node: func(n *store.Node, now time.Time) { setKeepingIntent(n, fleet.StateBooting, now) }})
}

// finishBoot checks a powered-on node for readiness: ready, it is resumed in the job manager if
// rota drained it, and On; not ready past deadline (zero: none), it is Failed. A readiness check
// that cannot answer (Prometheus down) counts as not ready: the boot timeout then governs, so
// an outage never leaves a node Booting forever.
func (e *Executor) finishBoot(ctx context.Context, a fleet.Action, n store.Node, obs Observed, deadline time.Time) error {
	ready, err := e.ready(ctx, a.Node, obs)
	if err != nil {
		ready = false
		e.log.WithField("node", a.Node).WithError(err).Warn("readiness unknown; counted as not ready")
	}
	if !ready {
		return e.notReady(ctx, a, deadline, nil)
	}
	return e.up(ctx, a, n, obs, deadline)
}

// up records a powered-on node that is ready On, first resuming it in the job manager if rota
// drained it; one its job manager does not know yet is not ready (notReady, until deadline).
func (e *Executor) up(ctx context.Context, a fleet.Action, n store.Node, obs Observed, deadline time.Time) error {
	if drainedByRota(a.Node, n, obs) {
		err := e.resumeJobs(ctx, a.Node)
		if errors.Is(err, jobs.ErrNotRegistered) {
			// Its agent registers as it boots (a kubelet its Node): not ready yet.
			return e.notReady(ctx, a, deadline, err)
		}
		if err != nil {
			return fmt.Errorf("resuming booted %s: %w", a.Node, err)
		}
		if err := e.step(a, StepResumed); err != nil {
			return err
		}
	}
	err := e.write(a, change{
		node: func(n *store.Node, now time.Time) {
			n.Enter(fleet.StateOn, now)
			n.LastOn = now
			n.DrainedByRota = false
			// A Failed node that came up is a power-on success only if the power-on failed.
			n.Succeeded(a.Kind)
		},
		result: auditSucceeded,
	})
	if err != nil {
		return err
	}
	return e.step(a, StepReady)
}

// notReady leaves a booting node that is not ready (why, if said) Booting until deadline
// (zero: none), quietly, and fails it past deadline.
func (e *Executor) notReady(ctx context.Context, a fleet.Action, deadline time.Time, why error) error {
	if !deadline.IsZero() && e.o.Clock.Now().After(deadline) {
		err := fmt.Errorf("%s not ready within its pool's boot timeout", a.Node)
		if why != nil {
			err = fmt.Errorf("%w: %w", err, why)
		}
		return e.fail(ctx, a, err)
	}
	if why != nil {
		e.log.WithField("node", a.Node).WithError(why).Debug("booted, not ready yet")
	}
	return nil
}

// ready: the job manager (if it knows the node) says it responds, and the hook (if any) agrees.
func (e *Executor) ready(ctx context.Context, node string, obs Observed) (bool, error) {
	if !obs.JobsKnown {
		return false, nil
	}
	if v := obs.Jobs[node]; v.Known && !v.Responding {
		return false, nil
	}
	if e.o.Ready == nil {
		return true, nil
	}
	return e.o.Ready(ctx, node)
}

// repairPowerOn takes up an interrupted power-on: a booting node is checked for readiness; a
// node still off gets its command again; a node the command
// reached is recorded Booting and checked. It reports false when the power state cannot tell.
func (e *Executor) repairPowerOn(ctx context.Context, a fleet.Action, n store.Node, power bmc.State, obs Observed) (bool, error) {
	switch {
	case n.State == fleet.StateBooting && power == bmc.StateOff:
		// The BMC confirmed the power-on, and now the server is off: switched off by hand,
		// or it shut itself down (a thermal trip, a failing power supply). Failed at once,
		// power left off, retried only after the backoff: rota never powers on straight
		// against the hand that switched a server off, nor cycles a server that keeps
		// dying; waiting out boot_timeout would only hold the demand longer, as the
		// planner takes another server at once.
		return true, e.fail(ctx, a, fmt.Errorf("%s switched off while booting (by hand, or it shut itself down)", a.Node))
	case n.State == fleet.StateBooting:
		return true, e.finishBoot(ctx, a, n, obs, e.bootDeadline(a, n))
	case power == bmc.StateOff:
		return true, e.finishPowerOn(ctx, a)
	case power == bmc.StateOn:
		if err := e.commitBooting(a); err != nil {
			return true, err
		}
		return true, e.finishBoot(ctx, a, n, obs, e.bootDeadline(a, n))
	}
	return false, nil
}

func (e *Executor) bootDeadline(a fleet.Action, n store.Node) time.Time {
	p := e.pool(a.Node)
	if p == nil || n.Intent == nil {
		return time.Time{}
	}
	return n.Intent.Started.Add(time.Duration(p.BootTimeout))
}
