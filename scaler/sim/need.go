package sim

import (
	"cmp"
	"slices"
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
	largestLine        int // the trace line of the first job of largest servers
}

// bound is the no-delay, perfectly packed replay of a set of jobs: every job started at its
// submission on perfectly packed servers (for 8-GPU servers: ceil(busy GPUs / 8)). A job only
// one pool fits counts in that pool; one that several fit counts where the servers are fewest
// (the relaxation), as the replay's job manager starts it on any server on that fits it.
type bound struct {
	need    []Point    // servers needed over time, all pools together
	total   float64    // server-hours: the lower bound
	perPool []float64  // server-hours per pool, the relaxation's cheapest split of the need
	busy    float64    // unit-hours of work, each job in its cheapest pool
	placed  float64    // unit-hours of work as the relaxation places it (perPool's)
	pools   []poolNeed // per-pool peak, p95 and largest job, each job in its cheapest pool, for sizing
	failed  int        // instants where the relaxation's linear program failed (relaxation.failed)
}

// needs is the bound of every job some pool fits, which sizes the fleet.
func (e *Env) needs() []poolNeed {
	b := e.bound(func(int) bool { return true })
	e.setBound(b)
	return b.pools
}

// setBound makes b the environment's lower bound.
func (e *Env) setBound(b bound) {
	e.Need, e.LowerBound, e.poolBound, e.BusyUnits, e.boundUnits = b.need, b.total, b.perPool, b.busy, b.placed
	e.boundFailed = b.failed
}

// bound sweeps the jobs that include accepts (by index; jobs no pool fits are always left out).
// Sizing counts each job in its cheapest pool (it says how many servers of each pool the work
// would want, not the fewest servers it can do with).
func (e *Env) bound(include func(i int) bool) bound {
	type delta struct {
		t          int64
		pool       int // the cheapest pool that fits the job: sizing
		fixed      int // the one pool that fits it, else -1
		group      int // its flexible group where several pools fit it, else -1
		gpus, cpus int
	}
	var ds []delta
	b := bound{perPool: make([]float64, len(e.Pools)), pools: make([]poolNeed, len(e.Pools))}
	var groups []flexGroup
	groupOf := map[groupKey]int{}
	for i, j := range e.Jobs {
		if j.Pool < 0 || !include(i) {
			continue
		}
		g, c := j.GPUs*j.Nodes, j.CPUs*j.Nodes
		fixed, group := j.Pool, -1
		// (a job of no GPU and no CPU loads no pool: it stays in its cheapest)
		if fits := e.fitSets[j.fitSet]; len(fits) > 1 && g+c > 0 {
			fixed = -1
			k := keyOf(j.fitSet, j.GPUs, j.CPUs)
			id, ok := groupOf[k]
			if !ok {
				id = len(groups)
				groupOf[k] = id
				byPrice := slices.Clone(fits)
				slices.SortStableFunc(byPrice, func(a, b int) int { return cmp.Compare(e.Pools[a].PerHour, e.Pools[b].PerHour) })
				groups = append(groups, flexGroup{pools: byPrice})
			}
			group = id
		}
		ds = append(ds, delta{j.Submit, j.Pool, fixed, group, g, c}, delta{j.Submit + j.Duration, j.Pool, fixed, group, -g, -c})
		if pn := &b.pools[j.Pool]; j.Nodes > pn.largest {
			pn.largest, pn.largestLine = j.Nodes, j.Line
		}
		b.busy += float64(j.Nodes*unitsOf(&e.Pools[j.Pool], j.GPUs, j.CPUs)) * float64(j.Duration) / 3600
	}
	sort.SliceStable(ds, func(a, b int) bool { return ds[a].t < ds[b].t })
	gpus := make([]int, len(e.Pools))
	cpus := make([]int, len(e.Pools))
	sized := make([]int, len(e.Pools))
	servers := make([]float64, len(e.Pools))
	r := newRelaxation(e.Pools, groups)
	// time spent at each sizing need level, per pool, for the p95
	hist := make([]map[int]int64, len(e.Pools))
	for i := range hist {
		hist[i] = map[int]int64{}
	}
	total, moved, prevT := 0, 0.0, e.T0
	for i, n := 0, 0; i < len(ds); n++ {
		if n%4096 == 0 && e.ctx.Err() != nil {
			return b // cut short: the caller returns the context's error
		}
		t := ds[i].t
		for p := range e.Pools {
			hist[p][sized[p]] += t - prevT
			b.perPool[p] += servers[p] * float64(t-prevT) / 3600
		}
		b.total += float64(total) * float64(t-prevT) / 3600
		b.placed += moved * float64(t-prevT) / 3600
		for ; i < len(ds) && ds[i].t == t; i++ {
			d := &ds[i]
			gpus[d.pool] += d.gpus
			cpus[d.pool] += d.cpus
			if d.group >= 0 {
				r.groups[d.group].gpus += d.gpus
				r.groups[d.group].cpus += d.cpus
			} else {
				r.fixedGPUs[d.fixed] += d.gpus
				r.fixedCPUs[d.fixed] += d.cpus
			}
		}
		for p := range e.Pools {
			pl := &e.Pools[p]
			sized[p] = max(ceilDiv(gpus[p], pl.GPUs), ceilDiv(cpus[p], pl.CPUs))
			b.pools[p].peak = max(b.pools[p].peak, sized[p])
		}
		total, moved = r.servers(servers)
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
	b.placed += b.busy
	b.failed = r.failed
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
