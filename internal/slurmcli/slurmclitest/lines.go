// Package slurmclitest writes sinfo and squeue output as rota's commands print it, for the
// tests of package slurmcli and of the Slurm adapter. It imports nothing of slurmcli, so
// slurmcli's own tests can use it; slurmcli's tests hold Sep to slurmcli.Sep.
package slurmclitest

import "strings"

// Sep is the field separator of rota's sinfo and squeue output (slurmcli.Sep).
const Sep = "\x1f"

// The tests write sinfo and squeue lines with '|' between the fields rota read first, and
// leave out the fields added since (features, gres, weight and memory of a node; time limit,
// start, constraint, requested nodes, licenses, comment and priority (1) of a job, its
// JobArrayID: its id, as for a job neither an array's task nor a heterogeneous job's
// component, its CPUs per GPU (none), its OverSubscribe (OK) and its user (root, the lab's)):
// Sinfo and Squeue add those with neutral values and put Sep between the fields, as the
// commands print them. A line with another number of fields (a test of bad input) only has its
// separators changed.

// Sinfo is sinfo's output for the lines of out.
func Sinfo(out string) []byte {
	return legacy(out, 6, func([]string) []string { return []string{"(null)", "(null)", "1", "1000"} })
}

// Squeue is squeue's output for the lines of out.
func Squeue(out string) []byte {
	return legacy(out, 16, func(f []string) []string {
		return []string{"UNLIMITED", "2026-11-29T22:00:54", "(null)", "(null)", "(null)", "(null)", "1", f[0], "N/A", "OK", "root"}
	})
}

// The output of scontrol show config with Slurm's power saving on, and off.
const (
	PowerSaveOn  = "Configuration data as of 2026-11-29T22:00:00\nResumeProgram           = /usr/bin/rota-resume\nSuspendProgram          = /usr/bin/rota-suspend\nSuspendTime             = 3600 sec\n"
	PowerSaveOff = "Configuration data as of 2026-11-29T22:00:00\nResumeProgram           = (null)\nSuspendProgram          = (null)\nSuspendTime             = NONE\n"
)

// legacy adds rest(f) to each line of first fields f.
func legacy(out string, first int, rest func(f []string) []string) []byte {
	var b strings.Builder
	for _, line := range strings.SplitAfter(out, "\n") {
		body, nl := strings.CutSuffix(line, "\n")
		if body == "" {
			b.WriteString(line)
			continue
		}
		f := strings.SplitN(body, "|", first)
		if len(f) == first {
			f = append(f, rest(f)...)
		}
		b.WriteString(strings.Join(f, Sep))
		if nl {
			b.WriteString("\n")
		}
	}
	return []byte(b.String())
}
