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
	}
}
