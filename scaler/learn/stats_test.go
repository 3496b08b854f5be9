package learn

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// monday is a Monday 00:00 UTC, hour of week 24.
var monday = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

// feed observes pool "p" every minute from start for d, with need(t).
func feed(s *Stats, start time.Time, d time.Duration, need func(t time.Time) int) {
	for t := start; t.Before(start.Add(d)); t = t.Add(time.Minute) {
		s.Observe(t, map[string]int{"p": need(t)})
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-3 }

func TestSteadyNeedNeverRises(t *testing.T) {
	var s Stats
	feed(&s, monday, 28*time.Hour, func(time.Time) int { return 7 })
	v := s.View("p", monday.Add(28*time.Hour), 24*time.Hour)
	if !v.Ready || v.Need != 7 || v.Regime != 0 {
		t.Fatalf("ready %v need %d regime %d", v.Ready, v.Need, v.Regime)
	}
	for h := range Horizons {
		if p := v.AtLeast(1, Horizon(h)); p != 0 {
			t.Errorf("P(rise >= 1 within %s) = %v, want 0", Horizon(h), p)
		}
	}
	if q := v.Quantile(0.99, 5*time.Minute); q != 0 {
		t.Errorf("quantile %d, want 0", q)
	}
	// 28h of origins but the first hour's look-back and the last 2h, still open, are counted.
	if want := int64((28*time.Hour - 3*time.Hour - 2*time.Minute) / time.Minute); v.Origins < want-2 || v.Origins > want+2 {
		t.Errorf("origins %d, want about %d", v.Origins, want)
	}
}

func TestNotReadyWithLittleHistory(t *testing.T) {
	var s Stats
	feed(&s, monday, 5*time.Hour, func(time.Time) int { return 1 })
	if v := s.View("p", monday.Add(5*time.Hour), 24*time.Hour); v.Ready || v.Origins == 0 {
		t.Errorf("ready %v with %d origins, want not ready with some", v.Ready, v.Origins)
	}
	if v := s.View("none", monday, 0); v.Ready || v.Origins != 0 {
		t.Errorf("a pool never seen: %+v", v)
	}
}

// A need that steps up by one every 30 minutes: from a calm origin k minutes after a step
// (k from 5, when the step is no longer a rise under way, to 29) the next step is 30-k
// minutes away, so the rise within h is 1 for the h origins closest to the next step; from an
// origin under way (k 0-4) it is 26 minutes or more away.
func TestRiseByHorizon(t *testing.T) {
	var s Stats
	stairs := func(t time.Time) int { return int(t.Sub(monday) / (30 * time.Minute)) }
	end := monday.Add(20 * 24 * time.Hour)
	feed(&s, monday, 20*24*time.Hour+time.Minute, stairs)
	v := s.View("p", end.Add(10*time.Minute), 0)
	if v.Regime != 0 || v.Need != stairs(end) {
		t.Fatalf("10 minutes after a step: regime %d need %d, want calm at %d", v.Regime, v.Need, stairs(end))
	}
	for h, want := range []float64{1, 2, 5, 10, 20, 25, 25, 25} {
		if got := v.AtLeast(1, Horizon(h)); !near(got, want/25) {
			t.Errorf("P(rise >= 1 within %s) = %.4f, want %.4f", Horizon(h), got, want/25)
		}
	}
	// Two steps take at least 31 minutes: within the hour from every calm origin.
	if p30, p60 := v.AtLeast(2, 30*time.Minute), v.AtLeast(2, time.Hour); p30 != 0 || !near(p60, 1) {
		t.Errorf("P(rise >= 2) within 30m %.4f, within 1h %.4f", p30, p60)
	}
	// Between horizons, linear: 3 minutes is a third of the way from 2 to 5.
	if got, want := v.AtLeast(1, 3*time.Minute), 3.0/25; !near(got, want) {
		t.Errorf("P(>=1 within 3m) = %.4f, want %.4f", got, want)
	}
	if q := v.Quantile(0.5, 20*time.Minute); q != 1 {
		t.Errorf("median rise within 20m %d, want 1", q)
	}
	// Just after a step the need is rising by one, and the next step is 26 minutes or more
	// away.
	v = s.View("p", end.Add(time.Minute), 0)
	if v.Regime != 1 || v.AtLeast(1, 20*time.Minute) > 0.01 || v.AtLeast(1, 30*time.Minute) < 0.99 {
		t.Errorf("after a step: regime %d, P(rise within 20m) %.3f, within 30m %.3f", v.Regime, v.AtLeast(1, 20*time.Minute), v.AtLeast(1, 30*time.Minute))
	}
	if v.Context() != "rising by 1" {
		t.Errorf("context %q", v.Context())
	}
}

// A burst ended: the need is below the peak of the last hour, and says how far.
func TestBelowPeak(t *testing.T) {
	var s Stats
	s.Observe(monday, map[string]int{"p": 20})
	s.Observe(monday.Add(30*time.Minute), map[string]int{"p": 3})
	cases := []struct {
		at     time.Duration
		regime int
		words  string
	}{
		{31 * time.Minute, 8, "16 or more below the hour's peak"},
		// judged at the change of need, so it lasts until the need changes again or for an
		// hour, then it is calm
		{89 * time.Minute, 8, "16 or more below the hour's peak"},
		{90 * time.Minute, 0, "calm, Mon 01h UTC"},
	}
	for _, c := range cases {
		if v := s.View("p", monday.Add(c.at), 0); v.Regime != c.regime || v.Context() != c.words {
			t.Errorf("at %s: regime %d %q, want %d", c.at, v.Regime, v.Context(), c.regime)
		}
	}
	if v := s.View("p", monday.Add(31*time.Minute), 0); !v.Until.Equal(monday.Add(time.Hour)) {
		t.Errorf("until %s, want the next hour", v.Until)
	}
	if v := s.View("p", monday.Add(70*time.Minute), 0); !v.Until.Equal(monday.Add(90 * time.Minute)) {
		t.Errorf("until %s, want the change plus an hour", v.Until)
	}
}

// A rise that comes every Tuesday at 10:00 only is learned for that hour: the Tuesday 09:00
// bucket sees it coming, Friday 09:00 reads mostly calm.
func TestHourOfWeek(t *testing.T) {
	var s Stats
	tuesday10 := func(t time.Time) int {
		if t.Weekday() == time.Tuesday && t.Hour() == 10 {
			return 6
		}
		return 0
	}
	feed(&s, monday, 6*7*24*time.Hour, tuesday10)
	end := monday.Add(6 * 7 * 24 * time.Hour)
	tue := s.View("p", end.Add(24*time.Hour+9*time.Hour+30*time.Minute), 0) // a Tuesday 09:30
	fri := s.View("p", end.Add(4*24*time.Hour+9*time.Hour+30*time.Minute), 0)
	if tue.HourOfWeek != 2*24+9 || fri.HourOfWeek != 5*24+9 {
		t.Fatalf("hours of week %d, %d", tue.HourOfWeek, fri.HourOfWeek)
	}
	pt, pf := tue.AtLeast(6, time.Hour), fri.AtLeast(6, time.Hour)
	if pt < 0.8 || pf > 0.05 || pf <= 0 {
		t.Errorf("P(rise >= 6 within 1h): Tuesday 09h %.3f, Friday 09h %.3f", pt, pf)
	}
	if q := tue.Quantile(0.5, 2*time.Hour); q != 6 {
		t.Errorf("Tuesday median rise within 2h %d, want 6", q)
	}
}

func TestUntil(t *testing.T) {
	var s Stats
	at := monday.Add(10 * time.Minute)
	s.Observe(monday, map[string]int{"p": 0})
	s.Observe(at, map[string]int{"p": 2})
	v := s.View("p", at.Add(time.Minute), 0)
	if v.Regime != 2 || !v.Until.Equal(at.Add(Recent)) {
		t.Errorf("regime %d until %s, want 2 until %s", v.Regime, v.Until, at.Add(Recent))
	}
	v = s.View("p", at.Add(Recent), 0)
	if v.Regime != 0 || !v.Until.Equal(monday.Add(time.Hour)) {
		t.Errorf("regime %d until %s, want calm until the hour", v.Regime, v.Until)
	}
}

func TestCountsAreBounded(t *testing.T) {
	var s Stats
	feed(&s, monday, 10*7*24*time.Hour, func(t time.Time) int { return t.Minute() % 3 })
	p := s.Pools["p"]
	for how := range HoursOfWeek {
		if n := total(p.Calm[how*Horizons*Bins : how*Horizons*Bins+Bins]); n > calmCap {
			t.Fatalf("hour %d holds %d origins, cap %d", how, n, calmCap)
		}
	}
	for r := range Regimes - 1 {
		if n := total(p.Active[r*Horizons*Bins : r*Horizons*Bins+Bins]); n > activeCap {
			t.Fatalf("regime %d holds %d origins, cap %d", r+1, n, activeCap)
		}
	}
	var sum uint64
	for how := range HoursOfWeek {
		sum += total(p.Calm[how*Horizons*Bins : how*Horizons*Bins+Bins])
	}
	if sum != total(p.CalmAll[:Bins]) {
		t.Errorf("calm_all %d != sum of hours %d", total(p.CalmAll[:Bins]), sum)
	}
}

func TestGapCountsNothingAcross(t *testing.T) {
	var s Stats
	feed(&s, monday, 5*time.Hour, func(time.Time) int { return 0 })
	before := s.Pools["p"].Origins
	later := monday.Add(10 * time.Hour)
	s.Gap(later)
	s.Observe(later, map[string]int{"p": 50})
	s.Observe(later.Add(time.Hour), map[string]int{"p": 50})
	if got := s.Pools["p"].Origins; got != before {
		t.Errorf("origins %d after a gap and an hour, want still %d", got, before)
	}
	if v := s.View("p", later.Add(time.Hour), 0); v.AtLeast(1, 2*time.Hour) != 0 {
		t.Errorf("the jump across the gap was counted as a rise")
	}
}

func TestOlderObservationIgnored(t *testing.T) {
	var s Stats
	s.Observe(monday.Add(time.Hour), map[string]int{"p": 3})
	s.Observe(monday, map[string]int{"p": 9})
	if v := s.View("p", monday.Add(time.Hour), 0); v.Need != 3 {
		t.Errorf("need %d, want 3 (the older observation ignored)", v.Need)
	}
}

func TestBootTimes(t *testing.T) {
	var s Stats
	for _, d := range []time.Duration{200, 300, 250, 0, -5} {
		s.ObserveBoot("p", d*time.Second)
	}
	for i := range 20 {
		s.ObserveShutdown("p", time.Duration(i+1)*time.Second)
	}
	v := s.View("p", monday, 0)
	if v.Boot != 250*time.Second || v.Shutdown != 13*time.Second || len(s.Pools["p"].Shutdowns) != ringLen {
		t.Errorf("boot %s shutdown %s (%d kept)", v.Boot, v.Shutdown, len(s.Pools["p"].Shutdowns))
	}
}

func TestRoundTripAndCheck(t *testing.T) {
	var s Stats
	feed(&s, monday, 4*time.Hour, func(t time.Time) int { return t.Minute() / 20 })
	b, err := json.Marshal(s.Pools["p"])
	if err != nil {
		t.Fatal(err)
	}
	var back Pool
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Check(); err != nil {
		t.Fatalf("check: %v", err)
	}
	s2 := Stats{Pools: map[string]*Pool{"p": &back}}
	now := monday.Add(4 * time.Hour)
	if a, b := s.View("p", now, 0), s2.View("p", now, 0); a != b {
		t.Errorf("views differ after a round trip")
	}
	cases := map[string]func(p *Pool){
		"calm has":     func(p *Pool) { p.Calm = p.Calm[:10] },
		"calm_all has": func(p *Pool) { p.CalmAll = nil },
		"active has":   func(p *Pool) { p.Active = append(p.Active, 1) },
		"times but":    func(p *Pool) { p.Needs = p.Needs[:0] },
		"out of order": func(p *Pool) { p.Times = []int64{5, 1}; p.Needs = []int32{0, 0} },
		"negative":     func(p *Pool) { p.Origins = -1 },
		"boot or shut": func(p *Pool) { p.Boots = make([]int32, ringLen+1) },
	}
	for want, damage := range cases {
		var p Pool
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		damage(&p)
		if err := p.Check(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: check = %v", want, err)
		}
	}
}

// binOf finds, for every rise, the bin whose range [binLow(b), binLow(b+1)) holds it (the
// first bin below zero, the last from binLow(Bins-1) up).
func TestBinOfFollowsBinLow(t *testing.T) {
	for rise := -3; rise <= 1<<21; rise++ {
		want := 0
		for b := Bins - 1; b > 0; b-- {
			if rise >= binLow(b) {
				want = b
				break
			}
		}
		if got := binOf(rise); got != want {
			t.Fatalf("binOf(%d) = %d, want %d", rise, got, want)
		}
		if rise > 1000 {
			rise += 997 // sparser past the bins' ranges
		}
	}
}

// hourOfWeek tells the hour of the week as the calendar does, before 1970 too.
func TestHourOfWeekByCalendar(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range 100000 {
		ts := rng.Int64N(1<<34) - 1<<33
		if i < 20 {
			ts = int64(i/2-5)*3600 - int64(i%2) // the hours' edges about 1970
		}
		u := time.Unix(ts, 0).UTC()
		if got, want := hourOfWeek(ts), int(u.Weekday())*24+u.Hour(); got != want {
			t.Fatalf("hourOfWeek(%d) (%s) = %d, want %d", ts, u, got, want)
		}
	}
}

// AtLeast at a horizon, between two and past the longest is the two horizons' tails weighed
// by where d falls between them, to the last bit.
func TestAtLeastWeighsBothHorizons(t *testing.T) {
	var s Stats
	rng := rand.New(rand.NewPCG(5, 5))
	n := 10
	feed(&s, monday, 3*7*24*time.Hour, func(time.Time) int {
		n = max(0, n+rng.IntN(7)-3)
		return n
	})
	for m := range 200 {
		v := s.View("p", monday.Add(3*7*24*time.Hour+time.Duration(m)*time.Minute), 0)
		for _, d := range []time.Duration{time.Minute, 90 * time.Second, 5 * time.Minute, 7 * time.Minute,
			time.Hour, 2 * time.Hour, 3 * time.Hour} {
			for level := 1; level < 40; level += 3 {
				lo, hi, f := span(d)
				b := binOf(level)
				tail := func(h int) float64 { return v.tail(h, b, level, v.massAbove(h, b)) }
				want := (1-f)*tail(max(lo, 0)) + f*tail(hi)
				if lo < 0 {
					want = f * tail(0)
				}
				if got := v.AtLeast(level, d); got != want {
					t.Fatalf("AtLeast(%d, %s) = %v, want %v", level, d, got, want)
				}
			}
		}
	}
}

// Mean, summed bin by bin, is AtLeast summed level by level, to the last bit, at horizons,
// between them, below the first and past the longest, calm and rising, with rises of every
// size (so the sum stops early and late).
func TestMeanSumsEachLevel(t *testing.T) {
	var s Stats
	rng := rand.New(rand.NewPCG(6, 6))
	n := 10
	feed(&s, monday, 2*7*24*time.Hour, func(time.Time) int {
		switch rng.IntN(200) {
		case 0:
			n += rng.IntN(150) // now and then a rise past the last bin's low
		case 1, 2:
			n = rng.IntN(10)
		default:
			n = max(0, n+rng.IntN(5)-2)
		}
		return n
	})
	for m := range 300 {
		v := s.View("p", monday.Add(2*7*24*time.Hour+time.Duration(m)*time.Minute), 0)
		for _, d := range []time.Duration{0, 20 * time.Second, time.Minute, 90 * time.Second, 5 * time.Minute,
			7 * time.Minute, time.Hour, 2 * time.Hour, 3 * time.Hour} {
			want := 0.0
			for r := 1; r <= binLow(Bins-1); r++ {
				p := v.AtLeast(r, d)
				if p < 1e-6 {
					break
				}
				want += p
			}
			if got := v.Mean(d); got != want {
				t.Fatalf("at %d min, Mean(%s) = %v, want %v", m, d, got, want)
			}
		}
	}
}

// The Active counts summed over the regimes, kept as origins are counted, are the sum worked
// out afresh after each of thousands of counts, calm and rising, runs of origins alike among
// them, their rows past their caps and halved; a View of a rising regime reads the same from
// the kept sum as from one summed afresh, and a pool read back sums its counts again.
func TestActiveSumKept(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	p := NewPool()
	halved := 0
	for step := range 5000 {
		var rises [Horizons]int
		for h := range rises {
			rises[h] = rng.IntN(40) - 4
		}
		regime, k := rng.IntN(Regimes), int64(1+rng.IntN(3))
		if rng.IntN(10) == 0 {
			k = int64(rng.IntN(2 * activeCap)) // a long run alike: past a row's cap at once
		}
		row := func() uint64 { return total(p.Active[max(regime-1, 0)*Horizons*Bins:][:Bins]) }
		was, before := row(), p.Origins
		p.count(rng.IntN(HoursOfWeek), regime, rises, k)
		if regime > 0 && row() < was+uint64(p.Origins-before) {
			halved++
		}
		if p.active == nil {
			if regime > 0 {
				t.Fatalf("step %d: rising origins counted and no sum kept", step)
			}
			continue
		}
		if want := p.activeSum(); !slices.Equal(p.active, want[:]) {
			t.Fatalf("step %d: the kept sum of the Active counts is not the one summed afresh", step)
		}
	}
	if halved < 50 {
		t.Fatalf("%d rows halved: the test would prove nothing", halved)
	}
	p.Times, p.Needs = []int64{0, 60}, []int32{3, 9} // need rising at 60
	fresh := clonePool(p)
	fresh.active = nil
	kept, afresh := Stats{Pools: map[string]*Pool{"p": p}}, Stats{Pools: map[string]*Pool{"p": fresh}}
	at := time.Unix(120, 0)
	if v, w := kept.View("p", at, 0), afresh.View("p", at, 0); v.Regime == 0 || v != w {
		t.Fatalf("a View from the kept sum (regime %d) is not the View summed afresh", v.Regime)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back Pool
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.active, p.active) {
		t.Fatal("a pool read back does not sum its Active counts")
	}
}

func clonePool(p *Pool) *Pool {
	c := *p
	c.Times, c.Needs = slices.Clone(p.Times), slices.Clone(p.Needs)
	c.active = slices.Clone(p.active)
	c.Calm, c.CalmAll, c.Active = slices.Clone(p.Calm), slices.Clone(p.CalmAll), slices.Clone(p.Active)
	return &c
}

// closeOne counts origin o alone, its change and look-back worked out afresh.
func closeOne(p *Pool, o int64) {
	c := p.changeAt(p.at(o))
	p.count(hourOfWeek(o), c.regime(o), p.rises(o, c), 1)
}

// A run of origins alike counted at once counts what counting them one by one counts, near
// the caps and past them too, calm and with need rising or below its peak, and runs cover
// the stretches without change (whole hours of them).
func TestRunCountsAsEachOrigin(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	step, longest := int64(Step/time.Second), int64(Horizon(Horizons-1)/time.Second)
	runs, long := map[bool]int{}, 0
	for trial := range 20 {
		var s Stats
		n, start := 5, monday.Add(time.Duration(trial)*time.Hour)
		for at := start; at.Before(start.Add(3 * 24 * time.Hour)); at = at.Add(time.Duration(1+rng.IntN(300)) * time.Second) {
			if rng.IntN(40) == 0 { // calm stretches of up to 6 hours between bursts
				at = at.Add(time.Duration(rng.IntN(6*3600)) * time.Second)
			}
			if rng.IntN(3) == 0 {
				n = max(0, n+rng.IntN(5)-2)
			}
			// the pool as observe has it before it counts origins (the change point noted)
			p := clonePool(s.pool("p"))
			if k := len(p.Needs); k == 0 || int(p.Needs[k-1]) != n {
				p.Times, p.Needs = append(p.Times, at.Unix()), append(p.Needs, int32(n))
			}
			s.Observe(at, map[string]int{"p": n})
			o, last := p.Next, at.Unix()-longest
			if o == 0 || o > last || p.at(o) < 0 {
				continue
			}
			c := p.changeAt(p.at(o))
			how, regime, rises := hourOfWeek(o), c.regime(o), p.rises(o, c)
			k := p.run(o, c, rises, last)
			if k < 30 && rng.IntN(16) > 0 { // the long runs, and one in 16 of the others
				continue
			}
			row, limit := p.Calm[how*Horizons*Bins:][:Horizons*Bins], calmCap
			if regime > 0 {
				row, limit = p.Active[(regime-1)*Horizons*Bins:][:Horizons*Bins], activeCap
			}
			// counts near the cap (a run is at most an hour of origins), a few past it
			target := limit + 1 - rng.IntN(70)
			for h := range Horizons {
				left := target
				for b := 1; b < Bins; b++ {
					row[h*Bins+b] = uint32(rng.IntN(limit / Bins / 4))
					left -= int(row[h*Bins+b])
				}
				row[h*Bins] = uint32(left)
			}
			if regime == 0 {
				copy(p.CalmAll, row)
			}
			runs[regime == 0]++
			if k >= 30 {
				long++
			}
			once, each := clonePool(p), clonePool(p)
			once.count(how, regime, rises, k)
			for m := range k {
				closeOne(each, o+m*step)
			}
			if !reflect.DeepEqual(once, each) {
				t.Fatalf("trial %d: %d origins from %d (regime %d) counted at once differ from one by one", trial, k, o, regime)
			}
			if end := o + (k-1)*step; end > last || hourOfWeek(end) != how {
				t.Fatalf("trial %d: a run of %d from %d passes %d or its hour", trial, k, o, last)
			}
		}
	}
	if runs[true] < 100 || runs[false] < 100 || long < 10 {
		t.Fatalf("%d calm runs, %d others, %d of half an hour or more: the test would prove nothing", runs[true], runs[false], long)
	}
}

// Observing counts what closing each origin one by one counts, the change point in force at
// each looked up afresh in the whole series (observe follows it as its origins close, and
// counts calm runs at once): after every observation, many origins at once after a quiet
// stretch too.
func TestObserveClosesEachOrigin(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	step, longest := int64(Step/time.Second), int64(Horizon(Horizons-1)/time.Second)
	var s Stats
	ref := NewPool()
	n, at, closed := 3, monday, 0
	for range 20000 {
		at = at.Add(time.Duration(1+rng.IntN(240)) * time.Second)
		if rng.IntN(200) == 0 {
			at = at.Add(time.Duration(rng.IntN(4*3600)) * time.Second)
		}
		if rng.IntN(3) == 0 {
			n = max(0, n+rng.IntN(7)-3)
		}
		s.Observe(at, map[string]int{"p": n})
		p := s.Pools["p"]
		if k := len(ref.Needs); k == 0 || int(ref.Needs[k-1]) != n {
			ref.Times, ref.Needs = append(ref.Times, at.Unix()), append(ref.Needs, int32(n))
		}
		if ref.Next == 0 {
			ref.Next = p.Next
		}
		for ; ref.Next+longest <= at.Unix(); ref.Next += step {
			closeOne(ref, ref.Next)
			closed++
		}
		if ref.Next != p.Next || ref.Origins != p.Origins || !slices.Equal(ref.CalmAll, p.CalmAll) || !slices.Equal(ref.Active, p.Active) {
			t.Fatalf("at %s: observing counted %d origins up to %d, one by one %d up to %d, or other counts",
				at, p.Origins, p.Next, ref.Origins, ref.Next)
		}
	}
	if !slices.Equal(ref.Calm, s.Pools["p"].Calm) {
		t.Fatal("the hours' calm counts differ")
	}
	if closed < 10000 || ref.Origins == 0 {
		t.Fatalf("%d origins closed, %d counted: the test would prove nothing", closed, ref.Origins)
	}
}
