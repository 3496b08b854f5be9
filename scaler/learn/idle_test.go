package learn

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var idleStart = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

func TestRankBucket(t *testing.T) {
	for rank, want := range map[int]int{0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 8: 3, 9: 4, 16: 4, 17: 5, 32: 5, 33: 6, 1000: 6} {
		if got := rankBucket(rank); got != want {
			t.Errorf("rank %d: bucket %d, want %d", rank, got, want)
		}
	}
}

// TestIdleDecideFollowsElapsedIdle: half the periods end after two minutes, the rest are cut
// (powered off) after five hours. A server just idle is kept for the quick return; one idle
// for three minutes is in the other half, which never saw a job, and goes.
func TestIdleDecideFollowsElapsedIdle(t *testing.T) {
	var d Idle
	for range 50 {
		d.Observe(1, idleStart, 2*time.Minute+10*time.Second, true)
		d.Observe(1, idleStart, 5*time.Hour, false)
	}
	// a cycle costs 20 minutes of an idle hour
	fresh := d.Decide(1, idleStart, 0, 1.0/3, 1, 20)
	if !fresh.Known || !fresh.Stay || fresh.AtRisk != 100 || fresh.Best != 3*time.Minute || fresh.F != 0.5 {
		t.Errorf("idle 0s: %+v, want known, stay, 100 at risk, best 3m at F 0.5", fresh)
	}
	// E[min(X, 3m)]: all of the first two minutes, half the third one ended in: 2.75m
	if e := fresh.E * 60; e < 2.74 || e > 2.76 {
		t.Errorf("idle 0s: expected idle %.3f minutes, want 2.75", e)
	}
	late := d.Decide(1, idleStart, 3*time.Minute, 1.0/3, 1, 20)
	if !late.Known || late.Stay || late.AtRisk != 50 || late.F != 0 {
		t.Errorf("idle 3m: %+v, want known, off, 50 at risk, F 0", late)
	}
	// Past five hours no period lasted: nothing to read.
	if past := d.Decide(1, idleStart, 5*time.Hour+time.Minute, 1, 1, 20); past.Known {
		t.Errorf("idle 5h1m: %+v, want unknown (no period lasted)", past)
	}
}

// TestIdleDecideNeedsPeriods: too few periods of the bucket lasted as long, or none of the
// rank were seen: the answer is unknown, and the caller falls back.
func TestIdleDecideNeedsPeriods(t *testing.T) {
	var d Idle
	for range 19 {
		d.Observe(1, idleStart, time.Minute, true)
	}
	if a := d.Decide(1, idleStart, 0, 1, 1, 20); a.Known || a.AtRisk != 19 {
		t.Errorf("19 periods: %+v, want unknown with 19 at risk", a)
	}
	d.Observe(1, idleStart, time.Minute, true)
	if a := d.Decide(1, idleStart, 0, 1, 1, 20); !a.Known || !a.Stay {
		t.Errorf("20 periods ending in a minute: %+v, want known and stay", a)
	}
	if a := d.Decide(2, idleStart, 0, 1, 1, 20); a.Known {
		t.Errorf("rank 2, none seen: %+v, want unknown", a)
	}
}

// TestIdleDecideReadsThePartOfTheDay: periods begun in the morning end at once, those begun
// at night never; a night with too few periods of its own reads the whole day's.
func TestIdleDecideReadsThePartOfTheDay(t *testing.T) {
	var d Idle
	night := idleStart.Add(-9 * time.Hour) // 01:00
	for range 30 {
		d.Observe(1, idleStart, time.Minute, true)
		d.Observe(1, night, 6*time.Hour, false)
	}
	if a := d.Decide(1, idleStart, 0, 1, 1, 20); !a.Stay || a.AtRisk != 30 {
		t.Errorf("morning: %+v, want stay with the morning's 30", a)
	}
	if a := d.Decide(1, night, 0, 1, 1, 20); a.Stay || a.AtRisk != 30 {
		t.Errorf("night: %+v, want off with the night's 30", a)
	}
	evening := idleStart.Add(10 * time.Hour) // 20:00: none of its own
	if a := d.Decide(1, evening, 0, 1, 1, 20); !a.Known || a.AtRisk != 60 || a.F != 0.5 {
		t.Errorf("evening: %+v, want the whole day's 60 at F 0.5", a)
	}
}

// Past IdleCap periods a bucket's counts are halved (Seen with them), others left as they are,
// and the chances read stay about the same.
func TestIdleCapHalves(t *testing.T) {
	d := &Idle{}
	d.Observe(5, idleStart, 3*time.Minute, true) // another bucket
	for k := range IdleCap {
		d.Observe(1, idleStart, time.Duration(k%4)*time.Minute, k%4 != 3)
	}
	if d.Seen[0][3] != IdleCap || d.Ended[0][3][0] != IdleCap/4 {
		t.Fatalf("at the cap: seen %d, ended at 0 %d", d.Seen[0][3], d.Ended[0][3][0])
	}
	before := d.Decide(1, idleStart, 0, 1, 1, 20)
	d.Observe(1, idleStart, 0, true)
	if d.Seen[0][3] != (IdleCap+1)/2 || d.Ended[0][3][0] != (IdleCap/4+1)/2 || d.Cut[0][3][3] != IdleCap/8 {
		t.Errorf("past the cap: seen %d, ended at 0 %d, cut at 3 %d; want halved", d.Seen[0][3], d.Ended[0][3][0], d.Cut[0][3][3])
	}
	if d.Seen[3][3] != 1 || d.Ended[3][3][3] != 1 {
		t.Error("another bucket was halved")
	}
	if after := d.Decide(1, idleStart, 0, 1, 1, 20); after.Stay != before.Stay || after.F-before.F > 0.01 || before.F-after.F > 0.01 {
		t.Errorf("halving changed the reading: %+v, then %+v", before, after)
	}
}

// Flip is the first bin at which Decide's verdict changes, never later nor earlier: on random
// tables, against Decide at every bin.
func TestIdleFlipIsTheNextChange(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	flips, toAllDay := 0, 0
	for range 500 {
		d := &Idle{}
		rank, start := 1+rng.IntN(3), idleStart.Add(time.Duration(rng.IntN(24))*time.Hour)
		for range 50 + rng.IntN(400) {
			// periods mostly short (a decreasing hazard), some long, some cut; half of them
			// of the server's rank and part of the day
			length := time.Duration(rng.ExpFloat64()*float64(20+rng.IntN(60))) * time.Minute
			r, at := rank, start
			if rng.IntN(2) == 0 {
				r, at = 1+rng.IntN(3), idleStart.Add(time.Duration(rng.IntN(24*60))*time.Minute)
			}
			d.Observe(r, at, length, rng.IntN(4) != 0)
		}
		cycle, idle := 0.05+rng.Float64(), 0.5+rng.Float64()
		age := time.Duration(rng.IntN(120)) * time.Minute
		verdict := func(age time.Duration) [2]bool {
			a := d.Decide(rank, start, age, cycle, idle, 20)
			return [2]bool{a.Known, a.Stay}
		}
		want, wantOK := time.Duration(0), false
		for b := int(age/IdleBin) + 1; b < IdleBins; b++ {
			if v := verdict(time.Duration(b) * IdleBin); v != verdict(age) {
				want, wantOK = time.Duration(b)*IdleBin, true
				break
			}
		}
		got, ok := d.Flip(rank, start, age+17*time.Second, cycle, idle, 20)
		if got != want || ok != wantOK {
			t.Fatalf("idle %s: flip at %s (%v), want %s (%v)", age, got, ok, want, wantOK)
		}
		if ok && verdict(age)[0] && verdict(want)[0] {
			flips++
		}
		var part idleCurve
		if ok && d.readCurve(rankBucket(rank), partOf(start), 20, &part).k == int(want/IdleBin) {
			toAllDay++
		}
	}
	if flips < 20 || toAllDay < 3 {
		t.Errorf("%d flips of Stay, %d from the part of the day to all day: the test proves little", flips, toAllDay)
	}
}

// TestCurvesKept: the curves Decide and Verdicts read are kept per rank bucket and part of the
// day until its counts change; after each of 20,000 random periods counted (two cells driven
// past IdleCap, so halved, and a table read back from its counts now and then) every curve
// asked for, at one of a few minAtRisk, equals one read afresh from the counts, and so do
// Decide's answers (every seventh period).
func TestCurvesKept(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	d, fresh := &Idle{}, &Idle{}
	t0 := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	for step := range 20000 {
		rank := []int{1, 1, 2, 3, 5, 9, 40}[r.IntN(7)]
		start := t0.Add(time.Duration(r.IntN(24*60)) * time.Minute)
		if r.IntN(2) == 0 {
			rank, start = 1, t0.Add(time.Duration(r.IntN(60))*time.Minute) // cell (0, 0): past the cap
		}
		d.Observe(rank, start, time.Duration(r.IntN(200))*time.Minute, r.IntN(3) > 0)
		if step%5000 == 4999 {
			var err error
			if d, err = IdleFromCounts(d.Counts()); err != nil {
				t.Fatal(err)
			}
		}
		for range 3 {
			rb, h, m := r.IntN(IdleRanks), r.IntN(IdleParts+1)-1, []int{1, 20, 50}[r.IntN(3)]
			var want idleCurve
			d.readCurve(rb, h, m, &want)
			// What a curve holds past its k is never read.
			got, n := d.curve(rb, h, m), want.k+1
			if got.k != want.k || !slices.Equal(got.at[:n], want.at[:n]) || !slices.Equal(got.s[:n], want.s[:n]) || !slices.Equal(got.e[:n], want.e[:n]) {
				t.Fatalf("step %d: rank bucket %d, part %d, minAtRisk %d: kept curve (k %d, %d at risk) differs from a fresh one (k %d, %d at risk)",
					step, rb, h, m, got.k, got.at[0], want.k, want.at[0])
			}
		}
		if step%7 != 0 {
			continue
		}
		age, m := time.Duration(r.IntN(240))*time.Minute, []int{1, 20, 50}[r.IntN(3)]
		got := d.Decide(rank, start, age, 0.4, 1, m)
		fresh.Ended, fresh.Cut, fresh.Seen, fresh.dayEnded, fresh.dayCut = d.Ended, d.Cut, d.Seen, d.dayEnded, d.dayCut
		fresh.curveFor = [IdleRanks][IdleParts + 1]int{}
		if want := fresh.Decide(rank, start, age, 0.4, 1, m); got != want {
			t.Fatalf("step %d: Decide on kept curves %+v, afresh %+v", step, got, want)
		}
	}
	if d.Seen[0][0] > IdleCap || d.Seen[0][0] < IdleCap/2 {
		t.Fatalf("cell (0, 0) holds %d periods: the test meant it to be halved past %d", d.Seen[0][0], IdleCap)
	}
}

// The daemon's loop counts periods while an API call (rotactl plan) reads them with the rule,
// which keeps the curves it reads: Idle is safe for that (go test -race).
func TestIdleReadWhileCounted(t *testing.T) {
	d := &Idle{}
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for i := range 200 {
		d.Observe(1+i%3, start, time.Duration(i%40)*time.Minute, i%4 != 0)
	}
	// The counting starts once the reading has (else, on a loaded machine, it could be over
	// before the first read); the reads go on until it is done.
	reading, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		<-reading
		for i := range 2000 {
			d.Observe(1+i%3, start, time.Duration(i%50)*time.Minute, i%5 != 0)
		}
	}()
	known := 0
	for i := 0; ; i++ {
		if d.Decide(1+i%3, start, time.Duration(i%30)*time.Minute, 1, 1, 5).Known {
			known++
		}
		d.Flip(1, start, 0, 1, 1, 5)
		_ = d.Changes(IdleCell(1, start))
		_ = d.Counts()
		if i == 0 {
			close(reading)
		}
		select {
		case <-done:
			if known == 0 {
				t.Error("no answer was known while periods were counted")
			}
			return
		default:
		}
	}
}
