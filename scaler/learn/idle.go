package learn

import (
	"fmt"
	"sync"
	"time"
)

// Idle periods. A server's idle period runs from its last job's end (or its boot) to the
// next job placed on it; one powered off first is cut short there (censored: it lasted at
// least that long). Idle periods on real traces have a decreasing hazard: a server idle a
// while is likely to stay idle. Idle counts them by the server's rank among its pool's empty
// servers in the job manager's placement order when the period began (the first empty
// server takes the next job) and by the part of the day it began in, by the minute of their
// length, and reads the chance that a period that has lasted a ends within a further t by
// Kaplan-Meier, censoring included.
const (
	// IdleBin is the width of one length bin; IdleBins how many there are (the last holds
	// every period at least (IdleBins-1) bins long).
	IdleBin  = time.Minute
	IdleBins = 360
	// IdleRanks buckets the rank: 1, 2, 3-4, 5-8, 9-16, 17-32, 33 or more.
	IdleRanks = 7
	// IdleParts buckets the hour of the day (UTC) a period began in.
	IdleParts = 8
)

// Idle is what was learned of one pool's idle periods. The zero value is empty. It is safe
// for use by several goroutines at once: the daemon's loop counts periods while an API call
// plans with what the last pass learned, and reading a curve keeps it (see curves).
type Idle struct {
	mu sync.Mutex
	// Ended and Cut count the periods of each rank bucket and part of the day that ended (a
	// job came) or were cut (powered off) at each length bin; Seen all of them.
	Ended, Cut [IdleRanks][IdleParts][IdleBins]uint32
	Seen       [IdleRanks][IdleParts]uint32
	// dayEnded and dayCut are Ended and Cut summed over the parts of the day.
	dayEnded, dayCut [IdleRanks][IdleBins]uint32
	// curves are the Kaplan-Meier curves read (see curve), of each rank bucket and part of
	// the day (the last: all day), curveFor the minAtRisk each was read for plus one (0: none,
	// or its counts changed since).
	curves   [IdleRanks][IdleParts + 1]idleCurve
	curveFor [IdleRanks][IdleParts + 1]int
	// changes counts the changes of each curve's counts (see Changes).
	changes [IdleRanks][IdleParts + 1]uint64
}

// rankBucket is the bucket of rank (1 is the first empty server).
func rankBucket(rank int) int {
	b := 0
	for r := max(rank, 1) - 1; r > 0 && b < IdleRanks-1; r >>= 1 {
		b++
	}
	return b
}

func partOf(t time.Time) int { return t.UTC().Hour() * IdleParts / 24 }

// Observe counts one idle period of a server of rank that began at start and lasted length:
// ended when a job came, else cut short by a power-off.
func (d *Idle) Observe(rank int, start time.Time, length time.Duration, ended bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, h := rankBucket(rank), partOf(start)
	b := min(int(max(length, 0)/IdleBin), IdleBins-1)
	if ended {
		d.Ended[r][h][b]++
		d.dayEnded[r][b]++
	} else {
		d.Cut[r][h][b]++
		d.dayCut[r][b]++
	}
	d.changed(r, h)
	if d.Seen[r][h]++; d.Seen[r][h] > IdleCap {
		d.halve(r, h)
	}
}

// changed forgets the curves that read rank bucket r's counts of part h: its part's and its
// all-day one.
func (d *Idle) changed(r, h int) {
	d.curveFor[r][h], d.curveFor[r][IdleParts] = 0, 0
	d.changes[r][h]++
	d.changes[r][IdleParts]++
}

// Changes counts the changes of the counts that the verdicts of the servers of cell
// (IdleCell) read, its part of the day's and its rank bucket's all day: Verdicts worked out
// for the cell hold, at one price, while it stays the same.
func (d *Idle) Changes(cell [2]int) uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.changes[cell[0]][cell[1]] + d.changes[cell[0]][IdleParts]
}

// IdleAnswer is the rule's answer for one server: Known is false when too few periods of
// its bucket lasted as long as this one has (the caller falls back); Stay whether some
// horizon makes staying on pay; Best that horizon, F the chance the period ends within it
// and E the expected idle hours until then; AtRisk how many periods lasted as long.
type IdleAnswer struct {
	Known, Stay bool
	Best        time.Duration
	F, E        float64
	AtRisk      int
}

// Decide is the probabilistic rule of dynamic power management on the learned idle
// periods, for a server of rank idle since start, for age: with F(t) the chance its period
// ends within a further t given that it lasted age, staying on for t and then powering off
// costs idle·E[min(X-age, t)] + (1-F(t))·cycle against a cycle now; it stays on when some
// horizon has F(t)·cycle > idle·E[min(X-age, t)]. The periods of its rank and part of the
// day are read, or of its rank all day when fewer than minAtRisk of those lasted age;
// horizons reach as far as minAtRisk periods lasted.
func (d *Idle) Decide(rank int, start time.Time, age time.Duration, cycle, idle float64, minAtRisk int) IdleAnswer {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, a := d.curveAt(rank, start, age, minAtRisk)
	if c == nil {
		return IdleAnswer{}
	}
	if a >= c.k {
		return IdleAnswer{AtRisk: c.at[c.k]} // at most that many lasted a
	}
	ans := IdleAnswer{Known: true, AtRisk: c.at[a]}
	// Over the horizon that ends after bin j the gain of staying on is
	// (g(a) - g(j+1)) / s[a], g(i) = s[i]·cycle + idle·e[i] (the unconditional curve).
	ga, gain := c.g(a, cycle, idle), -1.0
	for j := a; j < c.k; j++ {
		if g := (ga - c.g(j+1, cycle, idle)) / c.s[a]; g > gain {
			gain, ans.Best = g, time.Duration(j-a+1)*IdleBin
			ans.F, ans.E = 1-c.s[j+1]/c.s[a], (c.e[j+1]-c.e[a])/c.s[a]
		}
	}
	ans.Stay = gain > 0
	return ans
}

// Flip is the age, a whole number of bins past age, at which Decide's Known or Stay for this
// server next changes with nothing else changed (no period learned, the same costs); ok is
// false when they never change (a verdict not Known stays so). A replay calls the planner
// then instead of at every bin of an idle server's idle time.
func (d *Idle) Flip(rank int, start time.Time, age time.Duration, cycle, idle float64, minAtRisk int) (at time.Duration, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.verdicts(rank, start, cycle, idle, minAtRisk).Flip(age)
}

// IdleVerdicts are Decide's verdicts at every bin of age for the servers of one rank bucket
// whose periods began in one part of the day, at one price (IdleCell tells which share them).
type IdleVerdicts struct {
	// known[b] is Decide's Known at bin b; next[b] the first bin after b whose Known or Stay
	// differs from b's.
	known [IdleBins]bool
	next  [IdleBins]int16
}

// IdleCell is the rank bucket and part of the day Decide reads for a server of rank whose
// idle period began at start: servers of one cell at one price share their IdleVerdicts.
func IdleCell(rank int, start time.Time) [2]int { return [2]int{rankBucket(rank), partOf(start)} }

// Verdicts works out Decide's verdicts at every bin for a server of rank idle since start.
func (d *Idle) Verdicts(rank int, start time.Time, cycle, idle float64, minAtRisk int) *IdleVerdicts {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.verdicts(rank, start, cycle, idle, minAtRisk)
}

func (d *Idle) verdicts(rank int, start time.Time, cycle, idle float64, minAtRisk int) *IdleVerdicts {
	r := rankBucket(rank)
	part, day := d.curve(r, partOf(start), minAtRisk), &idleCurve{}
	if part.k < IdleBins-1 {
		day = d.curve(r, -1, minAtRisk)
	}
	// Stay at bin b iff g(b) > min g over (b, k]: the suffix minima of each curve read.
	var low [2][IdleBins]float64
	for n, c := range []*idleCurve{part, day} {
		if c.k == 0 {
			continue
		}
		low[n][c.k] = c.g(c.k, cycle, idle)
		for b := c.k - 1; b >= 0; b-- {
			low[n][b] = min(low[n][b+1], c.g(b, cycle, idle))
		}
	}
	v := &IdleVerdicts{}
	var stay [IdleBins]bool
	for b := range IdleBins - 1 {
		n, c := 0, part
		if b >= part.k {
			n, c = 1, day
		}
		if v.known[b] = b < c.k; v.known[b] {
			stay[b] = c.g(b, cycle, idle) > low[n][b+1]
		}
	}
	v.next[IdleBins-1] = IdleBins
	for b := IdleBins - 2; b >= 0; b-- {
		v.next[b] = int16(b + 1)
		if v.known[b+1] == v.known[b] && stay[b+1] == stay[b] {
			v.next[b] = v.next[b+1]
		}
	}
	return v
}

// Flip is the age at which the verdict for a server idle for age next changes (see Idle.Flip).
func (v *IdleVerdicts) Flip(age time.Duration) (at time.Duration, ok bool) {
	a := int(max(age, 0) / IdleBin)
	if a >= IdleBins-1 || !v.known[a] {
		return 0, false
	}
	return time.Duration(v.next[a]) * IdleBin, true
}

// idleCurve is the Kaplan-Meier reading of one table of counts: at[b] the periods that lasted
// at least b bins, s[b] the chance a period does and e[b] its expected idle hours within its
// first b bins, read for b <= k only: k is the first bin fewer than minAtRisk periods reached
// (or the last bin, that holds every longer period).
type idleCurve struct {
	k    int
	at   [IdleBins]int
	s, e [IdleBins]float64
}

func (c *idleCurve) g(b int, cycle, idle float64) float64 { return c.s[b]*cycle + idle*c.e[b] }

// curveAt is the curve Decide reads for a server of rank whose period began at start and
// lasted age, of its part of the day or all day (only when its part falls short), with age's
// bin; nil when age is past the bins.
func (d *Idle) curveAt(rank int, start time.Time, age time.Duration, minAtRisk int) (*idleCurve, int) {
	a := int(max(age, 0) / IdleBin)
	if a >= IdleBins-1 {
		return nil, a
	}
	r := rankBucket(rank)
	if c := d.curve(r, partOf(start), minAtRisk); a < c.k {
		return c, a
	}
	return d.curve(r, -1, minAtRisk), a
}

// curve is rank bucket r's curve of part h (-1: every part), read once and kept until its
// counts change (see changed) or another minAtRisk is asked for. It is d's own: read it
// before d counts again.
func (d *Idle) curve(r, h, minAtRisk int) *idleCurve {
	cell := h
	if h < 0 {
		cell = IdleParts
	}
	c := &d.curves[r][cell]
	if d.curveFor[r][cell] != minAtRisk+1 {
		d.readCurve(r, h, minAtRisk, c)
		d.curveFor[r][cell] = minAtRisk + 1
	}
	return c
}

// readCurve reads rank bucket r's periods of part h (-1: every part) into c.
func (d *Idle) readCurve(r, h, minAtRisk int, c *idleCurve) *idleCurve {
	var ended, cut *[IdleBins]uint32
	n := 0
	if h >= 0 {
		ended, cut, n = &d.Ended[r][h], &d.Cut[r][h], int(d.Seen[r][h])
	} else {
		for h := range IdleParts {
			n += int(d.Seen[r][h])
		}
		ended, cut = &d.dayEnded[r], &d.dayCut[r]
	}
	w := IdleBin.Hours()
	c.s[0], c.e[0] = 1, 0
	c.k = IdleBins - 1
	for b := range IdleBins - 1 {
		c.at[b] = n
		if n < minAtRisk {
			c.k = b
			return c
		}
		h := float64(ended[b]) / float64(n)
		c.e[b+1] = c.e[b] + c.s[b]*w*(1-h/2)
		c.s[b+1] = c.s[b] * (1 - h)
		n -= int(ended[b] + cut[b])
	}
	c.at[c.k] = n
	return c
}

// IdleCap bounds the periods one rank bucket and part of the day holds: past it their counts
// are halved, so what was learned follows a workload that changes (as the forecast's counts
// are, see calmCap).
const IdleCap = 4096

// halve halves the counts of rank bucket r and part h, and Seen with them (Observe, which
// calls it, forgets their curves).
func (d *Idle) halve(r, h int) {
	d.Seen[r][h] = 0
	for b := range IdleBins {
		e, c := &d.Ended[r][h][b], &d.Cut[r][h][b]
		d.dayEnded[r][b] -= *e - *e/2
		d.dayCut[r][b] -= *c - *c/2
		*e, *c = *e/2, *c/2
		d.Seen[r][h] += *e + *c
	}
}

// IdleVersion is the format of the stored idle periods (IdleCount).
const IdleVersion = 1

// IdleCount is one non-zero cell of Idle, the form the store keeps (most cells are zero):
// rank bucket, part of the day, length bin, periods ended and cut there.
type IdleCount [5]uint32

// Counts are d's non-zero cells in order of rank bucket, part and bin.
func (d *Idle) Counts() []IdleCount {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []IdleCount
	for r := range IdleRanks {
		for h := range IdleParts {
			if d.Seen[r][h] == 0 {
				continue
			}
			for b := range IdleBins {
				if e, c := d.Ended[r][h][b], d.Cut[r][h][b]; e+c > 0 {
					out = append(out, IdleCount{uint32(r), uint32(h), uint32(b), e, c})
				}
			}
		}
	}
	return out
}

// IdleFromCounts rebuilds what Counts returned, checking it: each cell within the table,
// non-zero, after the one before, and no bucket holding more than IdleCap periods.
func IdleFromCounts(counts []IdleCount) (*Idle, error) {
	d := &Idle{}
	for i, c := range counts {
		r, h, b, e, cut := c[0], c[1], c[2], uint64(c[3]), uint64(c[4])
		switch {
		case r >= IdleRanks || h >= IdleParts || b >= IdleBins:
			return nil, fmt.Errorf("count %d: cell (%d, %d, %d) outside %d ranks, %d parts, %d bins", i, r, h, b, IdleRanks, IdleParts, IdleBins)
		case e+cut == 0:
			return nil, fmt.Errorf("count %d: no periods", i)
		case i > 0 && cellIndex(counts[i-1]) >= cellIndex(c):
			return nil, fmt.Errorf("count %d: out of order", i)
		case uint64(d.Seen[r][h])+e+cut > IdleCap:
			return nil, fmt.Errorf("count %d: rank bucket %d, part %d holds more than %d periods", i, r, h, IdleCap)
		}
		d.Ended[r][h][b], d.Cut[r][h][b] = c[3], c[4]
		d.dayEnded[r][b] += c[3]
		d.dayCut[r][b] += c[4]
		d.Seen[r][h] += c[3] + c[4]
	}
	return d, nil
}

func cellIndex(c IdleCount) uint64 {
	return (uint64(c[0])*IdleParts+uint64(c[1]))*IdleBins + uint64(c[2])
}
