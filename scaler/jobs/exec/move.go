package exec

import (
	"context"
	"fmt"
	"strings"

	"github.com/rotahq/rota/scaler/jobs"
)

// Move runs move_command NODE EXCLUDE JOB...: EXCLUDE is the comma-separated servers the jobs
// may not start on again. The program must requeue (with the job manager's own requeue) only
// the jobs named that still run on NODE and that the job manager allows to be requeued, must be
// idempotent, and prints {"moved": N}. Without move_command it returns jobs.ErrCannotMove.
func (m *Manager) Move(ctx context.Context, node string, ids, exclude []string) (int, error) {
	if len(m.move.argv) == 0 {
		return 0, fmt.Errorf("moving jobs off %s: %w: no jobs.exec.move_command", node, jobs.ErrCannotMove)
	}
	out, err := m.run(ctx, m.move, append([]string{node, strings.Join(exclude, ",")}, ids...)...)
	if err != nil {
		return 0, fmt.Errorf("moving jobs off %s: %w", node, err)
	}
	n, err := parseMove(out, len(ids))
	if err != nil {
		return 0, fmt.Errorf("moving jobs off %s: %w", node, &Error{Command: m.move.key, Program: m.move.argv[0], Problem: err.Error(), Err: err})
	}
	m.log.WithField("node", node).WithField("jobs", n).Info("moved")
	return n, nil
}
