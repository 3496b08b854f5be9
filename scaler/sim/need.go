package sim

import (
	"sort"
)

// Point is one step of a series: Value from T on.
type Point struct {
	T     int64   `json:"t"`
	Value float64 `json:"v"`
}

// poolNeed is what sizing a pool needs from the trace.
type poolNeed struct {
	peak, p95, largest int
}

// bound is the no-delay, perfectly packed replay of a set of jobs: every job started at its
// submission on perfectly packed servers of its pool (for 8-GPU servers: ceil(busy GPUs / 8)).
type bound struct {
	need    []Point    // servers needed over time, all pools together
	total   float64    // server-hours: the lower bound
	perPool []float64  // server-hours per pool
	busy    float64    // unit-hours of work
	pools   []poolNeed // per-pool peak, p95 and largest job, for sizing
}

// needs is the bound of every job some pool fits, which sizes the fleet.
func (e *Env) needs() []poolNeed {
	b := e.bound(func(int) bool { return true })
	e.setBound(b)
	return b.pools
}

// setBound makes b the environment's lower bound.
func (e *Env) setBound(b bound) {
	e.Need, e.LowerBound, e.poolBound, e.BusyUnits = b.need, b.total, b.perPool, b.busy
}

// bound sweeps the jobs that include accepts (by index; jobs no pool fits are always left out).
func (e *Env) bound(include func(i int) bool) bound {
	type delta struct {
		t          int64
		pool       int
		gpus, cpus int
	}
	var ds []delta
	b := bound{perPool: make([]float64, len(e.Pools)), pools: make([]poolNeed, len(e.Pools))}
	for i, j := range e.Jobs {
		if j.Pool < 0 || !include(i) {
			continue
		}
		g, c := j.GPUs*j.Nodes, j.CPUs*j.Nodes
		ds = append(ds, delta{j.Submit, j.Pool, g, c}, delta{j.Submit + j.Duration, j.Pool, -g, -c})
		b.pools[j.Pool].largest = max(b.pools[j.Pool].largest, j.Nodes)
		b.busy += float64(j.Nodes*unitsOf(&e.Pools[j.Pool], j.GPUs, j.CPUs)) * float64(j.Duration) / 3600
	}
	sort.SliceStable(ds, func(a, b int) bool { return ds[a].t < ds[b].t })
	gpus := make([]int, len(e.Pools))
	cpus := make([]int, len(e.Pools))
	need := make([]int, len(e.Pools))
	// time spent at each need level, per pool, for the p95
	hist := make([]map[int]int64, len(e.Pools))
	for i := range hist {
		hist[i] = map[int]int64{}
	}
	total, prevT := 0, e.T0
	for i := 0; i < len(ds); {
		t := ds[i].t
		for p := range e.Pools {
			hist[p][need[p]] += t - prevT
			b.perPool[p] += float64(need[p]) * float64(t-prevT) / 3600
		}
		b.total += float64(total) * float64(t-prevT) / 3600
		for ; i < len(ds) && ds[i].t == t; i++ {
			gpus[ds[i].pool] += ds[i].gpus
			cpus[ds[i].pool] += ds[i].cpus
		}
		total = 0
		for p := range e.Pools {
			pl := &e.Pools[p]
			need[p] = ceilDiv(gpus[p], pl.GPUs)
			need[p] = max(need[p], ceilDiv(cpus[p], pl.CPUs))
			b.pools[p].peak = max(b.pools[p].peak, need[p])
			total += need[p]
		}
		if n := len(b.need); n > 0 && b.need[n-1].T == t {
			b.need[n-1].Value = float64(total)
		} else {
			b.need = append(b.need, Point{T: t, Value: float64(total)})
		}
		prevT = t
	}
	for p := range e.Pools {
		b.pools[p].p95 = quantileOfTime(hist[p], 0.95)
	}
	return b
}

// unitsOf is what a job's server holds of the pool's main unit (GPUs, else CPU cores).
func unitsOf(p *Pool, gpus, cpus int) int {
	if p.GPUs > 0 {
		return gpus
	}
	return cpus
}

// quantileOfTime is the level under which the series spent share q of its time.
func quantileOfTime(h map[int]int64, q float64) int {
	levels := make([]int, 0, len(h))
	var total int64
	for l, d := range h {
		levels = append(levels, l)
		total += d
	}
	sort.Ints(levels)
	var acc int64
	for _, l := range levels {
		acc += h[l]
		if float64(acc) >= q*float64(total) {
			return l
		}
	}
	return 0
}

func ceilDiv(a, b int) int {
	if b <= 0 {
		if a > 0 {
			return 1 << 30
		}
		return 0
	}
	return (a + b - 1) / b
}
