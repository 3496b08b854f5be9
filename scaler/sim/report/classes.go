package report

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// classTable writes each policy's waits by class (median, 95th percentile and mean), when
// the jobs are of more than one class.
func (r *Report) classTable(w io.Writer) error {
	var classes []string
	seen := map[string]bool{}
	for _, x := range r.Results {
		for _, c := range x.Classes {
			if !seen[c.Class] {
				seen[c.Class] = true
				classes = append(classes, c.Class)
			}
		}
	}
	if len(classes) < 2 {
		return nil
	}
	fmt.Fprintln(w, "waits by class (p50 / p95 / mean):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "policy\t")
	for _, c := range classes {
		fmt.Fprintf(tw, "%s\t", c)
	}
	fmt.Fprintln(tw)
	for _, x := range r.Results {
		if len(x.Classes) == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t", x.Policy)
		for _, name := range classes {
			cell := "-"
			for _, c := range x.Classes {
				if c.Class == name {
					cell = fmt.Sprintf("%s / %s / %s (%d)", short(c.P50), short(c.P95), short(c.Mean), c.Jobs)
				}
			}
			fmt.Fprintf(tw, "%s\t", cell)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
