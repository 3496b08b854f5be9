package sim

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// flexGroup is the running work of the jobs that fit the same pools (more than one) with
// per-node shapes in the same proportion of GPUs to CPUs. Proportional shapes may share a group:
// any split of their loads over the pools is a split of their sum, so the relaxation's optimum
// is the same; shapes in other proportions may not (CPU-only work and GPU work fitting the same
// two pools can go each to the pool with room for it, which one split for both would forbid).
type flexGroup struct {
	pools      []int // the pools that take its jobs, the cheapest first
	gpus, cpus int   // running load, all its jobs' nodes together
}

// units is what share of the group's load holds of pool p's main unit (GPUs, else CPU cores).
func (g *flexGroup) units(pools []Pool, p int, share float64) float64 {
	return share * float64(unitsOf(&pools[p], g.gpus, g.cpus))
}

// groupKey is what puts two jobs in one flexGroup: their fit set and their shape's direction.
type groupKey struct{ set, gpus, cpus int }

// keyOf is the group key of a job of per-node shape (g, c) fitting set: the shape divided by
// the greatest common divisor of its two parts.
func keyOf(set, g, c int) groupKey {
	d := gcd(g, c)
	return groupKey{set, g / d, c / d}
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// relaxation is the lower bound's placement at one instant: how few servers can hold the work
// running, each pool's fixed load (jobs only it fits) on its own servers and the flexible
// groups split over their pools, as a linear program. (It kept the answers it found by what
// the program read; on three-pool mixed workloads they served 2% of the programs and saved no
// time: docs/benchmarks.md.)
type relaxation struct {
	pools []Pool
	// Per pool: the load of the jobs only it fits, and the servers that load alone needs.
	fixedGPUs, fixedCPUs, least []int
	groups                      []flexGroup
	involved                    []int
	used                        [][2]float64 // fitsSpare's GPUs and CPUs laid on each pool
	// solveLP solves its linear programs: simplex (a test makes it fail, to check what is
	// counted then).
	solveLP func(cost []float64, a mat.Matrix, b []float64) (float64, []float64, error)
	// failed counts the instants where a program failed and the answer is looser (solve).
	failed int
}

// placement is a relaxation's answer: servers needed beyond each pool's least (over the
// involved pools), how many of each involved pool hold them, and how many units (each pool's
// main unit) the groups hold where it puts them, less what they would in their cheapest pools.
type placement struct {
	extra int
	more  []float64 // by the involved pools, in order
	moved float64
}

// lpTolerance is what the LP's optimum may exceed a whole number of servers by, from float
// rounding and the simplex stopping within reducedCostTol of the optimum, and still round up to
// that number: rounding down a true fraction that close to it only loosens the bound, rounding
// up a whole number would break it.
const lpTolerance = 1e-6

// reducedCostTol is where lp.Simplex stops, as a share of the largest cost: when no reduced cost
// is below minus it times that. At 0 it pivoted on float noise and, on a degenerate program,
// cycled forever (three jobs of 1 GPU and 4, 8 and 12 cores on pools of 2 and 8 GPUs hung
// rotactl simulate: TestDegenerateProgramEnds).
const reducedCostTol = 1e-9

// simplex is lp.Simplex (minimize cost·x, a x = b, x >= 0) stopping at reducedCostTol.
func simplex(cost []float64, a mat.Matrix, b []float64) (float64, []float64, error) {
	return lp.Simplex(cost, a, b, reducedCostTol*slices.Max(cost), nil)
}

// newRelaxation is a relaxation of the pools with no work running; groups are the flexible
// groups there will be, their loads zero.
func newRelaxation(pools []Pool, groups []flexGroup) *relaxation {
	n := len(pools)
	return &relaxation{pools: pools, fixedGPUs: make([]int, n), fixedCPUs: make([]int, n), least: make([]int, n),
		groups: groups, solveLP: simplex}
}

// servers is the instant's need: at least each pool's least, plus the servers the flexible
// groups add, written into perPool (each pool's servers, summing to the need); and the units
// the groups hold as placed less what they would in their cheapest pools (placement.moved).
func (r *relaxation) servers(perPool []float64) (int, float64) {
	need := 0
	r.involved = r.involved[:0]
	for p := range r.pools {
		r.least[p] = max(ceilDiv(r.fixedGPUs[p], r.pools[p].GPUs), ceilDiv(r.fixedCPUs[p], r.pools[p].CPUs))
		perPool[p] = float64(r.least[p])
		need += r.least[p]
	}
	for _, g := range r.groups {
		if g.gpus > 0 || g.cpus > 0 {
			for _, p := range g.pools {
				if !slices.Contains(r.involved, p) {
					r.involved = append(r.involved, p)
				}
			}
		}
	}
	if len(r.involved) == 0 {
		return need, 0
	}
	if ok, moved := r.fitsSpare(); ok {
		return need, moved
	}
	slices.Sort(r.involved)
	pl := r.solve()
	for i, p := range r.involved {
		perPool[p] += pl.more[i]
	}
	return need + pl.extra, pl.moved
}

// fitsSpare reports whether the running groups fit in the room the pools' least servers leave,
// each group's load laid over its pools in turn, cheapest first: then no server more is
// needed, and the linear program would say so (most instants on a fleet of CPU and GPU
// servers are such). It also gives placement.moved for that laying.
func (r *relaxation) fitsSpare() (bool, float64) {
	r.used = r.used[:0]
	for range r.pools {
		r.used = append(r.used, [2]float64{})
	}
	moved := 0.0
	for _, g := range r.groups {
		moved -= g.units(r.pools, g.pools[0], 1)
		left := 1.0 // the group's share not yet laid
		for _, p := range g.pools {
			if left <= 0 {
				break
			}
			pl, u := &r.pools[p], &r.used[p]
			share := left
			if g.gpus > 0 {
				share = min(share, (float64(pl.GPUs*r.least[p]-r.fixedGPUs[p])-u[0])/float64(g.gpus))
			}
			if g.cpus > 0 {
				share = min(share, (float64(pl.CPUs*r.least[p]-r.fixedCPUs[p])-u[1])/float64(g.cpus))
			}
			if share > 0 {
				u[0] += share * float64(g.gpus)
				u[1] += share * float64(g.cpus)
				left -= share
				moved += g.units(r.pools, p, share)
			}
		}
		if left > 0 {
			return false, 0
		}
	}
	return true, moved
}

// solve finds the instant's placement. Over the involved pools q, with m_q servers beyond its
// least L_q and x_kq the share of group k's load put on q (the shares of a group summing to 1),
// each pool's servers hold its fixed load and the shares put on it, in GPUs and in CPUs:
//
//	cap_q (L_q + m_q) >= fixed_q + sum_k x_kq load_k,   m_q, x_kq >= 0
//
// Whole servers, each job's nodes on whole servers, are one placement of this: the least
// number of servers it allows, rounded up, is at most what any real placement powers. Its m_q
// attribute those servers to pools: a second program finds the cheapest split (by each pool's
// price an hour) of that whole number over the pools, since the fewest servers alone favour
// the pool of the largest servers (a CPU job alone fits in fewer GPU servers of 96 cores than
// CPU servers of 64, yet one server of either is what it needs).
func (r *relaxation) solve() placement {
	a, b, ms := r.program()
	rows, cols := a.Dims()
	cost := make([]float64, cols)
	for i := range ms {
		cost[i] = 1
	}
	fewest, _, err := r.solveLP(cost, a, b)
	if err != nil {
		// The program is always feasible and bounded (enough servers hold any load), so only
		// floats fail it: the need is left at the pools' least, what their own jobs need
		// whatever the flexible work does, still a bound but a looser one, which the replay's
		// notes say (failed).
		r.failed++
		return placement{more: make([]float64, ms)}
	}
	pl := placement{extra: max(0, int(math.Ceil(fewest-lpTolerance))), more: make([]float64, ms)}

	// The same rows, and the involved pools' servers summing to the whole number (or to the
	// optimum, where it rounded down by the tolerance).
	split := mat.NewDense(rows+1, cols, nil)
	split.Slice(0, rows, 0, cols).(*mat.Dense).Copy(a)
	for i := range ms {
		split.Set(rows, i, 1)
		cost[i] = r.pools[r.involved[i]].PerHour
	}
	_, x, err := r.solveLP(cost, split, append(b, max(float64(pl.extra), fewest)))
	if err != nil {
		// As above: the servers are counted all the same, in the cheapest involved pool (a
		// split no dearer than the cheapest that holds the work, so the bound's cost stays a
		// bound), and the groups' units as in their cheapest pools.
		r.failed++
		cheapest := 0
		for i, p := range r.involved {
			if r.pools[p].PerHour < r.pools[r.involved[cheapest]].PerHour {
				cheapest = i
			}
		}
		pl.more[cheapest] = float64(pl.extra)
		return pl
	}
	copy(pl.more, x[:ms])
	col := ms
	for _, g := range r.groups {
		if g.gpus == 0 && g.cpus == 0 {
			continue
		}
		pl.moved -= g.units(r.pools, g.pools[0], 1)
		for _, p := range g.pools {
			pl.moved += g.units(r.pools, p, x[col])
			col++
		}
	}
	return pl
}

// program is solve's linear program in standard form (A x = b, x >= 0): its columns are m_q
// for each involved pool (the first ms), x_kq for each running group and each of its pools,
// then one surplus for each pool's GPU and CPU rows; its rows are one per running group
// (shares summing to 1), then a pool's GPU row and CPU row, each divided by the pool's
// capacity, and only where some group placed there has such a load (where none has, the row
// holds with m_q = 0 whatever the shares).
func (r *relaxation) program() (a *mat.Dense, b []float64, ms int) {
	ms = len(r.involved)
	col := func(p int) int { return slices.Index(r.involved, p) }
	type resRow struct {
		pool, res int // res 0: GPUs, 1: CPUs
	}
	var res []resRow
	running, shares := 0, 0
	for _, g := range r.groups {
		if g.gpus == 0 && g.cpus == 0 {
			continue
		}
		running++
		shares += len(g.pools)
		for _, p := range g.pools {
			if g.gpus > 0 && !slices.Contains(res, resRow{p, 0}) {
				res = append(res, resRow{p, 0})
			}
			if g.cpus > 0 && !slices.Contains(res, resRow{p, 1}) {
				res = append(res, resRow{p, 1})
			}
		}
	}
	rows, cols := running+len(res), ms+shares+len(res)
	a = mat.NewDense(rows, cols, nil)
	b = make([]float64, rows)
	for i, rr := range res {
		row := running + i
		pl := &r.pools[rr.pool]
		capacity, fixed := float64(pl.GPUs), r.fixedGPUs[rr.pool]
		if rr.res == 1 {
			capacity, fixed = float64(pl.CPUs), r.fixedCPUs[rr.pool]
		}
		a.Set(row, col(rr.pool), 1)
		a.Set(row, ms+shares+i, -1)
		b[row] = float64(fixed)/capacity - float64(r.least[rr.pool])
	}
	k, x := 0, ms
	for _, g := range r.groups {
		if g.gpus == 0 && g.cpus == 0 {
			continue
		}
		b[k] = 1
		for _, p := range g.pools {
			a.Set(k, x, 1)
			for i, rr := range res {
				load, capacity := float64(g.gpus), float64(r.pools[p].GPUs)
				if rr.res == 1 {
					load, capacity = float64(g.cpus), float64(r.pools[p].CPUs)
				}
				if rr.pool == p && load > 0 {
					a.Set(running+i, x, -load/capacity)
				}
			}
			x++
		}
		k++
	}
	return a, b, ms
}
