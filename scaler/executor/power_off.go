package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs"
	"github.com/rotahq/rota/scaler/store"
)

// powerOff: intent (PoweringOff) -> allocation read again -> Power.Off(graceful) -> Off. A
// node still On (the planner powers an idle one off in the pass that finds it) is drained on
// the way: intent (PoweringOff, drained-by-rota noted, a scale-down) -> jobs.Drain -> the same.
func (e *Executor) powerOff(ctx context.Context, a fleet.Action) error {
	rec, err := e.o.Store.Node(a.Node)
	if err != nil {
		return fmt.Errorf("reading %s before power-off: %w", a.Node, err)
	}
	if rec.State != fleet.StateOn {
		if err := e.begin(a, fleet.StatePoweringOff, nil, nil); err != nil {
			return err
		}
		return e.finishPowerOff(ctx, a)
	}
	mark := func(n *store.Node) { n.DrainedByRota = true }
	if err := e.begin(a, fleet.StatePoweringOff, mark, scaleDown(a.Pool)); err != nil {
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

// finishPowerOff is a power-off from its allocation check on; Repair resumes here too.
func (e *Executor) finishPowerOff(ctx context.Context, a fleet.Action) error {
	release, err := e.bmcTurn(ctx, a.Node)
	if err != nil {
		return err
	}
	defer release()
	// Safety invariant 1: the plan's view of allocation may be a pass old. Read it again right
	// before the command; a job that landed since calls the power-off off.
	jctx, cancel := e.jobsCall(ctx)
	defer cancel()
	views, err := e.o.Jobs.Nodes(jctx)
	if err != nil {
		// Unknown allocation is never empty: no power-off.
		return e.holdDrained(ctx, a, fmt.Errorf("checking allocation of %s before power-off: %w", a.Node, err))
	}
	v := views[a.Node]
	if v.Known && v.Allocated() {
		return e.abortPowerOff(ctx, a, v)
	}
	// The rule the planner decided by: a server the job manager no longer lists, or whose
	// drain was lifted since, is not known to be empty either.
	if reason, detail := fleet.PowerOffBlock(v, e.o.Config.Jobs.ReportsAllocation()); reason != "" {
		return e.holdDrained(ctx, a, fmt.Errorf("power-off of %s held: %s (%s)", a.Node, detail, reason))
	}
	if err := e.step(a, StepChecked); err != nil {
		return err
	}
	return e.sendPower(ctx, a, "powering off",
		func(bctx context.Context) error { return e.o.Power.Off(bctx, a.Node, true) },
		func() error { return e.commitOff(ctx, a) })
}

// holdDrained ends a power-off that may not go on: the node stays drained, and the next pass
// decides again (resume on timeout or demand, or a new power-off). Cut short by shutdown, it
// writes nothing: the intent waits for the next start.
func (e *Executor) holdDrained(ctx context.Context, a fleet.Action, cause error) error {
	if interrupted(ctx) {
		return cause
	}
	werr := e.write(a, change{node: func(n *store.Node, now time.Time) { n.Enter(fleet.StateDraining, now) }, result: auditFailed, cause: cause})
	return joinErr(cause, werr)
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

// repairPowerOff takes up an interrupted power-off by what the BMC says: off, it is recorded;
// on, it goes on from its allocation check (read again, exactly as the first time). It reports
// false when the power state cannot tell.
func (e *Executor) repairPowerOff(ctx context.Context, a fleet.Action, power bmc.State) (bool, error) {
	switch {
	case power == bmc.StateOff:
		return true, e.commitOff(ctx, a)
	case power == bmc.StateOn:
		// The drain again (idempotent: an idle node powered off in one step may have crashed
		// before it), then allocation is read again before the command, as the first time.
		if err := e.drainJobs(ctx, a); err != nil {
			return true, err
		}
		return true, e.finishPowerOff(ctx, a)
	}
	return false, nil
}
