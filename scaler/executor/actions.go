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

// drain: intent (Draining, drained-by-rota noted before the call) -> jobs.Drain -> Draining.
func (e *Executor) drain(ctx context.Context, a fleet.Action) error {
	mark := func(n *store.Node) { n.DrainedByRota = true }
	if err := e.begin(a, fleet.StateDraining, mark, scaleDown(a.Pool)); err != nil {
		return err
	}
	if err := e.step(a, StepIntent); err != nil {
		return err
	}
	return e.sendDrain(ctx, a)
}

// sendDrain makes the drain (idempotent) and records the node Draining.
func (e *Executor) sendDrain(ctx context.Context, a fleet.Action) error {
	if err := e.drainJobs(ctx, a); err != nil {
		return err
	}
	if err := e.step(a, StepSent); err != nil {
		return err
	}
	err := e.write(a, change{node: func(n *store.Node, now time.Time) { n.Enter(fleet.StateDraining, now) }, result: auditSucceeded})
	if err != nil {
		return err
	}
	return e.step(a, StepCommitted)
}

// drainJobs asks the job manager to place no more work on the node, with rota's marker
// (idempotent). When it fails the drain may or may not have been made: the node goes back to On
// with DrainedByRota still set, so the next repair resumes it, never drained by accident.
func (e *Executor) drainJobs(ctx context.Context, a fleet.Action) error {
	jctx, cancel := e.jobsCall(ctx)
	defer cancel()
	if err := e.o.Jobs.Drain(jctx, a.Node, jobs.Marker+string(a.Reason)); err != nil {
		cause := fmt.Errorf("draining %s: %w", a.Node, err)
		if interrupted(ctx) {
			// Cut short by shutdown, the intent stays instead: the next start drains again.
			return cause
		}
		werr := e.write(a, change{node: func(n *store.Node, now time.Time) { n.Enter(fleet.StateOn, now) }, result: auditFailed, cause: cause})
		return joinErr(cause, werr)
	}
	return nil
}

// powerOff: intent (PoweringOff) -> allocation read again -> Power.Off(graceful) -> Off. A
// node still On (the planner powers an idle one off in one pass) is drained on the way:
// intent (PoweringOff, drained-by-rota noted, a scale-down) -> jobs.Drain -> the same.
func (e *Executor) powerOff(ctx context.Context, a fleet.Action) error {
	rec, err := e.o.Store.Node(a.Node)
	if err != nil {
		return fmt.Errorf("reading %s before power-off: %w", a.Node, err)
	}
	if rec.State == fleet.StateOn {
		mark := func(n *store.Node) { n.DrainedByRota = true }
		if err := e.begin(a, fleet.StatePoweringOff, mark, scaleDown(a.Pool)); err != nil {
			return err
		}
		if err := e.step(a, StepIntent); err != nil {
			return err
		}
		if err := e.drainJobs(ctx, a); err != nil {
			return err
		}
		if err := e.step(a, StepDrained); err != nil {
			return err
		}
		return e.finishPowerOff(ctx, a)
	}
	if err := e.begin(a, fleet.StatePoweringOff, nil, nil); err != nil {
		return err
	}
	if err := e.step(a, StepIntent); err != nil {
		return err
	}
	return e.finishPowerOff(ctx, a)
}

// finishPowerOff is a power-off from its allocation check on; Repair resumes here too.
func (e *Executor) finishPowerOff(ctx context.Context, a fleet.Action) error {
	// Safety invariant 1: the plan's view of allocation may be a pass old. Read it again right
	// before the command; a job that landed since calls the power-off off.
	jctx, cancel := e.jobsCall(ctx)
	defer cancel()
	views, err := e.o.Jobs.Nodes(jctx)
	if err != nil {
		// Unknown allocation is never empty: no power-off. The node stays drained; the next
		// pass decides again (resume on timeout or demand, or a new power-off).
		cause := fmt.Errorf("checking allocation of %s before power-off: %w", a.Node, err)
		if interrupted(ctx) {
			return cause
		}
		werr := e.write(a, change{node: func(n *store.Node, now time.Time) { n.Enter(fleet.StateDraining, now) }, result: auditFailed, cause: cause})
		return joinErr(cause, werr)
	}
	if v := views[a.Node]; v.Known && v.Allocated() {
		return e.abortPowerOff(ctx, a, v)
	}
	if err := e.step(a, StepChecked); err != nil {
		return err
	}
	bctx, cancelBMC := e.bmcCall(ctx)
	defer cancelBMC()
	err = e.o.Power.Off(bctx, a.Node, true)
	switch {
	case errors.Is(err, bmc.ErrStateUnknown):
		return e.unknown(ctx, a, err)
	case err != nil:
		return e.fail(ctx, a, fmt.Errorf("powering off %s: %w", a.Node, err))
	}
	if err := e.step(a, StepSent); err != nil {
		return err
	}
	if err := e.commitOff(ctx, a); err != nil {
		return err
	}
	return e.step(a, StepCommitted)
}

// commitOff records a confirmed power-off: Off, a cycle for the node and the fleet budget. The
// node stays drained in the job manager while off; it is resumed when it boots. A job manager
// that keeps its own view of power (jobs.PowerAware) is told, best effort.
func (e *Executor) commitOff(ctx context.Context, a fleet.Action) error {
	err := e.write(a, change{
		node: func(n *store.Node, now time.Time) {
			n.Enter(fleet.StateOff, now)
			n.RecordPowerOff(now)
			n.Succeeded(a.Kind)
		},
		global: func(g *store.Global, now time.Time) { g.PowerOffs = store.Recent(append(g.PowerOffs, now), now) },
		result: auditSucceeded,
	})
	if err != nil {
		return err
	}
	if pa, ok := e.o.Jobs.(jobs.PowerAware); ok {
		jctx, cancel := e.jobsCall(ctx)
		defer cancel()
		if err := pa.PoweredOff(jctx, a.Node); err != nil {
			e.log.WithError(err).WithField("node", a.Node).Warn("telling the job manager the server is off")
		}
	}
	return nil
}

// abortPowerOff gives a node a job landed on back to the job manager.
func (e *Executor) abortPowerOff(ctx context.Context, a fleet.Action, v fleet.JobsView) error {
	if err := e.resumeJobs(ctx, a.Node); err != nil {
		// The intent stays: the next repair reads allocation again and resumes.
		return fmt.Errorf("resuming %s after an aborted power-off: %w", a.Node, err)
	}
	if err := e.step(a, StepResumed); err != nil {
		return err
	}
	cause := fmt.Errorf("%w (%d jobs, %d CPUs, %d GPUs allocated)", ErrAborted, v.Jobs, v.CPUs, v.GPUs)
	err := e.write(a, change{
		node: func(n *store.Node, now time.Time) {
			n.Enter(fleet.StateOn, now)
			n.DrainedByRota = false
		},
		result: auditAborted, cause: cause,
	})
	if err != nil {
		return err
	}
	if err := e.step(a, StepCommitted); err != nil {
		return err
	}
	return cause
}

// powerOn: intent (PoweringOn) -> Power.On (confirmed) -> Booting; Repair then waits for ready.
func (e *Executor) powerOn(ctx context.Context, a fleet.Action) error {
	if err := e.begin(a, fleet.StatePoweringOn, nil, scaleUp(a.Pool)); err != nil {
		return err
	}
	if err := e.step(a, StepIntent); err != nil {
		return err
	}
	return e.finishPowerOn(ctx, a)
}

func (e *Executor) finishPowerOn(ctx context.Context, a fleet.Action) error {
	bctx, cancel := e.bmcCall(ctx)
	defer cancel()
	err := e.o.Power.On(bctx, a.Node)
	switch {
	case errors.Is(err, bmc.ErrStateUnknown):
		return e.unknown(ctx, a, err)
	case err != nil:
		return e.fail(ctx, a, fmt.Errorf("powering on %s: %w", a.Node, err))
	}
	if err := e.step(a, StepSent); err != nil {
		return err
	}
	if err := e.commitBooting(a); err != nil {
		return err
	}
	return e.step(a, StepCommitted)
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
		if !deadline.IsZero() && e.o.Clock.Now().After(deadline) {
			return e.fail(ctx, a, fmt.Errorf("%s not ready within its pool's boot timeout", a.Node))
		}
		return nil
	}
	if drainedByRota(a.Node, n, obs) {
		if err := e.resumeJobs(ctx, a.Node); err != nil {
			return fmt.Errorf("resuming booted %s: %w", a.Node, err)
		}
		if err := e.step(a, StepResumed); err != nil {
			return err
		}
	}
	err = e.write(a, change{
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

// resume: intent (state kept) -> jobs.Resume -> On.
func (e *Executor) resume(ctx context.Context, a fleet.Action) error {
	if err := e.begin(a, "", nil, nil); err != nil {
		return err
	}
	if err := e.step(a, StepIntent); err != nil {
		return err
	}
	return e.finishResume(ctx, a)
}

func (e *Executor) finishResume(ctx context.Context, a fleet.Action) error {
	if err := e.resumeJobs(ctx, a.Node); err != nil {
		// The intent stays; the next repair tries again.
		return fmt.Errorf("resuming %s: %w", a.Node, err)
	}
	if err := e.step(a, StepSent); err != nil {
		return err
	}
	err := e.write(a, change{
		node: func(n *store.Node, now time.Time) {
			n.Enter(fleet.StateOn, now)
			n.DrainedByRota = false
		},
		result: auditSucceeded,
	})
	if err != nil {
		return err
	}
	return e.step(a, StepCommitted)
}

// resumeJobs resumes a node rota drained. A node someone else drained since is theirs to
// resume (ErrNotOurs counts as done).
func (e *Executor) resumeJobs(ctx context.Context, node string) error {
	jctx, cancel := e.jobsCall(ctx)
	defer cancel()
	err := e.o.Jobs.Resume(jctx, node)
	if errors.Is(err, jobs.ErrNotOurs) {
		e.log.WithField("node", node).Info("node drained by someone else since; left to them")
		return nil
	}
	return err
}

// drainedByRota: the store remembers rota drained the node, or the job manager shows rota's
// marker on its drain (the store may be newer than the drain: restored from a backup, or lost).
func drainedByRota(node string, n store.Node, obs Observed) bool {
	return n.DrainedByRota || obs.Jobs[node].DrainedByRota
}

// jobsCall bounds one job-manager call by jobs.timeout, and bmcCall one power operation by
// bmc.operation_timeout (confirmation included), so a hung call cannot hold a node forever.
// Their expiry is a failure of the step; only the end of ctx itself (shutdown) is not.
func (e *Executor) jobsCall(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, time.Duration(e.o.Config.Jobs.Timeout))
}

func (e *Executor) bmcCall(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, time.Duration(e.o.Config.BMC.OperationTimeout))
}
