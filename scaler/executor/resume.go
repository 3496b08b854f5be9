package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs"
	"github.com/rotahq/rota/scaler/store"
)

// resume: intent (state kept) -> jobs.Resume -> On.
func (e *Executor) resume(ctx context.Context, a fleet.Action) error {
	if err := e.begin(a, "", nil, nil); err != nil {
		return err
	}
	return e.finishResume(ctx, a)
}

func (e *Executor) finishResume(ctx context.Context, a fleet.Action) error {
	err := e.resumeJobs(ctx, a.Node)
	if errors.Is(err, jobs.ErrNotRegistered) && e.justOn(a.Node) {
		// Powered on a moment ago (by hand, say): its agent registers as it boots (a kubelet
		// its Node). The intent stays; a later repair resumes it.
		e.log.WithField("node", a.Node).WithError(err).Debug("on, not known to the job manager yet")
		return nil
	}
	if err != nil {
		// The intent stays; the next repair tries again.
		return fmt.Errorf("resuming %s: %w", a.Node, err)
	}
	if err := e.step(a, StepSent); err != nil {
		return err
	}
	err = e.write(a, change{
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
	if err := e.fence(ctx, node); err != nil {
		return err
	}
	jctx, cancel := e.jobsCall(ctx)
	defer cancel()
	err := e.o.Jobs.Resume(jctx, node)
	if errors.Is(err, jobs.ErrNotOurs) {
		e.log.WithField("node", node).Info("node drained by someone else since; left to them")
		return nil
	}
	return err
}

// justOn reports whether node is On since less than its pool's boot timeout: a server powered
// on outside rota is still booting then.
func (e *Executor) justOn(node string) bool {
	n, err := e.o.Store.Node(node)
	p := e.pool(node)
	return err == nil && p != nil && n.State == fleet.StateOn &&
		e.o.Clock.Now().Before(n.Since.Add(time.Duration(p.BootTimeout)))
}

// drainedByRota: the store remembers rota drained the node, or the job manager shows rota's
// marker on its drain (the store may be newer than the drain: restored from a backup, or lost).
func drainedByRota(node string, n store.Node, obs Observed) bool {
	return n.DrainedByRota || obs.Jobs[node].DrainedByRota
}

// giveBack resumes a node rota drained, as a repair.
func (e *Executor) giveBack(ctx context.Context, a fleet.Action, detail string) error {
	a.Kind, a.Reason, a.Detail = fleet.Resume, fleet.ReasonRepair, detail
	return e.resume(ctx, a)
}
