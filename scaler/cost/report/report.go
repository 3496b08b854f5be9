package report

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/alerts"
	"github.com/rotahq/rota/scaler/cost"
	"github.com/rotahq/rota/scaler/promfacts"
)

// Period is the time a report covers: a calendar month in a time zone, up to now when the month
// is not over (Partial).
type Period struct {
	Month    string
	Timezone string
	From, To time.Time
	Partial  bool
}

// MonthPeriod is the calendar month written YYYY-MM, in loc; a month that has not begun at
// now is an error.
func MonthPeriod(month string, loc *time.Location, now time.Time) (Period, error) {
	start, err := time.ParseInLocation("2006-01", month, loc)
	if err != nil {
		return Period{}, fmt.Errorf("month %q is not YYYY-MM", month)
	}
	p := Period{Month: month, Timezone: loc.String(), From: start, To: start.AddDate(0, 1, 0)}
	if !now.After(p.From) {
		return Period{}, fmt.Errorf("month %s has not begun", month)
	}
	if now.Before(p.To) {
		p.To, p.Partial = now, true
	}
	return p, nil
}

// MoneyRow is what one department or pool spent and saved, in one currency.
type MoneyRow struct {
	// Fleet is the target label fleet of the series counted (docs/fleets.md); empty where
	// they carry none.
	Fleet    string  `json:"fleet,omitempty"`
	By       string  `json:"by"`
	Name     string  `json:"name"`
	Currency string  `json:"currency"`
	Spend    float64 `json:"spend"`
	// UnknownPower and Failed are the part of Spend booked for servers whose power state was
	// unknown (as if on) and for failed servers left on.
	UnknownPower float64 `json:"unknown_power_spend"`
	Failed       float64 `json:"failed_spend"`
	Saving       float64 `json:"saving"`
	// WouldSave is dry run's would-have-saved.
	WouldSave float64 `json:"would_save"`
	// Idle is the spend on capacity no job held (per pool only: a server's idle time is its
	// own, whoever it is charged to).
	Idle float64 `json:"idle_spend"`
	// Borrowed is the spend on capacity held on other departments' servers: charged to the
	// borrower (by department), or lent out of the pool (by pool).
	Borrowed float64 `json:"borrowed_spend"`
}

// UseRow is what one department or pool used, drew and avoided.
type UseRow struct {
	Fleet         string  `json:"fleet,omitempty"`
	By            string  `json:"by"`
	Name          string  `json:"name"`
	BorrowedHours float64 `json:"borrowed_server_hours"`
	// DrawnKWh is the energy drawn, MeasuredKWh the part of it a BMC or the GPUs measured (per
	// pool only: 0 on a department's row).
	DrawnKWh    float64 `json:"drawn_kwh"`
	MeasuredKWh float64 `json:"measured_kwh"`
	AvoidedKWh  float64 `json:"avoided_kwh"`
	// CarbonUnknownKWh is the part of AvoidedKWh whose region's carbon intensity was unknown:
	// its CO2 is not in AvoidedCO2Kg.
	CarbonUnknownKWh float64 `json:"avoided_kwh_carbon_unknown"`
	AvoidedCO2Kg     float64 `json:"avoided_co2_kg"`
}

// Report is one period of the books, by department and by pool, each fleet's apart.
type Report struct {
	Period
	// Fleet is the one fleet read (prometheus.fleet); empty, every fleet in Prometheus, a row
	// per fleet where their series carry the label.
	Fleet string
	Money []MoneyRow
	Use   []UseRow
}

// Querier is the part of Prometheus' API a report needs.
type Querier interface {
	Query(ctx context.Context, query string, ts time.Time, opts ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error)
}

// Build reads the period's books of fleet (prometheus.fleet: every selector asks for it), or,
// fleet empty, of every fleet in Prometheus: each figure is the cookbook's sum of increase()
// over the period, evaluated at its end, kept apart by the label fleet as the rules keep it
// (two fleets' pools of one name are two rows). A query that fails or answers with warnings
// (partial data) fails the report: a bill with holes is no bill.
func Build(ctx context.Context, q Querier, p Period, fleet string) (Report, error) {
	r := Report{Period: p, Fleet: fleet}
	rng := fmt.Sprintf("[%ds]", int64(p.To.Sub(p.From).Seconds()))
	inc := func(series string, matchers ...string) string {
		return fmt.Sprintf("increase(%s%s)", alerts.Selector(fleet, series, matchers...), rng)
	}
	fleetOf := func(s *model.Sample) string { return string(s.Metric[alerts.FleetLabel]) }
	for _, by := range []string{"department", "pool"} {
		money := map[[3]string]*MoneyRow{}
		row := func(fleet, name, cur string) *MoneyRow {
			k := [3]string{fleet, name, cur}
			if money[k] == nil {
				money[k] = &MoneyRow{Fleet: fleet, By: by, Name: name, Currency: cur}
			}
			return money[k]
		}
		// poolOnly: the series has no department label (a server's own series).
		moneyQueries := []struct {
			series   string
			matchers []string
			poolOnly bool
			field    func(*MoneyRow) *float64
		}{
			{alerts.CostSpend, nil, false, func(m *MoneyRow) *float64 { return &m.Spend }},
			{alerts.CostSpend, []string{`power="unknown"`}, false, func(m *MoneyRow) *float64 { return &m.UnknownPower }},
			{alerts.CostSpend, []string{`power="failed"`}, false, func(m *MoneyRow) *float64 { return &m.Failed }},
			{alerts.CostSaving, nil, false, func(m *MoneyRow) *float64 { return &m.Saving }},
			{alerts.CostWouldSave, nil, false, func(m *MoneyRow) *float64 { return &m.WouldSave }},
			{alerts.CostNodeIdle, nil, true, func(m *MoneyRow) *float64 { return &m.Idle }},
			{alerts.CostBorrowed, nil, false, func(m *MoneyRow) *float64 { return &m.Borrowed }},
		}
		for _, mq := range moneyQueries {
			if mq.poolOnly && by != "pool" {
				continue
			}
			vec, err := query(ctx, q, fmt.Sprintf("sum by (%s, %s, currency) (%s)", alerts.FleetLabel, by, inc(mq.series, mq.matchers...)), p.To)
			if err != nil {
				return Report{}, err
			}
			for _, s := range vec {
				*mq.field(row(fleetOf(s), string(s.Metric[model.LabelName(by)]), string(s.Metric["currency"]))) += float64(s.Value)
			}
		}
		use := map[[2]string]*UseRow{}
		urow := func(fleet, name string) *UseRow {
			k := [2]string{fleet, name}
			if use[k] == nil {
				use[k] = &UseRow{Fleet: fleet, By: by, Name: name}
			}
			return use[k]
		}
		sum := func(series string, matchers ...string) string {
			return fmt.Sprintf("sum by (%s, %s) (%s)", alerts.FleetLabel, by, inc(series, matchers...))
		}
		// Measured energy: a BMC's reading, or a GPU pool's base_watts plus its GPUs' readings.
		measured := fmt.Sprintf(`source=~"%s|%s"`, cost.SourceBMC, cost.SourceGPU)
		useQueries := []struct {
			expr     string
			poolOnly bool
			field    func(*UseRow) *float64
		}{
			{sum(alerts.CostBorrowedSeconds) + " / 3600", false, func(u *UseRow) *float64 { return &u.BorrowedHours }},
			{sum(alerts.EnergyNode) + " / 3.6e6", true, func(u *UseRow) *float64 { return &u.DrawnKWh }},
			{sum(alerts.EnergyNode, measured) + " / 3.6e6", true, func(u *UseRow) *float64 { return &u.MeasuredKWh }},
			{sum(alerts.EnergyAvoided) + " / 3.6e6", false, func(u *UseRow) *float64 { return &u.AvoidedKWh }},
			{sum(alerts.EnergyAvoided, `carbon="unknown"`) + " / 3.6e6", false, func(u *UseRow) *float64 { return &u.CarbonUnknownKWh }},
			{sum(alerts.CarbonAvoided) + " / 1000", false, func(u *UseRow) *float64 { return &u.AvoidedCO2Kg }},
		}
		for _, uq := range useQueries {
			if uq.poolOnly && by != "pool" {
				continue
			}
			vec, err := query(ctx, q, uq.expr, p.To)
			if err != nil {
				return Report{}, err
			}
			for _, s := range vec {
				*uq.field(urow(fleetOf(s), string(s.Metric[model.LabelName(by)]))) += float64(s.Value)
			}
		}
		for _, m := range money {
			r.Money = append(r.Money, *m)
		}
		for _, u := range use {
			r.Use = append(r.Use, *u)
		}
	}
	order := func(by string) int { return strings.Index("department pool", by) }
	slices.SortFunc(r.Money, func(a, b MoneyRow) int {
		if c := order(a.By) - order(b.By); c != 0 {
			return c
		}
		return strings.Compare(a.Fleet+"\x00"+a.Name+"\x00"+a.Currency, b.Fleet+"\x00"+b.Name+"\x00"+b.Currency)
	})
	slices.SortFunc(r.Use, func(a, b UseRow) int {
		if c := order(a.By) - order(b.By); c != 0 {
			return c
		}
		return strings.Compare(a.Fleet+"\x00"+a.Name, b.Fleet+"\x00"+b.Name)
	})
	return r, nil
}

// query runs one instant query that must answer a vector of finite values.
func query(ctx context.Context, q Querier, expr string, at time.Time) (model.Vector, error) {
	// Infos (hints, such as a counter name without _total) do not make an answer partial.
	v, warnings, _, err := q.Query(ctx, expr, at)
	if err != nil {
		return nil, fmt.Errorf("querying prometheus (%s): %w", expr, err)
	}
	if len(warnings) > 0 {
		return nil, fmt.Errorf("prometheus answered %s with warnings (partial data): %s", expr, strings.Join(warnings, "; "))
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("prometheus answered %s with a %s, not a vector", expr, promfacts.AnswerType(v))
	}
	for _, s := range vec {
		if math.IsNaN(float64(s.Value)) || math.IsInf(float64(s.Value), 0) {
			return nil, fmt.Errorf("prometheus answered %s with %v for %s", expr, s.Value, s.Metric)
		}
	}
	return vec, nil
}
