package report

import (
	"context"
	"encoding/csv"
	"math"
	"strings"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

func TestMonthPeriod(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	now := time.Date(2026, 12, 10, 12, 0, 0, 0, time.UTC)
	p, err := MonthPeriod("2026-11", berlin, now)
	if err != nil || p.Partial || !p.From.Equal(time.Date(2026, 11, 1, 0, 0, 0, 0, berlin)) || !p.To.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, berlin)) {
		t.Errorf("November in Berlin: %+v, %v", p, err)
	}
	if p, err := MonthPeriod("2026-12", time.UTC, now); err != nil || !p.Partial || !p.To.Equal(now) {
		t.Errorf("this month: %+v, %v; want it to end now, partial", p, err)
	}
	for _, bad := range []string{"2027-01", "2026-13", "Nov", "2026-11-01"} {
		if _, err := MonthPeriod(bad, time.UTC, now); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// answers is a fake Prometheus: the answer to every query, or warnings.
type answers struct {
	vec      model.Vector
	warnings v1.Warnings
	asked    []string
}

func (a *answers) Query(_ context.Context, q string, _ time.Time, _ ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	a.asked = append(a.asked, q)
	return a.vec, a.warnings, nil, nil
}

// noData answers success without data, as a proxy or store speaking the API badly does: the
// client gives a nil value.
type noData struct{}

func (noData) Query(context.Context, string, time.Time, ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	return nil, nil, nil, nil
}

// TestBuildRefusesHoles: a partial answer, a value that is no number or an answer without data
// fails the report.
func TestBuildRefusesHoles(t *testing.T) {
	p := Period{Month: "2026-11", From: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	one := model.Vector{{Metric: model.Metric{"pool": "gpu", "currency": "EUR"}, Value: 5}}
	for name, a := range map[string]*answers{
		"warnings": {vec: one, warnings: v1.Warnings{"store 3 down"}},
		"NaN":      {vec: model.Vector{{Metric: model.Metric{"pool": "gpu"}, Value: model.SampleValue(math.NaN())}}},
	} {
		if _, err := Build(context.Background(), a, p, ""); err == nil {
			t.Errorf("%s: a report was built", name)
		}
	}
	if _, err := Build(context.Background(), noData{}, p, ""); err == nil {
		t.Error("success without data: a report was built")
	}
	for fleet, header := range map[string]string{"": "table,by,name,", "site-a": "table,fleet,by,name,"} {
		vec := model.Vector{{Metric: model.Metric{"pool": "gpu", "currency": "EUR"}, Value: 5}}
		if fleet != "" {
			vec[0].Metric["fleet"] = model.LabelValue(fleet)
		}
		a := &answers{vec: vec}
		r, err := Build(context.Background(), a, p, fleet)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range a.asked {
			if !strings.Contains(q, "[2592000s])") || strings.Contains(q, `fleet="site-a"`) != (fleet != "") {
				t.Errorf("query %s is not over the 30 days of November, or not in fleet %q", q, fleet)
			}
		}
		var b strings.Builder
		if err := r.CSV(&b); err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) < 2 || !strings.HasPrefix(b.String(), header) {
			t.Fatalf("fleet %q: csv:\n%s", fleet, b.String())
		}
		for _, row := range rows {
			if len(row) != len(rows[0]) {
				t.Errorf("csv row of %d cells, header %d: %v", len(row), len(rows[0]), row)
			}
		}
	}
}
