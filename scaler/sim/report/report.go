package report

import (
	"strings"

	"github.com/rotahq/rota/scaler/sim"
)

// Report is one trace's comparison.
type Report struct {
	Trace string `json:"trace"`
	Jobs  int    `json:"jobs"`
	// Fleet says how many servers and how the number was chosen.
	Fleet string   `json:"fleet"`
	Notes []string `json:"notes"`
	// T0 is the first submission (seconds in the trace); Need is servers needed over time.
	T0      int64        `json:"t0"`
	Need    []sim.Point  `json:"-"`
	Results []sim.Result `json:"results"`
	// Verdicts place rota's rows against the idle timeouts (see Judge): none until judged.
	Verdicts []Verdict `json:"verdicts,omitempty"`
}

// New gathers a Report from an environment and its results.
func New(name string, e *sim.Env, results []sim.Result, notes ...string) *Report {
	return &Report{
		Trace: name, Jobs: len(e.Jobs), Fleet: e.Describe(),
		Notes: append(append(append(append([]string{}, e.Trace.Notes...), notes...), belowAlwaysOn(results)...), alike(results)...),
		T0:    e.T0, Need: e.Need, Results: results,
	}
}

// split sorts results into the idle timeouts' rows and the others under test (rota's), in
// their order, leaving out the lower bound and always-on.
func split(results []sim.Result) (timeouts, others []sim.Result) {
	for _, x := range results {
		switch {
		case x.Policy == "lower-bound" || x.Policy == "always-on":
		case strings.HasPrefix(x.Policy, "idle-"):
			timeouts = append(timeouts, x)
		default:
			others = append(others, x)
		}
	}
	return timeouts, others
}

// belowAlwaysOn is a note naming the rows whose p95 wait is below always-on's (extra_p95
// under 0), and why that can be: none when there are none.
func belowAlwaysOn(results []sim.Result) []string {
	var rows []string
	for _, x := range results {
		if x.ExtraWaitP95 < 0 {
			rows = append(rows, x.Policy)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	return []string{"extra_p95 below 0 (" + strings.Join(rows, ", ") + "): always-on is no floor on waits; jobs are placed " +
		"first-fit in arrival order with EASY backfilling, so where they queue, the servers a policy has off send them " +
		"elsewhere and the queue drains in another order, which can shorten its p95"}
}

// alike is a note naming the rows under test (rota's) that replayed as another such row did:
// the same server-hours, waits and power-ons and -offs, so their settings changed no decision
// on this trace (a sweep's spares quantiles where the forecast's rise within a boot is 0). None
// when every row differs.
func alike(results []sim.Result) []string {
	_, others := split(results)
	type figures struct {
		hours, p95, mean float64
		ons, offs        int
	}
	var order []figures
	groups := map[figures][]string{}
	for _, x := range others {
		f := figures{x.ServerHours, x.WaitP95, x.WaitMean, x.PowerOns, x.PowerOffs}
		if groups[f] == nil {
			order = append(order, f)
		}
		groups[f] = append(groups[f], x.Policy)
	}
	var sets []string
	for _, f := range order {
		if g := groups[f]; len(g) > 1 {
			sets = append(sets, strings.Join(g, " = "))
		}
	}
	if len(sets) == 0 {
		return nil
	}
	return []string{"replayed alike (the same server-hours, waits, power-ons and -offs; their settings changed no decision on this trace): " +
		strings.Join(sets, "; ")}
}
