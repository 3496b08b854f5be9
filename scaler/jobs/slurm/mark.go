package slurm

import (
	"context"
	"fmt"
	"strings"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/internal/slurmcli"
	"github.com/rotahq/rota/scaler/jobs"
)

// Move marks each job it holds in the job's admin comment (an administrator's field, which
// squeue prints and only an administrator sets), so that after a crash it releases only the
// holds it made: a job someone else held (scontrol hold, requeuehold) carries no mark. The
// job's own admin comment is kept inside the mark and given back once the job is released.
const (
	// movingOff starts the mark: "rota: moving off gpu01".
	movingOff = jobs.Marker + " moving off "
	// wasComment follows the node when the job had an admin comment: "...; was: <comment>".
	wasComment = "; was: "
)

// markFor is the admin comment that marks a job rota holds to move it off node; comment is the
// job's admin comment now (itself a mark when an earlier try was cut short).
func markFor(node, comment string) string {
	if was := originalComment(comment); was != "" {
		return movingOff + node + wasComment + was
	}
	return movingOff + node
}

// movedByRota reports whether an admin comment is rota's mark.
func movedByRota(comment string) bool { return strings.HasPrefix(comment, movingOff) }

// originalComment is the admin comment a job had before rota marked it: comment itself when it
// is no mark.
func originalComment(comment string) string {
	rest, ok := strings.CutPrefix(comment, movingOff)
	if !ok {
		return comment
	}
	_, was, _ := strings.Cut(rest, wasComment)
	return was
}

// adminCommentArgs asks squeue for every job's admin comment (Slurm 22.05's squeue -O
// admin_comment), array elements apart.
func adminCommentArgs() []string {
	return []string{"--noheader", "--all", "--array", "--Format=JobID:0" + slurmcli.Sep + ",admin_comment:0"}
}

// adminComments reads every job's admin comment, by job id ("" for none).
func (m *Manager) adminComments(ctx context.Context) (map[string]string, error) {
	out, err := m.opts.Run(ctx, "squeue", adminCommentArgs()...)
	if err != nil {
		return nil, err
	}
	return parseAdminComments(out)
}

// parseAdminComments reads squeue's "id<Sep>comment" lines (adminCommentArgs). A line without
// the separator continues the comment above it (an admin comment may hold a newline). A comment
// is read as the stretch of the output it spans, never built line by line: one over many lines
// costs no more than its bytes.
func parseAdminComments(out []byte) (map[string]string, error) {
	comments := map[string]string{}
	s := strings.TrimSuffix(string(out), "\n")
	last, from := "", 0 // the job whose comment goes on, and where in s it starts
	for i, at := 0, 0; at <= len(s); i++ {
		line, _, _ := strings.Cut(s[at:], "\n")
		end := at + len(line)
		id, comment, ok := strings.Cut(line, slurmcli.Sep)
		switch {
		case !ok && last != "":
			comments[last] = s[from:end]
		case !ok && line == "" && i == 0:
			// no jobs
		case !ok:
			return nil, fmt.Errorf("%w: squeue admin comments line %d: %s", slurmcli.ErrUnexpected, i+1, errtext.Quote(line))
		default:
			last, from = strings.TrimSpace(id), end-len(comment)
			if err := slurmcli.CheckJobID(last); err != nil {
				return nil, fmt.Errorf("%w: squeue admin comments line %d: %v", slurmcli.ErrUnexpected, i+1, err)
			}
			comments[last] = comment
		}
		at = end + 1
	}
	for id, c := range comments {
		if c == "(null)" {
			comments[id] = ""
		}
	}
	return comments, nil
}

// setAdminComment sets a job's admin comment ("" clears it).
func (m *Manager) setAdminComment(ctx context.Context, id, comment string) error {
	_, err := m.opts.Run(ctx, "scontrol", "update", "jobid="+id, "admincomment="+comment)
	return err
}
