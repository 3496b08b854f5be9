package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

// drain: intent (Draining, drained-by-rota noted before the call) -> jobs.Drain -> Draining.
func (e *Executor) drain(ctx context.Context, a fleet.Action) error {
	mark := func(n *store.Node) { n.DrainedByRota = true }
	if err := e.begin(a, fleet.StateDraining, mark, scaleDown(a.Pool)); err != nil {
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
// with DrainedByRota still set, so the next repair resumes it, never drained by accident. Cut
// short by shutdown, the intent stays instead: the next start drains again.
func (e *Executor) drainJobs(ctx context.Context, a fleet.Action) error {
	if err := e.fence(ctx, a.Node); err != nil {
		return err
	}
	jctx, cancel := e.jobsCall(ctx)
	defer cancel()
	if err := e.o.Jobs.Drain(jctx, a.Node, string(a.Reason)); err != nil {
		cause := fmt.Errorf("draining %s: %w", a.Node, err)
		if interrupted(ctx) {
			return cause
		}
		werr := e.write(a, change{node: func(n *store.Node, now time.Time) { n.Enter(fleet.StateOn, now) }, result: auditFailed, cause: cause})
		return joinErr(cause, werr)
	}
	return nil
}
