package learn

import (
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkView reads a View of two weeks' statistics, calm and with need rising, as a replay
// does at each change of need.
func BenchmarkView(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 3))
	var s Stats
	n := 10
	feed(&s, monday, 14*24*time.Hour, func(time.Time) int {
		if rng.IntN(20) == 0 {
			n = max(0, n+rng.IntN(9)-4)
		}
		return n
	})
	end := monday.Add(14 * 24 * time.Hour)
	s.Observe(end.Add(time.Minute), map[string]int{"p": n + 3}) // rising
	for _, c := range []struct {
		name string
		at   time.Time
	}{{"rising", end.Add(2 * time.Minute)}, {"calm", end.Add(3 * time.Hour)}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				_ = s.View("p", c.at, time.Hour)
			}
		})
		// Mean at a boot time between horizons, as the break-even rule reads it.
		v := s.View("p", c.at, time.Hour)
		b.Run(c.name+"/Mean", func(b *testing.B) {
			for b.Loop() {
				_ = v.Mean(3 * time.Minute)
			}
		})
	}
}

// BenchmarkObserve observes a need that changes every few minutes, as a busy replay does,
// for a day (1,440 origins counted).
func BenchmarkObserve(b *testing.B) {
	rng := rand.New(rand.NewPCG(4, 4))
	type obs struct {
		at time.Time
		n  int
	}
	var series []obs
	n := 10
	for at := monday; at.Before(monday.Add(26 * time.Hour)); at = at.Add(time.Duration(1+rng.IntN(300)) * time.Second) {
		n = max(0, n+rng.IntN(5)-2)
		series = append(series, obs{at, n})
	}
	need := map[string]int{"p": 0}
	for b.Loop() {
		var s Stats
		for _, o := range series {
			need["p"] = o.n
			s.Observe(o.at, need)
		}
	}
}
