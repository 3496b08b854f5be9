package slurm

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/internal/errtext"
)

// Move implements jobs.Mover with scontrol: requeuehold (each job leaves node and waits,
// held, so the scheduler cannot start it again before its exclusions are set), update
// excnodelist (the job's own exclusions plus exclude), release. Only jobs Slurm lets be
// requeued and that still run on node are held; a job rota held that a crash left held (its
// reason says it was requeued in held state) is finished. It needs jobs.slurm.requeue (else
// ErrRequeueDisabled).
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
	if err != nil {
		return 0, fmt.Errorf("moving jobs off %s: %w", node, err)
	}
	var hold, finish []Job
	for _, j := range queue {
		switch {
		case !slices.Contains(ids, j.ID):
		case j.State == "running" && j.Requeue && slices.Contains(j.NodeList, node):
			hold = append(hold, j)
			finish = append(finish, j)
		case j.Pending() && heldByRequeue(j.Reason):
			finish = append(finish, j)
		}
	}
	if len(hold) > 0 {
		if _, err := m.opts.Run(ctx, "scontrol", "requeuehold", joinIDs(hold)); err != nil {
			return 0, fmt.Errorf("moving jobs off %s: %w", node, err)
		}
	}
	for _, j := range finish {
		away := slices.Clone(j.Exclude)
		for _, n := range exclude {
			if !slices.Contains(away, n) {
				away = append(away, n)
			}
		}
		if _, err := m.opts.Run(ctx, "scontrol", "update", "jobid="+j.ID, "excnodelist="+strings.Join(away, ",")); err != nil {
			return 0, fmt.Errorf("moving job %s off %s: %w", j.ID, node, err)
		}
	}
	if len(finish) > 0 {
		if _, err := m.opts.Run(ctx, "scontrol", "release", joinIDs(finish)); err != nil {
			return 0, fmt.Errorf("moving jobs off %s: %w", node, err)
		}
	}
	m.opts.Log.WithFields(logrus.Fields{"node": node, "jobs": len(hold), "finished": len(finish) - len(hold)}).Info("moved jobs in slurm")
	return len(hold), nil
}

// heldByRequeue reports whether a pending job waits because scontrol requeuehold held it.
func heldByRequeue(reason string) bool {
	r := strings.ToLower(reason)
	return strings.Contains(r, "requeued in held state") || strings.HasPrefix(reason, "JobHeld")
}

// jobID reports whether id reads as a Slurm job id: "123" or an array element "123_4".
func jobID(id string) bool {
	head, tail, arr := strings.Cut(id, "_")
	digits := func(s string) bool { return s != "" && len(s) <= 12 && strings.Trim(s, "0123456789") == "" }
	return digits(head) && (!arr || digits(tail))
}

func joinIDs(js []Job) string {
	ids := make([]string, len(js))
	for i, j := range js {
		ids[i] = j.ID
	}
	return strings.Join(ids, ",")
}
