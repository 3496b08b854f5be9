package learn

import (
	"fmt"
	"slices"
	"time"
)

// prior is how many origins of the wider statistics (every hour of the week for the calm
// regime, every rising regime for one of them) stand behind each narrow one: with little
// history of its own, a bucket reads like the wider one; with weeks of it, like itself.
const prior = 60

// View is one pool's statistics as the planner reads them at one time: the distribution of
// the rise of need over each horizon in the present context (this hour of the week when
// calm, the present regime when need is rising), and the boot and shutdown times seen. The
// zero View has no history (Ready is false).
type View struct {
	// Ready: at least the minimum history was counted (see Stats.View).
	Ready bool
	// Origins is how many origins the statistics hold; HourOfWeek the hour they were read
	// for; Regime the present one (see regimeOf).
	Origins    int64
	HourOfWeek int
	Regime     int
	// Need is the last need observed.
	Need int
	// Boot and Shutdown are the median times seen (0: none seen yet).
	Boot, Shutdown time.Duration
	// Until is when the View changes without a new observation: the next hour, or when the
	// last change of need gets old (so a replay that skips unchanged moments asks again then).
	Until time.Time
	// Idle is what was learned of the pool's idle periods (nil: nothing).
	Idle *Idle
	// mass[h][b] is the probability that the rise over Horizon(h) falls in bin b.
	mass [Horizons][Bins]float64
}

// View is pool's View at now (the zero View for a pool never observed). Statistics with
// fewer than minHistory of origins are not Ready. The distributions are read afresh each
// call: callers that call often may keep a View until its Until.
func (s *Stats) View(pool string, now time.Time, minHistory time.Duration) View {
	p := s.Pools[pool]
	if p == nil {
		return View{}
	}
	t := now.Unix()
	v := View{Origins: p.Origins, HourOfWeek: hourOfWeek(t), Boot: median(p.Boots), Shutdown: median(p.Shutdowns)}
	v.Ready = p.Origins > 0 && time.Duration(p.Origins)*Step >= minHistory
	c := p.changeIn(t)
	v.Need, v.Regime = c.need, c.regime(t)
	v.Until = time.Unix(until(t, c), 0)
	if v.Regime == 0 {
		v.blend(p.Calm[v.HourOfWeek*Horizons*Bins:(v.HourOfWeek+1)*Horizons*Bins], p.CalmAll, nil)
	} else {
		pooled := p.active
		if pooled == nil {
			all := p.activeSum()
			pooled = all[:]
		}
		v.blend(p.Active[(v.Regime-1)*Horizons*Bins:v.Regime*Horizons*Bins], pooled, p.CalmAll)
	}
	return v
}

// Context says in words what the View's distributions were read for.
func (v *View) Context() string {
	if v.Regime == 0 {
		return fmt.Sprintf("calm, %s %02dh UTC", time.Weekday(v.HourOfWeek / 24).String()[:3], v.HourOfWeek%24)
	}
	return [...]string{"", "rising by 1", "rising by 2-3", "rising by 4 or more", "1 below the hour's peak",
		"2-3 below the hour's peak", "4-7 below the hour's peak", "8-15 below the hour's peak",
		"16 or more below the hour's peak"}[v.Regime]
}

// until is the next hour after t, or sooner the time c, the last change of need, gets older
// than Recent (if the need is rising) or than Peak (if below the peak).
func until(t int64, c change) int64 {
	next := (t/3600 + 1) * 3600
	switch r := c.regime(t); {
	case c.i < 0 || r == 0:
	case r <= 3:
		next = min(next, c.at+int64(Recent/time.Second))
	default:
		next = min(next, c.at+int64(Peak/time.Second))
	}
	return next
}

// blend sets the distribution from narrow counts, shrunk towards wide ones (prior origins'
// worth); wide itself is shrunk towards wider when given (a regime seldom seen reads like
// rising need in general, and that, with little of it, like calm).
func (v *View) blend(narrow, wide, wider []uint32) {
	for h := range Horizons {
		var w [Bins]float64
		if wider != nil {
			far := probs(wider[h*Bins:(h+1)*Bins], nil)
			w = probs(wide[h*Bins:(h+1)*Bins], &far)
		} else {
			w = probs(wide[h*Bins:(h+1)*Bins], nil)
		}
		v.mass[h] = probs(narrow[h*Bins:(h+1)*Bins], &w)
	}
}

// probs is counts as probabilities, with prior origins of base (nil: none) added; all zero
// without counts or base.
// (A value, not a pointer: it is made tens of thousands of times a replay, and a pointer
// would put each on the heap.)
func probs(c []uint32, base *[Bins]float64) (out [Bins]float64) {
	n := float64(total(c))
	w := 0.0
	if base != nil {
		w = prior
	}
	d := n + w
	if d == 0 {
		return out
	}
	if base == nil {
		for b, x := range c {
			out[b] = float64(x) / d
		}
		return out
	}
	for b, x := range c {
		out[b] = (float64(x) + w*base[b]) / d
	}
	return out
}

// AtLeast is the probability that the need rises by at least level servers within d (d
// between horizons: interpolated; past the longest: the longest). Level 0 or less is certain.
func (v *View) AtLeast(level int, d time.Duration) float64 {
	if level <= 0 {
		return 1
	}
	lo, hi, f := span(d)
	b := binOf(level)
	above := v.above(lo, hi, f, b)
	return v.atLeast(lo, hi, f, b, level, above)
}

// above is the mass of the bins above b at horizons lo and hi (see span), each only where
// AtLeast weighs its horizon: at a horizon (or past the longest) one side weighs nothing, and
// its tail is left out, which gives the same sum (a tail is finite), at half the work.
func (v *View) above(lo, hi int, f float64, b int) (above [2]float64) {
	if lo >= 0 && f != 1 {
		above[0] = v.massAbove(lo, b)
	}
	if lo < 0 || f != 0 {
		above[1] = v.massAbove(hi, b)
	}
	return above
}

// atLeast is AtLeast(level) at horizons lo and hi weighed by f (see span), from level's bin b
// and the mass above it there (see above).
func (v *View) atLeast(lo, hi int, f float64, b, level int, above [2]float64) float64 {
	switch {
	case lo < 0:
		return f * v.tail(hi, b, level, above[1])
	case f == 0:
		return v.tail(lo, b, level, above[0])
	case f == 1:
		return v.tail(hi, b, level, above[1])
	default:
		return (1-f)*v.tail(lo, b, level, above[0]) + f*v.tail(hi, b, level, above[1])
	}
}

// span places d between horizons lo and hi (lo -1: below the first, from 0), f the share of
// the way from lo to hi.
func span(d time.Duration) (lo, hi int, f float64) {
	if d >= Horizon(Horizons-1) {
		return Horizons - 1, Horizons - 1, 0
	}
	prev := time.Duration(0)
	for h := range Horizons {
		if d <= Horizon(h) {
			return h - 1, h, float64(d-prev) / float64(Horizon(h)-prev)
		}
		prev = Horizon(h)
	}
	return Horizons - 1, Horizons - 1, 0
}

// tail is P(rise over Horizon(h) >= level): the bins wholly above level's bin b (their mass
// above), and the part of b above level (rises spread evenly over a bin).
func (v *View) tail(h, b, level int, above float64) float64 {
	width := binLow(b+1) - binLow(b)
	return above + v.mass[h][b]*float64(binLow(b+1)-level)/float64(width)
}

// massAbove is the mass of the bins above b at Horizon(h), summed upwards.
func (v *View) massAbove(h, b int) float64 {
	p := 0.0
	for k := b + 1; k < Bins; k++ {
		p += v.mass[h][k]
	}
	return p
}

// Quantile is the smallest rise r with P(rise within d > r) at most 1-q: the servers that
// cover the need's rise within d with probability q.
func (v *View) Quantile(q float64, d time.Duration) int {
	for r := 0; r < binLow(Bins-1); r++ {
		if v.AtLeast(r+1, d) <= 1-q+1e-9 {
			return r
		}
	}
	return binLow(Bins - 1)
}

// Mean is the expected rise within d: AtLeast summed over the levels up to the last bin's low
// (until it is below 1e-6), bin by bin, the mass above each bin summed once for its levels
// rather than at each (the same sums, so the same mean to the last bit).
func (v *View) Mean(d time.Duration) float64 {
	lo, hi, f := span(d)
	m := 0.0
	for b := 1; b < Bins; b++ {
		above := v.above(lo, hi, f, b)
		for r := binLow(b); r < binLow(b+1) && r <= binLow(Bins-1); r++ {
			p := v.atLeast(lo, hi, f, b, r, above)
			if p < 1e-6 {
				return m
			}
			m += p
		}
	}
	return m
}

func median(r []int32) time.Duration {
	if len(r) == 0 {
		return 0
	}
	var buf [ringLen]int32 // a ring holds no more: sorted on the stack
	s := append(buf[:0], r...)
	slices.Sort(s)
	return time.Duration(s[len(s)/2]) * time.Second
}
