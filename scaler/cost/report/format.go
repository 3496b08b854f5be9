package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

var (
	moneyColumns = []string{"by", "name", "currency", "spend", "unknown_power_spend", "failed_spend", "saving", "would_save", "idle_spend", "borrowed_spend"}
	useColumns   = []string{"by", "name", "borrowed_server_hours", "drawn_kwh", "measured_kwh", "avoided_kwh", "avoided_kwh_carbon_unknown", "avoided_co2_kg"}
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
	return []string{m.By, m.Name, m.Currency, f(m.Spend), f(m.UnknownPower), f(m.Failed), f(m.Saving), f(m.WouldSave),
		perPool(m.By, m.Idle, prec), f(m.Borrowed)}
}

func (u UseRow) cells(prec int) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	return []string{u.By, u.Name, f(u.BorrowedHours), perPool(u.By, u.DrawnKWh, prec), perPool(u.By, u.MeasuredKWh, prec),
		f(u.AvoidedKWh), f(u.CarbonUnknownKWh), f(u.AvoidedCO2Kg)}
}

func (r Report) heading() string {
	so := ""
	if r.Partial {
		so = " so far"
	}
	return fmt.Sprintf("%s%s (%s to %s, %s)", r.Month, so, r.From.Format(time.RFC3339), r.To.Format(time.RFC3339), r.Timezone)
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
		for _, row := range append([][]string{t.columns}, t.rows...) {
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
	cw := csv.NewWriter(w)
	header := append([]string{"table"}, moneyColumns...)
	header = append(header, useColumns[2:]...)
	if err := cw.Write(header); err != nil {
		return err
	}
	blank := func(n int) []string { return make([]string, n) }
	for _, c := range rowsOf(r.Money, MoneyRow.cells, -1) {
		if err := cw.Write(append(append([]string{"money"}, c...), blank(len(useColumns)-2)...)); err != nil {
			return err
		}
	}
	for _, c := range rowsOf(r.Use, UseRow.cells, -1) {
		row := append([]string{"use"}, c[:2]...)
		row = append(append(row, blank(len(moneyColumns)-2)...), c[2:]...)
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
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
		Money    []MoneyRow `json:"money"`
		Use      []UseRow   `json:"use"`
	}{r.Month, r.Timezone, r.From, r.To, r.Partial, nonNil(r.Money), nonNil(r.Use)})
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
