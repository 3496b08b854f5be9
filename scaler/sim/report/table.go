package report

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/rotahq/rota/scaler/sim"
)

// columns are the table's and the CSV's, in order.
func columns() []string {
	return []string{"policy", "server_h", "x_lb", "energy_mwh", "cost", "avoided_mwh", "co2_avoided_t", "util", "wait_p50", "wait_p95",
		"wait_p99", "wait_mean", "extra_p95", "ons_srv_day", "cycles_srv_day", "moves", "lost_unit_h", "not_run", "violations"}
}

// Table writes the comparison as an aligned table.
func (r *Report) Table(w io.Writer) error {
	fmt.Fprintf(w, "%s: %d jobs; fleet %s\n", r.Trace, r.Jobs, r.Fleet)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  %s\n", n)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, c := range columns() {
		fmt.Fprintf(tw, "%s\t", c)
	}
	fmt.Fprintln(tw)
	for _, row := range r.rows(true) {
		for _, v := range row {
			fmt.Fprintf(tw, "%s\t", v)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	r.verdicts(w)
	return r.classTable(w)
}

// rows formats each result; human rows round durations, machine rows give plain numbers.
func (r *Report) rows(human bool) [][]string {
	f := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	d := func(s float64) string {
		if human {
			return short(s)
		}
		return f(s, 1)
	}
	var out [][]string
	for _, x := range r.Results {
		out = append(out, []string{
			x.Policy, f(x.ServerHours, 0), f(x.XLowerBound, 3), f(x.EnergyKWh/1000, 1), f(x.Cost, 0),
			f(x.AvoidedKWh/1000, 1), co2(x, human),
			f(x.Utilisation, 3), d(x.WaitP50), d(x.WaitP95), d(x.WaitP99), d(x.WaitMean), d(x.ExtraWaitP95),
			f(x.OnsPerServerDay, 3), f(x.CyclesPerServerDay, 3), strconv.Itoa(x.Moves), f(x.LostUnitHours, 1),
			strconv.Itoa(len(x.NotRun)), strconv.Itoa(x.Violations),
		})
	}
	return out
}

// co2 is the avoided CO2 in tonnes, "unknown" when no avoided energy has a known intensity,
// and marked "+?" for a person when some of it has none.
func co2(x sim.Result, human bool) string {
	switch {
	case x.CarbonUnknownKWh > 0 && x.AvoidedCO2Kg == 0:
		return "unknown"
	case x.CarbonUnknownKWh > 0 && human:
		return strconv.FormatFloat(x.AvoidedCO2Kg/1000, 'f', 2, 64) + "+?"
	}
	return strconv.FormatFloat(x.AvoidedCO2Kg/1000, 'f', 2, 64)
}

// short writes seconds for a person: 0s, 45s, 5.0m, 2.3h.
func short(sec float64) string {
	switch d := time.Duration(sec * float64(time.Second)); {
	case sec < 0:
		return "-" + short(-sec)
	case d < 2*time.Minute:
		return fmt.Sprintf("%.0fs", sec)
	case d < 2*time.Hour:
		return fmt.Sprintf("%.1fm", sec/60)
	default:
		return fmt.Sprintf("%.1fh", sec/3600)
	}
}
