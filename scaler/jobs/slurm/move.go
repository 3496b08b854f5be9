package slurm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/scaler/jobs"
)

// Move implements jobs.Mover with scontrol: update admincomment (rota's mark, see markFor),
// requeuehold (each job leaves node and waits, held, so the scheduler cannot start it again
// before its exclusions are set), update excnodelist (the job's own exclusions plus exclude),
// release, update admincomment (the job's own admin comment back), each job named alone
// (Job.Element: an array's task, never its whole array). Only jobs Slurm lets be requeued
// (movable: never a heterogeneous job's component) and that still run on node are held. A job rota held that a crash left held (its
// reason says it was requeued in held state, and it carries rota's mark) is finished; a job
// held by anyone else, or one rota marked that someone held again since, is never released.
// It needs jobs.slurm.requeue (else ErrRequeueDisabled).
func (m *Manager) Move(ctx context.Context, node string, ids, exclude []string) (int, error) {
	if !m.opts.Requeue {
		return 0, fmt.Errorf("moving jobs off %s: %w", node, ErrRequeueDisabled)
	}
	for _, id := range ids {
		if !jobID(id) {
			return 0, fmt.Errorf("moving jobs off %s: bad job id %s", node, errtext.Quote(id))
		}
	}
	for _, n := range append([]string{node}, exclude...) {
		if n == "" || strings.ContainsAny(n, "[],= \"") {
			return 0, fmt.Errorf("moving jobs off %s: %w: bad node name %s", node, ErrUnknownNode, errtext.Quote(n))
		}
	}
	queue, err := m.cli.Jobs(ctx)
	if err == nil {
		err = m.cli.WithExcludes(ctx, queue)
	}
	var comments map[string]string
	if err == nil {
		comments, err = m.adminComments(ctx)
	}
	if err != nil {
		return 0, fmt.Errorf("moving jobs off %s: %w", node, err)
	}
	var hold, finish, restore []Job
	for _, j := range queue {
		ours := movedByRota(comments[j.ID])
		switch {
		case !slices.Contains(ids, j.ID):
		case j.State == "running" && movable(j) && slices.Contains(j.NodeList, node):
			hold = append(hold, j)
			finish = append(finish, j)
			restore = append(restore, j)
		case j.Pending() && heldByRequeue(j.Reason) && ours:
			finish = append(finish, j)
			restore = append(restore, j)
		case ours && !heldByRequeue(j.Reason):
			// Released before a crash, or held again since by someone else (it stays held):
			// only its admin comment is given back.
			restore = append(restore, j)
		}
	}
	// The mark first: a job rota holds is one it may release, after a crash too.
	for _, j := range hold {
		if err := m.setAdminComment(ctx, j.Element, markFor(node, comments[j.ID])); err != nil {
			return 0, fmt.Errorf("moving job %s off %s: %w", j.ID, node, err)
		}
	}
	// From the hold on, a step that fails does not stop the next ones: a job rota held is
	// released whatever else failed (an exclusion Slurm refuses, a node it does not know), or it
	// would wait, held, for good once the move is recorded failed. Every failure is returned.
	var errs []error
	if len(hold) > 0 {
		// Incomplete: only a job still running (configuring, stopped, suspended) is requeued.
		// Slurm requeues an ended job it still remembers too, and runs it again: one that ended
		// since the queue was read (completed, or cancelled by its user) would be revived.
		if _, err := m.opts.Run(ctx, "scontrol", "requeuehold", "Incomplete", joinIDs(hold)); err != nil {
			errs = append(errs, fmt.Errorf("moving jobs off %s: %w", node, err))
		}
	}
	for _, j := range finish {
		away := slices.Clone(j.Exclude)
		for _, n := range exclude {
			if !slices.Contains(away, n) {
				away = append(away, n)
			}
		}
		if _, err := m.opts.Run(ctx, "scontrol", "update", "jobid="+j.Element, "excnodelist="+strings.Join(away, ",")); err != nil {
			errs = append(errs, fmt.Errorf("moving job %s off %s: %w", j.ID, node, err))
		}
	}
	held := map[string]bool{} // by ID: the jobs whose release failed
	if len(finish) > 0 {
		if _, err := m.opts.Run(ctx, "scontrol", "release", joinIDs(finish)); err != nil {
			// Held, they would wait for good: the executor keeps the move and calls again.
			errs = append(errs, fmt.Errorf("moving jobs off %s: %w: %w", node, jobs.ErrMoveUnfinished, err))
			for _, j := range finish {
				held[j.ID] = true
			}
		}
	}
	// The mark last: until the release, it says the hold is rota's (a release that failed keeps
	// it: the repair of a move a crash cut short releases only a job so marked).
	for _, j := range restore {
		if held[j.ID] {
			continue
		}
		if err := m.setAdminComment(ctx, j.Element, originalComment(comments[j.ID])); err != nil {
			errs = append(errs, fmt.Errorf("moving job %s off %s: %w", j.ID, node, err))
		}
	}
	if len(errs) > 0 {
		return len(hold), errors.Join(errs...)
	}
	m.opts.Log.WithFields(logrus.Fields{"node": node, "jobs": len(hold), "finished": len(finish) - len(hold)}).Info("moved jobs in slurm")
	return len(hold), nil
}

// heldByRequeue reports whether a pending job waits because scontrol requeuehold held it: Slurm
// 22.05 prints the description "job requeued in held state" as its reason (also once someone
// holds it again; a job a failed prolog held reads "launch failed requeued held").
func heldByRequeue(reason string) bool {
	return strings.Contains(strings.ToLower(reason), "requeued in held state")
}

// jobID reports whether id reads as a Slurm job id: "123" or an array element "123_4".
func jobID(id string) bool {
	head, tail, arr := strings.Cut(id, "_")
	digits := func(s string) bool { return s != "" && len(s) <= 12 && strings.Trim(s, "0123456789") == "" }
	return digits(head) && (!arr || digits(tail))
}

// movable reports whether Move may requeue a job: Slurm lets it be requeued (Requeue), and
// requeueing it takes nothing else: not a heterogeneous job's component (Slurm requeues the
// whole job, its other components on other servers too, and refuses a component that is not
// the first).
func movable(j Job) bool { return j.Requeue && !j.Heterogeneous() }

// joinIDs names the jobs for scontrol, each alone (Job.Element): an array's task by its own id
// would be the whole array when that id is also the array's.
func joinIDs(js []Job) string {
	ids := make([]string, len(js))
	for i, j := range js {
		ids[i] = j.Element
	}
	return strings.Join(ids, ",")
}
