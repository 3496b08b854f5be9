package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// The columns: fleet first, printed only where a row has one (fleetColumn); then the row's
// key, by and name, which both tables share.
var (
	moneyColumns = []string{"fleet", "by", "name", "currency", "spend", "unknown_power_spend", "failed_spend", "saving", "would_save", "idle_spend", "borrowed_spend"}
	useColumns   = []string{"fleet", "by", "name", "borrowed_server_hours", "drawn_kwh", "measured_kwh", "avoided_kwh", "avoided_kwh_carbon_unknown", "avoided_co2_kg"}
)

// perPool writes a figure kept per pool only: "-" on a department's row (a person) or ""
// (CSV, prec < 0).
func perPool(by string, v float64, prec int) string {
	switch {
	case by == "pool":
		return strconv.FormatFloat(v, 'f', prec, 64)
	case prec < 0:
		return ""
	}
	return "-"
}

func (m MoneyRow) cells(prec int) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	return []string{m.Fleet, m.By, m.Name, m.Currency, f(m.Spend), f(m.UnknownPower), f(m.Failed), f(m.Saving), f(m.WouldSave),
		perPool(m.By, m.Idle, prec), f(m.Borrowed)}
}

func (u UseRow) cells(prec int) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	return []string{u.Fleet, u.By, u.Name, f(u.BorrowedHours), perPool(u.By, u.DrawnKWh, prec), perPool(u.By, u.MeasuredKWh, prec),
		f(u.AvoidedKWh), f(u.CarbonUnknownKWh), f(u.AvoidedCO2Kg)}
}

func (r Report) heading() string {
	so := ""
	if r.Partial {
		so = " so far"
	}
	fleet := ""
	if r.Fleet != "" {
		fleet = ", fleet " + r.Fleet
	}
	return fmt.Sprintf("%s%s (%s to %s, %s%s)", r.Month, so, r.From.Format(time.RFC3339), r.To.Format(time.RFC3339), r.Timezone, fleet)
}

// keyColumns is how many columns (fleet, by, name) lead both tables.
const keyColumns = 3

// fleetColumn says whether a row has a fleet: a single fleet whose targets carry no label
// prints no fleet column.
func (r Report) fleetColumn() bool {
	return slices.ContainsFunc(r.Money, func(m MoneyRow) bool { return m.Fleet != "" }) ||
		slices.ContainsFunc(r.Use, func(u UseRow) bool { return u.Fleet != "" })
}

// dropColumn leaves out column i of every row where the report has no fleet column.
func (r Report) dropColumn(rows [][]string, i int) [][]string {
	if r.fleetColumn() {
		return rows
	}
	out := make([][]string, len(rows))
	for j, row := range rows {
		out[j] = slices.Delete(slices.Clone(row), i, i+1)
	}
	return out
}

// Table writes the report as two aligned tables, money (two decimals) and use.
func (r Report) Table(w io.Writer) error {
	fmt.Fprintln(w, r.heading())
	if len(r.Money) == 0 && len(r.Use) == 0 {
		fmt.Fprintln(w, "no books in Prometheus for this period (is rota scraped? see docs/rules.md)")
		return nil
	}
	for _, t := range []struct {
		columns []string
		rows    [][]string
	}{{moneyColumns, rowsOf(r.Money, MoneyRow.cells, 2)}, {useColumns, rowsOf(r.Use, UseRow.cells, 2)}} {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, row := range r.dropColumn(append([][]string{t.columns}, t.rows...), 0) {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// CSV writes one table: a column "table" (money or use) and every column of both, each row
// leaving the other table's columns empty. Figures at full precision.
func (r Report) CSV(w io.Writer) error {
	blank := func(n int) []string { return make([]string, n) }
	header := append([]string{"table"}, moneyColumns...)
	rows := [][]string{append(header, useColumns[keyColumns:]...)}
	for _, c := range rowsOf(r.Money, MoneyRow.cells, -1) {
		rows = append(rows, append(append([]string{"money"}, c...), blank(len(useColumns)-keyColumns)...))
	}
	for _, c := range rowsOf(r.Use, UseRow.cells, -1) {
		row := append([]string{"use"}, c[:keyColumns]...)
		rows = append(rows, append(append(row, blank(len(moneyColumns)-keyColumns)...), c[keyColumns:]...))
	}
	cw := csv.NewWriter(w)
	if err := cw.WriteAll(r.dropColumn(rows, 1)); err != nil {
		return err
	}
	return cw.Error()
}

// JSON writes the report as one object.
func (r Report) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Month    string     `json:"month"`
		Timezone string     `json:"timezone"`
		From     time.Time  `json:"from"`
		To       time.Time  `json:"to"`
		Partial  bool       `json:"partial"`
		Fleet    string     `json:"fleet,omitempty"`
		Money    []MoneyRow `json:"money"`
		Use      []UseRow   `json:"use"`
	}{r.Month, r.Timezone, r.From, r.To, r.Partial, r.Fleet, nonNil(r.Money), nonNil(r.Use)})
}

func rowsOf[T any](rows []T, cells func(T, int) []string, prec int) [][]string {
	out := make([][]string, 0, len(rows))
	for _, r := range rows {
		out = append(out, cells(r, prec))
	}
	return out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
