package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs"
	"github.com/rotahq/rota/scaler/store"
)

// move: intent (Draining, drained-by-rota noted, the plan kept) -> jobs.Drain -> jobs.Move ->
// Draining; the planner then powers the server off once it is empty, through the same
// re-check before the power-off as any other (safety invariant 1). A plan without Drain
// (work moved so a department gets its quota back) keeps the server's state and On.
func (e *Executor) move(ctx context.Context, a fleet.Action) error {
	if a.Move == nil || len(a.Move.Jobs) == 0 {
		return fmt.Errorf("moving work off %s: no jobs in the plan", a.Node)
	}
	if _, ok := e.o.Jobs.(jobs.Mover); !ok {
		return fmt.Errorf("moving work off %s: %w", a.Node, jobs.ErrCannotMove)
	}
	state, mark := fleet.State(""), func(*store.Node) {}
	spent := func(g *store.Global, now time.Time) { g.Moves = store.Recent(append(g.Moves, now), now) }
	global := spent
	if a.Move.Drain {
		state, mark = fleet.StateDraining, func(n *store.Node) { n.DrainedByRota = true }
		down := scaleDown(a.Pool)
		global = func(g *store.Global, now time.Time) { spent(g, now); down(g, now) }
	}
	// The budget is spent with the intent: a move that crashed still counts.
	if err := e.begin(a, state, mark, global); err != nil {
		return err
	}
	return e.sendMove(ctx, a)
}

// sendMove drains the server (when the plan says so) and moves its jobs, both idempotent, and
// records where the server rests. Repair resumes here too.
func (e *Executor) sendMove(ctx context.Context, a fleet.Action) error {
	rest := fleet.StateOn
	if a.Move.Drain {
		rest = fleet.StateDraining
		if err := e.fence(ctx, a.Node); err != nil {
			return err
		}
		jctx, cancel := e.jobsCall(ctx)
		err := e.o.Jobs.Drain(jctx, a.Node, string(a.Reason))
		cancel()
		if err != nil {
			// As a failed drain: On, with DrainedByRota kept so the next repair gives it back.
			cause := fmt.Errorf("draining %s to move its work: %w", a.Node, err)
			werr := e.write(a, change{node: func(n *store.Node, now time.Time) { n.Enter(fleet.StateOn, now) }, result: auditFailed, cause: cause})
			return joinErr(cause, werr)
		}
		if err := e.step(a, StepSent); err != nil {
			return err
		}
	}
	mover, ok := e.o.Jobs.(jobs.Mover)
	if !ok {
		return fmt.Errorf("moving work off %s: %w", a.Node, jobs.ErrCannotMove)
	}
	if err := e.fence(ctx, a.Node); err != nil {
		return err
	}
	jctx, cancel := e.jobsCall(ctx)
	moved, err := mover.Move(jctx, a.Node, a.Move.Jobs, a.Move.Exclude)
	cancel()
	if err != nil {
		// Some jobs may have moved, others not: the server rests drained (the planner powers
		// it off once empty, or gives it back at the drain timeout) or On. A move that left
		// work waiting on it (jobs.ErrMoveUnfinished) stays in flight instead: its intent kept,
		// repair calls Move again at each pass until that work is let go, and no other action
		// is taken on the server meanwhile (the loop's gate).
		cause := fmt.Errorf("moving jobs %s off %s: %w", strings.Join(a.Move.Jobs, ","), a.Node, err)
		rests := func(n *store.Node, now time.Time) { n.Enter(rest, now) }
		if errors.Is(err, jobs.ErrMoveUnfinished) {
			rests = func(n *store.Node, now time.Time) { setKeepingIntent(n, rest, now) }
		}
		werr := e.write(a, change{node: rests, result: auditFailed, cause: cause})
		return joinErr(cause, werr)
	}
	if err := e.step(a, StepMoved); err != nil {
		return err
	}
	done := a
	done.Detail = fmt.Sprintf("%d of %d jobs moved; %s", moved, len(a.Move.Jobs), a.Detail)
	if err := e.write(done, change{node: func(n *store.Node, now time.Time) { n.Enter(rest, now) }, result: auditSucceeded}); err != nil {
		return err
	}
	return e.step(a, StepCommitted)
}

// repairMove takes up an interrupted move: both steps are idempotent, so it is sent again
// (jobs already moved are left alone). A job manager that cannot move work leaves the server
// drained for the planner to settle.
func (e *Executor) repairMove(ctx context.Context, a fleet.Action) error {
	if a.Move == nil {
		return errors.New("interrupted move without its plan")
	}
	return e.sendMove(ctx, a)
}
