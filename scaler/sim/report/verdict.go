package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/rotahq/rota/scaler/sim"
)

// Verdict is where one of rota's rows lies against the idle timeouts: the baseline the goals
// name (the 10-minute timeout, say), and the frontier of every timeout replayed (a sweep).
// Server-hours are compared as the lower bound's multiple (x LB), cycles as power-offs per
// server per day.
type Verdict struct {
	Policy string `json:"policy"`
	// Baseline is the timeout's row; Dominates: no more server-hours, a lower p95 wait, no
	// more cycles and no more jobs left unrun than it; the differences are this row's less the
	// baseline's.
	Baseline   string  `json:"baseline,omitempty"`
	Dominates  bool    `json:"dominates_baseline"`
	XLBDiff    float64 `json:"x_lb_diff"`
	P95Diff    float64 `json:"wait_p95_diff_s"`
	CycleDiff  float64 `json:"cycles_diff"`
	NotRunDiff int     `json:"not_run_diff"`
	// DominatedBy are the timeouts with no more server-hours, p95 and mean wait, cycles and
	// jobs left unrun, and less of one (the mean too: what warm spares buy shows there, seldom
	// in p95). A row's figures count the jobs it ran: one that gives up on jobs looks cheap.
	DominatedBy []string `json:"dominated_by"`
	// Frontier is the timeouts' x LB at this row's cycles, linear between the two timeouts
	// around them (Between; one named twice where the cycles are its own); Gap this row's x LB
	// less it (negative: beyond the frontier). Outside the timeouts' cycles, Between names only
	// the nearest, second where the row has fewer cycles than any, first where more, and
	// Frontier is 0.
	Frontier float64   `json:"frontier_x_lb,omitempty"`
	Between  [2]string `json:"frontier_between"`
	Gap      float64   `json:"frontier_gap,omitempty"`
}

// Judge sets the verdicts of the report's rota rows (every row neither a bound, always-on nor
// an idle timeout) against the idle-timeout row named baseline, and against the frontier of
// the timeouts when there are two or more.
func (r *Report) Judge(baseline string) {
	r.Verdicts = judge(r.Results, baseline)
}

func judge(results []sim.Result, baseline string) []Verdict {
	timeouts, rows := split(results)
	// The frontier runs through the timeouts by cycles (fewest first).
	slices.SortStableFunc(timeouts, func(a, b sim.Result) int { return cmp.Compare(a.CyclesPerServerDay, b.CyclesPerServerDay) })
	var out []Verdict
	for _, x := range rows {
		v := Verdict{Policy: x.Policy}
		for _, t := range timeouts {
			if t.Policy == baseline {
				v.NotRunDiff = len(x.NotRun) - len(t.NotRun)
				v.Baseline = t.Policy
				v.Dominates = x.XLowerBound <= t.XLowerBound && x.WaitP95 < t.WaitP95 && x.CyclesPerServerDay <= t.CyclesPerServerDay && v.NotRunDiff <= 0
				v.XLBDiff, v.P95Diff, v.CycleDiff = x.XLowerBound-t.XLowerBound, x.WaitP95-t.WaitP95, x.CyclesPerServerDay-t.CyclesPerServerDay
			}
			if dominatedBy(x, t) {
				v.DominatedBy = append(v.DominatedBy, t.Policy)
			}
		}
		if len(timeouts) > 1 {
			v.frontier(x, timeouts)
		}
		out = append(out, v)
	}
	return out
}

// dominatedBy reports whether t is no worse than x on server-hours, p95 and mean wait, cycles
// and jobs left unrun, and better on one.
func dominatedBy(x, t sim.Result) bool {
	a := [5]float64{t.XLowerBound, t.WaitP95, t.WaitMean, t.CyclesPerServerDay, float64(len(t.NotRun))}
	b := [5]float64{x.XLowerBound, x.WaitP95, x.WaitMean, x.CyclesPerServerDay, float64(len(x.NotRun))}
	better := false
	for k := range a {
		if a[k] > b[k] {
			return false
		}
		better = better || a[k] < b[k]
	}
	return better
}

// frontier places row x against the timeouts, sorted by cycles.
func (v *Verdict) frontier(x sim.Result, timeouts []sim.Result) {
	c := x.CyclesPerServerDay
	first, last := timeouts[0], timeouts[len(timeouts)-1]
	switch {
	case c < first.CyclesPerServerDay:
		v.Between = [2]string{"", first.Policy}
		return
	case c > last.CyclesPerServerDay:
		v.Between = [2]string{last.Policy, ""}
		return
	}
	for k := 1; k < len(timeouts); k++ {
		lo, hi := timeouts[k-1], timeouts[k]
		if c > hi.CyclesPerServerDay {
			continue
		}
		if c == lo.CyclesPerServerDay || c == hi.CyclesPerServerDay {
			at := lo
			if c == hi.CyclesPerServerDay {
				at = hi
			}
			v.Frontier, v.Between, v.Gap = at.XLowerBound, [2]string{at.Policy, at.Policy}, x.XLowerBound-at.XLowerBound
			return
		}
		// lo's cycles < c < hi's
		f := lo.XLowerBound + (c-lo.CyclesPerServerDay)/(hi.CyclesPerServerDay-lo.CyclesPerServerDay)*(hi.XLowerBound-lo.XLowerBound)
		v.Frontier, v.Between, v.Gap = f, [2]string{lo.Policy, hi.Policy}, x.XLowerBound-f
		return
	}
}

// verdicts writes the verdicts under the table, a line each.
func (r *Report) verdicts(w io.Writer) {
	if len(r.Verdicts) == 0 {
		return
	}
	fmt.Fprintln(w, "against the idle timeouts (x LB, p95 and mean wait, cycles a server-day):")
	for _, v := range r.Verdicts {
		var parts []string
		switch {
		case v.Between[0] != "" && v.Between[1] != "":
			side := fmt.Sprintf("%.3f behind", v.Gap)
			switch {
			case math.Abs(v.Gap) < 0.0005:
				side = "on"
			case v.Gap < 0:
				side = fmt.Sprintf("%.3f beyond", -v.Gap)
			}
			where := "between " + v.Between[0] + " and " + v.Between[1]
			if v.Between[0] == v.Between[1] {
				where = "those of " + v.Between[0]
			}
			parts = append(parts, fmt.Sprintf("%s the timeouts' frontier (%.3f at its cycles, %s)", side, v.Frontier, where))
		case v.Between[0] != "":
			parts = append(parts, "more cycles than any timeout ("+v.Between[0]+" the most)")
		case v.Between[1] != "":
			parts = append(parts, "fewer cycles than any timeout ("+v.Between[1]+" the fewest)")
		}
		if len(v.DominatedBy) > 0 {
			parts = append(parts, "dominated by "+strings.Join(v.DominatedBy, ", "))
		} else if v.Between != [2]string{} {
			parts = append(parts, "dominated by no timeout")
		}
		if v.Baseline != "" {
			word := "does not dominate"
			if v.Dominates {
				word = "dominates"
			}
			unrun := ""
			if v.NotRunDiff != 0 {
				unrun = fmt.Sprintf(", %+d jobs not run", v.NotRunDiff)
			}
			parts = append(parts, fmt.Sprintf("%s %s (%+.3f x LB, p95 %+.0fs, %+.3f cycles%s)", word, v.Baseline, v.XLBDiff, v.P95Diff, v.CycleDiff, unrun))
		}
		fmt.Fprintf(w, "  %s: %s\n", v.Policy, strings.Join(parts, "; "))
	}
}
