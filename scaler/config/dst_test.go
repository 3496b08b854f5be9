package config

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// The days the clocks change in 2026: Europe/Berlin at 01:00 UTC, America/New_York at 07:00
// UTC (spring) and 06:00 UTC (autumn).
var clockChanges = []struct {
	zone string
	day  string
}{
	{"Europe/Berlin", "2026-03-29"}, {"Europe/Berlin", "2026-10-25"},
	{"America/New_York", "2026-03-08"}, {"America/New_York", "2026-11-01"},
}

// onTariff is owned with the berlin tariff in zone and of windows (each "start-end price").
func onTariff(t *testing.T, zone string, windows ...string) *Config {
	t.Helper()
	i, j := strings.Index(owned, "      windows:\n"), strings.Index(owned, "  carbon:")
	var b strings.Builder
	b.WriteString("      windows:\n")
	for _, w := range windows {
		var start, end string
		var price float64
		if _, err := fmt.Sscanf(strings.Replace(w, "-", " ", 1), "%s %s %g", &start, &end, &price); err != nil {
			t.Fatalf("window %q: %v", w, err)
		}
		fmt.Fprintf(&b, "        - {start: %q, end: %q, price_per_kwh: %g}\n", start, end, price)
	}
	y := strings.Replace(owned[:i], "Europe/Berlin", zone, 1) + b.String() + owned[j:]
	c, err := Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// EnergyCost over a day the clock changes is what the prices PriceAt reads minute by minute
// add up to. It used to end a price where time.Date put a local time that does not exist or
// occurs twice: a Berlin night 20:00-02:30 ran on to 03:30 CEST (or ended at 02:30 CET, an
// hour late), booking an hour at the wrong price.
func TestEnergyCostAcrossClockChanges(t *testing.T) {
	tariffs := [][]string{
		{"20:00-02:30 0.10", "02:30-20:00 0.30"},
		{"00:00-02:00 0.10", "02:00-03:00 0.20", "03:00-24:00 0.30"},
		{"01:30-02:15 0.10", "02:15-01:30 0.30"},
		{"22:00-01:00 0.10", "01:00-01:30 0.20", "01:30-22:00 0.30"},
	}
	for _, cc := range clockChanges {
		for _, windows := range tariffs {
			t.Run(cc.zone+" "+cc.day+" "+strings.Join(windows, ","), func(t *testing.T) {
				tariff := onTariff(t, cc.zone, windows...).Accounting.Tariff("berlin")
				cost := onTariff(t, cc.zone, windows...).Pools[0].Cost
				day, _ := time.Parse(time.DateOnly, cc.day)
				from, to := day.Add(-5*time.Hour-17*time.Minute), day.Add(29*time.Hour+43*time.Minute)
				var want float64
				for at := from; at.Before(to); at = at.Add(time.Minute) {
					price, until := tariff.PriceAt(at)
					if !until.After(at) {
						t.Fatalf("PriceAt(%v) ends at %v", at, until)
					}
					if later, _ := tariff.PriceAt(until.Add(-time.Minute)); later != price {
						t.Fatalf("PriceAt(%v) = %v until %v, but %v a minute before that", at, price, until, later)
					}
					want += price / 60
				}
				if got := cost.EnergyCost(1000, from, to); math.Abs(got-want) > 1e-9 {
					t.Errorf("EnergyCost = %.4f, want %.4f (the prices minute by minute)", got, want)
				}
			})
		}
	}
}

// A schedule is open from the first instant the clock reads its start (or jumps past it) to
// the first instant it reads its end (or jumps past it). Read literally, a 02:30-06:00 window
// in Berlin on the night the clock goes back closed at 03:00 CEST (02:00 CET) and opened again
// at 02:30 CET; and a 01:00-02:30 window opened again for the repeated half hour.
func TestScheduleAcrossClockChanges(t *testing.T) {
	cases := []struct {
		zone, day, start, end string
		want                  string // the openings in UTC
	}{
		{"Europe/Berlin", "2026-10-25", "02:30", "06:00", "00:30-05:00"},
		{"Europe/Berlin", "2026-10-25", "01:00", "02:30", "23:00-00:30"},
		{"Europe/Berlin", "2026-10-25", "22:00", "02:30", "20:00-00:30"},
		{"Europe/Berlin", "2026-10-25", "02:00", "03:00", "00:00-02:00"},
		{"Europe/Berlin", "2026-03-29", "02:30", "06:00", "01:00-04:00"},
		{"Europe/Berlin", "2026-03-29", "01:00", "02:30", "00:00-01:00"},
		{"Europe/Berlin", "2026-03-29", "02:00", "03:00", ""},
		{"Europe/Berlin", "2026-11-01", "02:30", "06:00", "01:30-05:00"},
		{"America/New_York", "2026-11-01", "01:00", "01:30", "05:00-05:30"},
		{"America/New_York", "2026-11-01", "00:30", "03:00", "04:30-08:00"},
		{"America/New_York", "2026-03-08", "02:30", "06:00", "07:00-10:00"},
		{"America/New_York", "2026-03-08", "01:30", "02:30", "06:30-07:00"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s %s %s-%s", tc.zone, tc.day, tc.start, tc.end), func(t *testing.T) {
			loc, err := time.LoadLocation(tc.zone)
			if err != nil {
				t.Fatal(err)
			}
			y, mo, d := mustDate(t, tc.day).Date()
			s := Schedule{Name: "s", Timezone: tc.zone, Window: Window{Start: tc.start, End: tc.end}}
			var p problems
			s.compile(&p, "s")
			if len(p) > 0 {
				t.Fatal(p)
			}
			// Scan the openings from 20:00 the evening before to 20:00 that day.
			from := time.Date(y, mo, d-1, 20, 0, 0, 0, loc)
			var got []string
			open := s.Active(from)
			var since time.Time
			for at := from; at.Before(time.Date(y, mo, d, 20, 0, 0, 0, loc)); at = at.Add(time.Minute) {
				switch a := s.Active(at); {
				case a && !open:
					since = at
				case !a && open && !since.IsZero():
					got = append(got, since.UTC().Format("15:04")+"-"+at.UTC().Format("15:04"))
				}
				open = s.Active(at)
			}
			if strings.Join(got, ",") != tc.want {
				t.Errorf("open %v (UTC), want %s", got, tc.want)
			}
		})
	}
}

func mustDate(t *testing.T, s string) time.Time {
	t.Helper()
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
