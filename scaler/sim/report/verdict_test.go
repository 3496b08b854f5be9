package report

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/rotahq/rota/scaler/sim"
)

// row is a result with the figures verdicts read: x LB, p95 wait (s) and cycles, and a mean
// wait of 60 s.
func row(policy string, xlb, p95, cycles float64) sim.Result {
	return sim.Result{Policy: policy, XLowerBound: xlb, WaitP95: p95, WaitMean: 60, CyclesPerServerDay: cycles}
}

// The NASA sweep's figures (rounded) with rota rows placed around them.
var timeouts = []sim.Result{
	row("lower-bound", 1, 0, 0), row("always-on", 2.145, 0, 0),
	row("idle-1m0s", 1.155, 300, 13.55), row("idle-10m0s", 1.234, 300, 7.42),
	row("idle-20m0s", 1.304, 300, 5.21), row("idle-1h0m0s", 1.483, 296, 2.73),
}

func TestJudge(t *testing.T) {
	cases := []struct {
		name string
		rota sim.Result
		want Verdict
	}{
		{"behind the frontier, dominated", row("rota", 1.362, 301, 5.21), Verdict{
			Baseline: "idle-10m0s", XLBDiff: 0.128, P95Diff: 1, CycleDiff: -2.21,
			DominatedBy: []string{"idle-20m0s"}, Frontier: 1.304, Between: [2]string{"idle-20m0s", "idle-20m0s"}, Gap: 0.058}},
		// halfway between idle-20m (5.21) and idle-10m (7.42) in cycles: the frontier at 1.269
		{"beyond the frontier, not dominating for its wait", row("rota", 1.233, 301, 6.315), Verdict{
			Baseline: "idle-10m0s", XLBDiff: -0.001, P95Diff: 1, CycleDiff: -1.105,
			Frontier: 1.269, Between: [2]string{"idle-20m0s", "idle-10m0s"}, Gap: -0.036}},
		{"dominating the baseline", row("rota", 1.2, 290, 7), Verdict{
			Baseline: "idle-10m0s", Dominates: true, XLBDiff: -0.034, P95Diff: -10, CycleDiff: -0.42,
			Frontier: 1.247, Between: [2]string{"idle-20m0s", "idle-10m0s"}, Gap: -0.047}},
		// the same p95 is not lower: no domination of the baseline, and equal on all three is
		// no domination by it either
		{"equal to the baseline", row("rota", 1.234, 300, 7.42), Verdict{
			Baseline: "idle-10m0s", Frontier: 1.234, Between: [2]string{"idle-10m0s", "idle-10m0s"}}},
		{"more cycles than any timeout", row("rota", 1.1, 300, 20), Verdict{
			Baseline: "idle-10m0s", XLBDiff: -0.134, CycleDiff: 12.58, Between: [2]string{"idle-1m0s", ""}}},
		// idle-20m0s has fewer hours and cycles, the same p95, but a longer mean wait
		{"not dominated where its mean wait is shorter", withMean(row("rota", 1.362, 300, 5.21), 59), Verdict{
			Baseline: "idle-10m0s", XLBDiff: 0.128, CycleDiff: -2.21,
			Frontier: 1.304, Between: [2]string{"idle-20m0s", "idle-20m0s"}, Gap: 0.058}},
		// cheaper and quicker for the jobs it ran, but it gave up on two the baseline ran
		{"jobs left unrun", withNotRun(row("rota", 1.2, 290, 7), 2), Verdict{
			Baseline: "idle-10m0s", XLBDiff: -0.034, P95Diff: -10, CycleDiff: -0.42, NotRunDiff: 2,
			Frontier: 1.247, Between: [2]string{"idle-20m0s", "idle-10m0s"}, Gap: -0.047}},
		{"fewer cycles than any timeout", row("rota", 1.6, 301, 1), Verdict{
			Baseline: "idle-10m0s", XLBDiff: 0.366, P95Diff: 1, CycleDiff: -6.42, Between: [2]string{"", "idle-1h0m0s"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := judge(append(append([]sim.Result{}, timeouts...), c.rota), "idle-10m0s")
			if len(got) != 1 {
				t.Fatalf("%d verdicts, want 1", len(got))
			}
			c.want.Policy = "rota"
			g := got[0]
			for _, f := range []*float64{&g.XLBDiff, &g.P95Diff, &g.CycleDiff, &g.Frontier, &g.Gap} {
				*f = math.Round(*f*1000) / 1000
			}
			c.want.Frontier = math.Round(c.want.Frontier*1000) / 1000
			if !reflect.DeepEqual(g, c.want) {
				t.Errorf("got  %+v\nwant %+v", g, c.want)
			}
		})
	}
}

// TestJudgeOneTimeout: with the baseline alone there is no frontier, only the baseline's
// comparison; a baseline not replayed gives none.
func TestJudgeOneTimeout(t *testing.T) {
	rs := []sim.Result{row("idle-10m0s", 1.234, 300, 7.42), row("rota", 1.1, 290, 7)}
	got := judge(rs, "idle-10m0s")
	if len(got) != 1 || !got[0].Dominates || got[0].Between != [2]string{} || got[0].Frontier != 0 {
		t.Errorf("got %+v", got)
	}
	if got := judge(rs, "idle-5m0s"); len(got) != 1 || got[0].Baseline != "" || got[0].Dominates {
		t.Errorf("no baseline replayed: got %+v", got)
	}
}

// TestVerdictLines: the table's lines say each verdict in words.
func TestVerdictLines(t *testing.T) {
	r := &Report{Results: append(append([]sim.Result{}, timeouts...), row("rota", 1.362, 301, 5.21), row("rota x", 1.233, 301, 6.315),
		row("rota y", 1.234, 300, 7.42), withNotRun(row("rota z", 1.2, 290, 7), 3))}
	r.Judge("idle-10m0s")
	var b bytes.Buffer
	r.verdicts(&b)
	for _, want := range []string{
		"against the idle timeouts (x LB, p95 and mean wait, cycles a server-day):",
		"  rota: 0.058 behind the timeouts' frontier (1.304 at its cycles, those of idle-20m0s); dominated by idle-20m0s; does not dominate idle-10m0s (+0.128 x LB, p95 +1s, -2.210 cycles)",
		"  rota y: on the timeouts' frontier (1.234 at its cycles, those of idle-10m0s); dominated by no timeout; does not dominate idle-10m0s (+0.000 x LB, p95 +0s, +0.000 cycles)",
		"does not dominate idle-10m0s (-0.034 x LB, p95 -10s, -0.420 cycles, +3 jobs not run)",
		"  rota x: 0.036 beyond the timeouts' frontier (1.269 at its cycles, between idle-20m0s and idle-10m0s); dominated by no timeout; does not dominate idle-10m0s",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("lacks %q:\n%s", want, b.String())
		}
	}
}

func withNotRun(r sim.Result, n int) sim.Result {
	r.NotRun = make([]sim.NotRun, n)
	return r
}

func withMean(r sim.Result, mean float64) sim.Result {
	r.WaitMean = mean
	return r
}
