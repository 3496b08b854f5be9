package slurm

import "strings"

// The tests write sinfo and squeue lines with '|' between the fields rota read first, and
// leave out the fields added since (features, gres, weight and memory of a node; time limit,
// start, constraint, requested nodes, licenses and comment of a job): sinfoOut and squeueOut
// add those with neutral values and put sep between the fields, as the commands print them.
// A line with another number of fields (a test of bad input) only has its separators changed.
var (
	sinfoRest  = []string{"(null)", "(null)", "1", "1000"}
	squeueRest = []string{"UNLIMITED", "2026-11-29T22:00:54", "(null)", "(null)", "(null)", "(null)"}
)

func sinfoOut(out string) []byte  { return legacy(out, 6, sinfoRest) }
func squeueOut(out string) []byte { return legacy(out, 16, squeueRest) }

func legacy(out string, first int, rest []string) []byte {
	var b strings.Builder
	for _, line := range strings.SplitAfter(out, "\n") {
		body, nl := strings.CutSuffix(line, "\n")
		if body == "" {
			b.WriteString(line)
			continue
		}
		f := strings.SplitN(body, "|", first)
		if len(f) == first {
			f = append(f, rest...)
		}
		b.WriteString(strings.Join(f, sep))
		if nl {
			b.WriteString("\n")
		}
	}
	return []byte(b.String())
}
