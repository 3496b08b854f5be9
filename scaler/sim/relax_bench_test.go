package sim

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rotahq/rota/scaler/sim/trace"
)

// threePoolMix is a fleet of 32-core CPU servers at 1.2 an hour, 2-GPU servers of 32 cores at
// 4 and 8-GPU servers of 96 cores at 12, sized at --fleet p95, and 3,000 jobs from seed k: half
// CPU work of 1 to 32 cores (each fitting all three pools, or the CPU and the large-GPU pools),
// half GPU work of 1 to 16 GPUs (1 or 2 fitting both GPU pools, more the large one alone), an
// arrival every 2 minutes on average with a pause of up to 4 hours one time in 20.
func threePoolMix(b testing.TB, k uint64) *Env {
	cfg := replayConfig(b, `pools:
  - {name: cpu, profile: {cpu_cores: 32}, cost: {hourly: 1.2}, boot_timeout: 5m}
  - {name: small-gpu, profile: {cpu_cores: 32, gpus: 2}, cost: {hourly: 4}, boot_timeout: 5m}
  - {name: large-gpu, profile: {cpu_cores: 96, gpus: 8}, cost: {hourly: 12}, boot_timeout: 5m}
`)
	rng := rand.New(rand.NewPCG(k, 3))
	var jobs []trace.Job
	t := int64(0)
	for i := range 3000 {
		t += int64(rng.IntN(240))
		if rng.Float64() < 0.05 {
			t += int64(rng.IntN(4 * 3600))
		}
		j := trace.Job{Line: i + 2, Submit: t, Nodes: 1}
		if rng.Float64() < 0.5 {
			j.Duration, j.CPUs = int64(300+rng.IntN(6*3600)), []int{1, 2, 4, 8, 16, 32}[rng.IntN(6)]
		} else {
			g := []int{1, 1, 2, 4, 8, 16}[rng.IntN(6)]
			j.Duration, j.GPUs, j.CPUs = int64(600+rng.IntN(8*3600)), min(g, 8), min(g, 8)*[]int{4, 8, 12}[rng.IntN(3)]
			j.Nodes = max(1, g/8)
		}
		jobs = append(jobs, j)
	}
	e, err := NewEnv(cfg, &trace.Trace{Format: trace.CSV, Jobs: jobs}, Options{Fleet: "p95"})
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// instant is what the relaxation reads at one instant of the bound's sweep.
type instant struct {
	fixedGPUs, fixedCPUs []int
	loads                [][2]int // each group's GPUs and CPUs
}

// instants are the relaxation's inputs at each instant of e's bound over all its jobs, as
// Env.bound sweeps them, and its groups (loads zero).
func instants(e *Env) ([]instant, []flexGroup) {
	type delta struct {
		t                  int64
		fixed, group, g, c int
	}
	var ds []delta
	var groups []flexGroup
	groupOf := map[groupKey]int{}
	for _, j := range e.Jobs {
		g, c := j.GPUs*j.Nodes, j.CPUs*j.Nodes
		fixed, group := j.Pool, -1
		if fits := e.fitSets[j.fitSet]; len(fits) > 1 && g+c > 0 {
			k := keyOf(j.fitSet, j.GPUs, j.CPUs)
			id, ok := groupOf[k]
			if !ok {
				id = len(groups)
				groupOf[k] = id
				byPrice := slices.Clone(fits)
				slices.SortStableFunc(byPrice, func(a, b int) int { return cmp.Compare(e.Pools[a].PerHour, e.Pools[b].PerHour) })
				groups = append(groups, flexGroup{pools: byPrice})
			}
			fixed, group = -1, id
		}
		ds = append(ds, delta{j.Submit, fixed, group, g, c}, delta{j.Submit + j.Duration, fixed, group, -g, -c})
	}
	slices.SortStableFunc(ds, func(a, b delta) int { return cmp.Compare(a.t, b.t) })
	now := instant{fixedGPUs: make([]int, len(e.Pools)), fixedCPUs: make([]int, len(e.Pools)), loads: make([][2]int, len(groups))}
	var out []instant
	for i, d := range ds {
		if d.group >= 0 {
			now.loads[d.group][0] += d.g
			now.loads[d.group][1] += d.c
		} else {
			now.fixedGPUs[d.fixed] += d.g
			now.fixedCPUs[d.fixed] += d.c
		}
		if i+1 == len(ds) || ds[i+1].t != d.t {
			out = append(out, instant{slices.Clone(now.fixedGPUs), slices.Clone(now.fixedCPUs), slices.Clone(now.loads)})
		}
	}
	return out, groups
}

// BenchmarkRelaxationCache times the relaxation over every instant of the bound of three-pool
// mixed workloads, keeping its answers by what they read (cached) and forgetting them before
// each instant (uncached), beside the whole bound; programs/op and hits/op count the instants
// that need a linear program and those the kept answers served.
func BenchmarkRelaxationCache(b *testing.B) {
	for k := range uint64(4) {
		e := threePoolMix(b, k)
		ins, groups := instants(e)
		b.Run(fmt.Sprintf("mix%d/bound", k), func(b *testing.B) {
			for b.Loop() {
				e.bound(func(int) bool { return true })
			}
		})
		for _, cached := range []bool{true, false} {
			name := map[bool]string{true: "cached", false: "uncached"}[cached]
			b.Run(fmt.Sprintf("mix%d/%s", k, name), func(b *testing.B) {
				programs, solved := 0, 0
				perPool := make([]float64, len(e.Pools))
				sweep := func(count bool) {
					r := newRelaxation(e.Pools, slices.Clone(groups))
					for _, in := range ins {
						copy(r.fixedGPUs, in.fixedGPUs)
						copy(r.fixedCPUs, in.fixedCPUs)
						for g := range r.groups {
							r.groups[g].gpus, r.groups[g].cpus = in.loads[g][0], in.loads[g][1]
						}
						if !cached {
							clear(r.seen)
						}
						before := len(r.seen)
						r.servers(perPool)
						if count && len(r.involved) > 0 {
							if ok, _ := r.fitsSpare(); !ok {
								programs++
							}
							if len(r.seen) > before {
								solved++
							}
						}
					}
				}
				sweep(true)
				for b.Loop() {
					sweep(false)
				}
				b.ReportMetric(float64(programs), "programs/op")
				b.ReportMetric(float64(programs-solved), "hits/op")
			})
		}
	}
}
