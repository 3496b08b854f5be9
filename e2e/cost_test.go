package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/lab"
	"github.com/rotahq/rota/scaler/fleet"
)

// promValue evaluates an instant query at t and returns its single value.
func promValue(l *lab.Lab, query string, t time.Time) (float64, error) {
	u := l.PrometheusURL() + "/api/v1/query?" + url.Values{"query": {query}, "time": {strconv.FormatInt(t.Unix(), 10)}}.Encode()
	resp, err := http.Get(u)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, fmt.Errorf("%s: %w", query, err)
	}
	if len(r.Data.Result) != 1 {
		return 0, fmt.Errorf("%s: %d series, want 1", query, len(r.Data.Result))
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	return strconv.ParseFloat(s, 64)
}

// labSpend is what the servers cost between from and to by the lab's power log.
func labSpend(t *testing.T, l *lab.Lab, from, to time.Time) (spend float64) {
	t.Helper()
	changes, err := lab.ReadPowerLog(l.Dir)
	if err != nil {
		t.Fatal(err)
	}
	since := map[string]time.Time{}
	add := func(node string, a, b time.Time) {
		a, b = later(a, from), earlier(b, to)
		if ref, ok := l.Config.Node(node); ok && b.After(a) {
			spend += b.Sub(a).Hours() * ref.Pool.Cost.PerHour()
		}
	}
	for _, c := range changes {
		if c.On {
			if _, ok := since[c.Node]; !ok {
				since[c.Node] = c.At
			}
		} else if a, ok := since[c.Node]; ok {
			add(c.Node, a, c.At)
			delete(since, c.Node)
		}
	}
	for node, a := range since {
		add(node, a, to)
	}
	return spend
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// checkCostQueries evaluates the cost cookbook's queries (docs/rules.md) on the lab's Prometheus: the spend per
// hour and the share saved now must be what the powered servers cost by the lab's own power
// log (and what rota reports), and the spend over the run (the mean hourly spend times the
// hours) must match the power history within the scrape resolution.
func checkCostQueries(t *testing.T, l *lab.Lab) {
	t.Helper()
	perHour := 0.0
	for _, names := range powered(t, l) {
		for _, n := range names {
			ref, _ := l.Config.Node(n)
			perHour += ref.Pool.Cost.PerHour()
		}
	}
	testutil.Eventually(t, 30*time.Second, "spend and saving now", func() error {
		st, err := status(t, l)
		if err != nil {
			return err
		}
		now := time.Now()
		got, err := promValue(l, "currency:rota_fleet_spend_per_hour:sum", now)
		if err != nil {
			return err
		}
		if math.Abs(got-perHour) > 1e-9 || math.Abs(st.SpendPerHour-perHour) > 1e-9 {
			return fmt.Errorf("spend per hour: Prometheus %v, rota %v, the lab's powered servers %v", got, st.SpendPerHour, perHour)
		}
		ratio, err := promValue(l, "currency:rota_fleet_saving:ratio", now)
		if err != nil {
			return err
		}
		if want := 1 - perHour/st.AllOnPerHour; math.Abs(ratio-want) > 1e-6 {
			return fmt.Errorf("saving ratio %v, want %v", ratio, want)
		}
		return nil
	})

	changes, err := lab.ReadPowerLog(l.Dir)
	if err != nil {
		t.Fatal(err)
	}
	// From well after rota's first scrape to now: the mean of the recorded hourly spend times
	// the hours is the spend over the window. Prometheus learns of a power change only once rota
	// has confirmed it, exported it at its next pass and been scraped, and the rule evaluated:
	// each change in the window may count that much late.
	lag := time.Duration(l.Config.Policy.EvaluationInterval) + 3*time.Duration(l.Config.Prometheus.ScrapeInterval)
	now := time.Now().Truncate(time.Second)
	from := changes[0].At.Add(30 * time.Second).Truncate(time.Second)
	window := now.Sub(from)
	tolerance := 0.0
	for _, c := range changes {
		if c.At.After(from) {
			ref, _ := l.Config.Node(c.Node)
			tolerance += ref.Pool.Cost.PerHour() * lag.Hours()
			if !c.On {
				checkRotaRecordedOff(t, l, c.Node)
			}
		}
	}
	mean, err := promValue(l, fmt.Sprintf("avg_over_time(currency:rota_fleet_spend_per_hour:sum[%ds])", int(window.Seconds())), now)
	if err != nil {
		t.Fatal(err)
	}
	got, want := mean*window.Hours(), labSpend(t, l, from, now)
	t.Logf("spend over the last %s: Prometheus %.4f, the lab's power history %.4f, tolerance %.4f", window, got, want, tolerance)
	if math.Abs(got-want) > tolerance {
		t.Errorf("spend over the last %s: Prometheus %.4f, the lab's power history %.4f: more than %.4f apart", window, got, want, tolerance)
	}
}

// checkRotaRecordedOff checks that rota's own history holds a successful power-off of node.
func checkRotaRecordedOff(t *testing.T, l *lab.Lab, node string) {
	t.Helper()
	ex, err := client(t, l).Explain(context.Background(), node)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ex.History {
		if r.Action == fleet.PowerOff && r.Result == "succeeded" {
			return
		}
	}
	t.Errorf("the lab saw %s powered off, rota's history has no successful power_off: %+v", node, ex.History)
}
