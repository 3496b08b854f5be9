package learn

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// The shape of the statistics. Changing any of them changes the stored record's meaning:
// bump Version with it.
const (
	// Horizons is how many look-ahead times are kept (see Horizon).
	Horizons = 8
	// Bins is how many rise levels are told apart (see binLow).
	Bins = 16
	// HoursOfWeek buckets the calm statistics by the origin's hour of the week (UTC).
	HoursOfWeek = 7 * 24
	// Regimes tells origins apart by where the need stands (see regimeOf): 0 calm at the
	// last hour's peak, 1-3 rising, 4-8 below that peak.
	Regimes = 9
	// Version is the format of the stored statistics.
	Version = 1

	// Step is the time between origins.
	Step = 60 * time.Second
	// Recent is the look-back over which a rise makes an origin's need rising; Peak the one
	// over which the highest need makes it below its peak.
	Recent = 5 * time.Minute
	Peak   = time.Hour

	// calmCap and activeCap bound the origins one hour-of-week bucket (about eight weeks of
	// that hour) and one active regime (about a week of rising need) hold: past them the
	// counts are halved, so the statistics follow a workload that changes.
	calmCap   = 8 * 60
	activeCap = 7 * 24 * 60
	// ringLen is how many boot and shutdown times are kept.
	ringLen = 16
)

// Horizon is look-ahead time i: 1, 2, 5, 10, 20, 30, 60 and 120 minutes.
func Horizon(i int) time.Duration {
	return [Horizons]time.Duration{
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute,
		20 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour,
	}[i]
}

// binLow is the lowest rise bin b holds; bin b holds [binLow(b), binLow(b+1)), the last bin
// everything from 128 up.
func binLow(b int) int {
	return [Bins + 1]int{0, 1, 2, 3, 4, 5, 6, 8, 10, 13, 16, 24, 32, 48, 64, 128, 1 << 20}[b]
}

// binOf is the bin rise falls in. Bins 0-5 hold one rise each, which are most rises: the
// rest are looked for upwards from bin 6.
func binOf(rise int) int {
	if rise < binLow(6) {
		return max(rise, 0)
	}
	for b := 6; b < Bins-1; b++ {
		if rise < binLow(b+1) {
			return b
		}
	}
	return Bins - 1
}

// regimeOf places a need by its recent past: below the highest need of the last Peak by gap
// (regimes 4-8: 1, 2-3, 4-7, 8-15, 16 or more: servers freed lately are often needed again
// soon), else at that peak and risen by rise over the last Recent (regimes 1-3: 1, 2-3, 4 or
// more: a burst under way goes on), else calm at the peak (0).
func regimeOf(rise, gap int) int {
	switch {
	case gap >= 16:
		return 8
	case gap >= 8:
		return 7
	case gap >= 4:
		return 6
	case gap >= 2:
		return 5
	case gap == 1:
		return 4
	case rise >= 4:
		return 3
	case rise >= 2:
		return 2
	case rise == 1:
		return 1
	}
	return 0
}

// hourOfWeek of unix time t, UTC: 0 is Sunday 00:00-01:00. Unix time 0 is a Thursday
// 00:00 (hour 4*24 of its week), and UTC has no leap hours: the hours since it tell.
func hourOfWeek(t int64) int {
	return int(((hours(t)+4*24)%HoursOfWeek + HoursOfWeek) % HoursOfWeek)
}

// hours is the hours since 1970 at unix time t, rounded down (before 1970 too).
func hours(t int64) int64 {
	h := t / 3600
	if t%3600 < 0 {
		h--
	}
	return h
}

// Stats is what rota learned about each pool, by pool name. The zero value is empty and
// ready for use. Not safe for concurrent use.
type Stats struct {
	Pools map[string]*Pool `json:"pools"`
}

// Pool is what rota learned about one pool. Its fields are exported for the store; change
// them only through Observe, ObserveBoot, ObserveShutdown and Gap.
type Pool struct {
	// Times and Needs are the recent need as change points (unix seconds, servers), oldest
	// first, back to Peak before the change in force at the oldest origin still open.
	Times []int64 `json:"times"`
	Needs []int32 `json:"needs"`
	// Last is the time of the last observation; Next the next origin to close (0: none yet).
	Last int64 `json:"last"`
	Next int64 `json:"next"`
	// Calm counts calm origins by hour of week, horizon and rise bin
	// (index (how*Horizons+h)*Bins+b); CalmAll the same over every hour.
	Calm    []uint32 `json:"calm"`
	CalmAll []uint32 `json:"calm_all"`
	// Active counts the other origins by regime (1..), horizon and bin
	// (index ((r-1)*Horizons+h)*Bins+b).
	Active []uint32 `json:"active"`
	// Origins is how many origins were counted in all.
	Origins int64 `json:"origins"`
	// Boots and Shutdowns are the last boot and shutdown times seen, in seconds.
	Boots     []int32 `json:"boots,omitempty"`
	Shutdowns []int32 `json:"shutdowns,omitempty"`
	// active is Active summed over the regimes (what a View of a rising regime reads as the
	// wider statistics), kept as the rising origins are counted; summed when the pool is read
	// back (nil: a pool made by hand, summed at its first rising origin).
	active []uint32
}

// UnmarshalJSON reads a pool back and sums its Active counts (when there are as many as
// Check wants).
func (p *Pool) UnmarshalJSON(b []byte) error {
	type stored Pool // the fields alone, not this method
	if err := json.Unmarshal(b, (*stored)(p)); err != nil {
		return err
	}
	p.active = nil
	if len(p.Active) == (Regimes-1)*Horizons*Bins {
		all := p.activeSum()
		p.active = all[:]
	}
	return nil
}

// NewPool is an empty pool's statistics.
func NewPool() *Pool {
	return &Pool{
		Calm:    make([]uint32, HoursOfWeek*Horizons*Bins),
		CalmAll: make([]uint32, Horizons*Bins),
		Active:  make([]uint32, (Regimes-1)*Horizons*Bins),
		active:  make([]uint32, Horizons*Bins),
	}
}

// Check reports what is wrong with a pool's statistics read back from the store ("" when
// nothing): the sizes of its tables and the order of its series.
func (p *Pool) Check() error {
	switch {
	case len(p.Calm) != HoursOfWeek*Horizons*Bins:
		return fmt.Errorf("calm has %d counts, want %d", len(p.Calm), HoursOfWeek*Horizons*Bins)
	case len(p.CalmAll) != Horizons*Bins:
		return fmt.Errorf("calm_all has %d counts, want %d", len(p.CalmAll), Horizons*Bins)
	case len(p.Active) != (Regimes-1)*Horizons*Bins:
		return fmt.Errorf("active has %d counts, want %d", len(p.Active), (Regimes-1)*Horizons*Bins)
	case len(p.Times) != len(p.Needs):
		return fmt.Errorf("%d times but %d needs", len(p.Times), len(p.Needs))
	case !slices.IsSorted(p.Times):
		return fmt.Errorf("times out of order")
	case p.Origins < 0:
		return fmt.Errorf("origins %d is negative", p.Origins)
	case len(p.Boots) > ringLen || len(p.Shutdowns) > ringLen:
		return fmt.Errorf("more than %d boot or shutdown times", ringLen)
	}
	return nil
}

func (s *Stats) pool(name string) *Pool {
	if s.Pools == nil {
		s.Pools = map[string]*Pool{}
	}
	p := s.Pools[name]
	if p == nil {
		p = NewPool()
		s.Pools[name] = p
	}
	return p
}

// Observe notes each pool's need at now (servers with work on them, and the servers the
// waiting work needs) and counts every origin whose longest horizon has passed. An
// observation older than the pool's last is ignored (a clock stepped back).
func (s *Stats) Observe(now time.Time, need map[string]int) {
	t := now.Unix()
	for name, n := range need {
		s.pool(name).observe(t, n)
	}
}

// ObserveBoot and ObserveShutdown note one boot (power-on to ready) or shutdown time.
func (s *Stats) ObserveBoot(pool string, d time.Duration) {
	p := s.pool(pool)
	p.Boots = ring(p.Boots, d)
}

func (s *Stats) ObserveShutdown(pool string, d time.Duration) {
	p := s.pool(pool)
	p.Shutdowns = ring(p.Shutdowns, d)
}

func ring(r []int32, d time.Duration) []int32 {
	if d <= 0 {
		return r
	}
	r = append(r, int32(min(d/time.Second, 1<<30)))
	if len(r) > ringLen {
		r = r[len(r)-ringLen:]
	}
	return r
}

// Gap tells every pool that nothing was observed between its last observation and now (the
// loop was down): its recent series is dropped, so no origin is counted across the gap; what
// was counted stays.
func (s *Stats) Gap(now time.Time) {
	for _, p := range s.Pools {
		p.Times, p.Needs, p.Next = p.Times[:0], p.Needs[:0], 0
		p.Last = now.Unix()
	}
}

func (p *Pool) observe(t int64, n int) {
	if len(p.Times) > 0 && t < p.Last {
		return
	}
	p.Last = t
	if k := len(p.Needs); k == 0 || int(p.Needs[k-1]) != n {
		p.Times = append(p.Times, t)
		p.Needs = append(p.Needs, int32(n))
	}
	step, back, longest := int64(Step/time.Second), int64(Peak/time.Second), int64(Horizon(Horizons-1)/time.Second)
	if p.Next == 0 {
		// The first origin has a full look-back behind it.
		p.Next = (p.Times[0]+back+step-1)/step*step + step
	}
	// i is the change point in force at the next origin: it only moves on as origins close,
	// and c is it with its look-back, worked out once for the origins it is in force at. The
	// origins alike (see run) are counted at once.
	c := change{i: -1}
	for i := p.at(p.Next); p.Next+longest <= t; {
		for i+1 < len(p.Times) && p.Times[i+1] <= p.Next {
			i++
		}
		if i < 0 {
			p.Next += step // nothing observed before it: not counted
			continue
		}
		if c.i != i {
			c = p.changeAt(i)
		}
		rises := p.rises(p.Next, c)
		k := p.run(p.Next, c, rises, t-longest)
		p.count(hourOfWeek(p.Next), c.regime(p.Next), rises, k)
		p.Next += k * step
	}
	// The next origin's regime looks back from the change in force at it.
	keep := p.Next
	if i := p.at(keep); i >= 0 {
		keep = p.Times[i]
	}
	p.prune(keep - back)
}

// prune drops change points before t, keeping the one in force at t.
func (p *Pool) prune(t int64) {
	i, _ := slices.BinarySearch(p.Times, t+1) // first change after t
	if i <= 1 {
		return
	}
	keep := i - 1
	p.Times = append(p.Times[:0], p.Times[keep:]...)
	p.Needs = append(p.Needs[:0], p.Needs[keep:]...)
}

// at is the index of the change point in force at t (-1 before the first).
func (p *Pool) at(t int64) int {
	i, _ := slices.BinarySearch(p.Times, t+1)
	return i - 1
}

// rises is, for each horizon, how far the need rises within it after origin o, change c in
// force at o.
func (p *Pool) rises(o int64, c change) (rises [Horizons]int) {
	peak, j := c.need, c.i+1
	for h := range Horizons {
		end := o + int64(Horizon(h)/time.Second)
		for ; j < len(p.Times) && p.Times[j] <= end; j++ {
			peak = max(peak, int(p.Needs[j]))
		}
		rises[h] = peak - c.need
	}
	return rises
}

// run is how many origins from o on (Step apart, up to last) are alike, change c in force at
// o and rises its rises: in o's hour, in force at each of them c, its regime the same (no
// rise of it gets older than Recent, nor a change older than Peak, between them), and no
// change of need above a horizon's peak coming within that horizon. Each would be counted as
// o is (count counts them at once).
func (p *Pool) run(o int64, c change, rises [Horizons]int, last int64) int64 {
	last = min(last, (hours(o)+1)*3600-1)
	if c.i+1 < len(p.Times) {
		last = min(last, p.Times[c.i+1]-1)
	}
	switch age := o - c.at; {
	case age < int64(Recent/time.Second):
		last = min(last, c.at+int64(Recent/time.Second)-1)
	case age < int64(Peak/time.Second):
		last = min(last, c.at+int64(Peak/time.Second)-1)
	}
	j := c.i + 1
	for h := range Horizons {
		d := int64(Horizon(h) / time.Second)
		for j < len(p.Times) && p.Times[j] <= o+d {
			j++ // within the horizon already: in its peak
		}
		for q := j; q < len(p.Times) && p.Times[q]-d <= last; q++ {
			if int(p.Needs[q]) > c.need+rises[h] {
				last = p.Times[q] - d - 1
				break
			}
		}
	}
	return (last-o)/int64(Step/time.Second) + 1
}

// changeIn is the change in force at t (i -1, need 0: none before the first observation).
func (p *Pool) changeIn(t int64) change {
	if i := p.at(t); i >= 0 {
		return p.changeAt(i)
	}
	return change{i: -1}
}

// change is change point i of the need (at its time) with its look-back: the lowest need
// over the Recent before it and the highest over the Peak before it, its own included.
type change struct {
	i, need, low, high int
	at                 int64
}

func (p *Pool) changeAt(i int) change {
	c := change{i: i, need: int(p.Needs[i]), at: p.Times[i]}
	c.low, c.high = c.need, c.need
	recent := c.at - int64(Recent/time.Second)
	for j := max(p.at(c.at-int64(Peak/time.Second)), 0); j < i; j++ {
		c.high = max(c.high, int(p.Needs[j]))
		if p.Times[j+1] > recent {
			c.low = min(c.low, int(p.Needs[j]))
		}
	}
	return c
}

// regime is the regime at t of the need of change c, in force at t (calm when none). Where
// the need stands is judged at its last change, so it changes only with the need, as a rise
// gets older than Recent, and as a change gets older than Peak: rising, at the peak of the
// Peak before that change, by how much over the Recent before it; or below that peak by how
// much; or, an hour after the change, calm.
func (c change) regime(t int64) int {
	rise, gap := c.need-c.low, c.high-c.need
	if t-c.at >= int64(Recent/time.Second) {
		rise = 0 // a rise that did not go on within Recent is over
	}
	if t-c.at >= int64(Peak/time.Second) {
		gap = 0 // and an hour without change is calm
	}
	return regimeOf(rise, gap)
}

// count counts k origins alike of hour of week how, regime and rises, as counting each in
// turn would: each adds one to its bin of each horizon (of the hour's row and the all-hours
// one when calm, else of the regime's), and the row's counts are halved after the origin that
// takes them past their cap (after the first, if they were already).
func (p *Pool) count(how, regime int, rises [Horizons]int, k int64) {
	var bins [Horizons]int
	for h, r := range rises {
		bins[h] = h*Bins + binOf(r)
	}
	row, limit := p.Calm[how*Horizons*Bins:(how+1)*Horizons*Bins], int64(calmCap)
	if regime > 0 {
		row, limit = p.Active[(regime-1)*Horizons*Bins:regime*Horizons*Bins], activeCap
		if p.active == nil {
			all := p.activeSum()
			p.active = all[:]
		}
	}
	for k > 0 {
		n := max(1, min(k, limit+1-int64(total(row[:Bins]))))
		for _, b := range bins {
			row[b] += uint32(n)
			if regime == 0 {
				p.CalmAll[b] += uint32(n)
			} else {
				p.active[b] += uint32(n)
			}
		}
		p.Origins += n
		k -= n
		if regime == 0 {
			p.bound(row)
		} else if total(row[:Bins]) > activeCap {
			for b := range row {
				half := row[b] / 2
				p.active[b] -= row[b] - half
				row[b] = half
			}
		}
	}
}

// activeSum is Active summed over the regimes.
func (p *Pool) activeSum() (sum [Horizons * Bins]uint32) {
	// Rows as arrays: their sizes are known, so the sum checks no bounds.
	for r := range Regimes - 1 {
		row := (*[Horizons * Bins]uint32)(p.Active[r*Horizons*Bins:])
		for k := range sum {
			sum[k] += row[k]
		}
	}
	return sum
}

// bound halves an hour's calm counts once its origins pass calmCap.
func (p *Pool) bound(row []uint32) {
	if total(row[:Bins]) > calmCap {
		for k := range row {
			half := row[k] / 2
			p.CalmAll[k] -= row[k] - half
			row[k] = half
		}
	}
}

func total(c []uint32) uint64 {
	var n uint64
	for _, v := range c {
		n += uint64(v)
	}
	return n
}
