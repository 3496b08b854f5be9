package sim

import (
	"cmp"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/sim/trace"
	"gonum.org/v1/gonum/mat"
)

// cpuGPUPools are a pool of 64-core CPU servers at 1 an hour and one of 8-GPU servers of 96
// cores at 10, listing partitions where cpu and gpu say (", partitions: [...]").
func cpuGPUPools(t *testing.T, cpu, gpu string) *config.Config {
	t.Helper()
	return replayConfig(t, `pools:
  - {name: cpu, profile: {cpu_cores: 64`+cpu+`}, cost: {hourly: 1}, boot_timeout: 5m}
  - {name: gpu, profile: {cpu_cores: 96, gpus: 8`+gpu+`}, cost: {hourly: 10}, boot_timeout: 5m}
`)
}

// hourJob is a job of one server's share, (gpus, cpus), from submit for an hour.
func hourJob(line int, submit int64, gpus, cpus int, partition string) trace.Job {
	return trace.Job{Line: line, Submit: submit, Duration: 3600, Nodes: 1, GPUs: gpus, CPUs: cpus, Partition: partition}
}

// TestBoundOfWorkSeveralPoolsTake: a job that fits several pools counts in the lower bound
// where the fewest servers hold the work, as the replay's job manager starts it on any server
// on that fits it (CPU work on a GPU server's spare cores); each case's bound worked out by
// hand, and the per-pool hours the cheapest split of the bound's servers.
func TestBoundOfWorkSeveralPoolsTake(t *testing.T) {
	cases := []struct {
		name     string
		cpu, gpu string // the pools' partitions
		jobs     []trace.Job
		hours    float64 // the bound
		perPool  []float64
	}{
		// The GPU job leaves 80 cores free on its server: the CPU job fits there. Counted in
		// its cheapest pool, as before, it was 2.
		{"CPU work on the GPU server's spare cores", "", "",
			[]trace.Job{hourJob(2, 0, 8, 16, ""), hourJob(3, 0, 0, 32, "")}, 1, []float64{0, 1}},
		// 120 cores of CPU work, 80 of them on the GPU server: 40 left, 40/96 of a GPU server
		// or 40/64 of a CPU server, so 1.42 servers at least: 2, the second the cheap CPU
		// server. Counted in its cheapest pool, 1 + ceil(120/64) = 3.
		{"more CPU work than the spare cores", "", "",
			[]trace.Job{hourJob(2, 0, 8, 16, ""), hourJob(3, 0, 0, 40, ""), hourJob(4, 0, 0, 40, ""), hourJob(5, 0, 0, 40, "")}, 2, []float64{1, 1}},
		// A CPU job alone needs a server, the cheaper: a fraction of a 96-core server is less
		// than of a 64-core one, but one server is one server.
		{"CPU work alone", "", "", []trace.Job{hourJob(2, 0, 0, 8, "")}, 1, []float64{1, 0}},
		// Partitions keep the work apart: each job in its only pool.
		{"work kept apart by partitions", ", partitions: [cpu]", ", partitions: [gpu]",
			[]trace.Job{hourJob(2, 0, 8, 16, "gpu"), hourJob(3, 0, 0, 32, "cpu")}, 2, []float64{1, 1}},
		// The trace of the replay below: a 10-hour GPU job with 88 cores to spare holds the
		// 1-minute and the 8-hour CPU jobs: 10 server-hours (counted in the CPU pool: 18.02).
		{"the replay's trace", "", "", mixedReplayJobs(), 10, []float64{0, 10}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := tinyEnvFor(t, cpuGPUPools(t, c.cpu, c.gpu), &trace.Trace{Format: trace.CSV, Jobs: c.jobs}, "peak")
			if math.Abs(e.LowerBound-c.hours) > 1e-9 || !slices.EqualFunc(e.poolBound, c.perPool, func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }) {
				t.Errorf("bound %v server-h, per pool %v; want %v, %v", e.LowerBound, e.poolBound, c.hours, c.perPool)
			}
			if peak := slices.MaxFunc(e.Need, func(a, b Point) int { return int(a.Value - b.Value) }).Value; float64(int(peak)) != peak {
				t.Errorf("need %v is not whole servers", e.Need)
			}
		})
	}
}

// mixedReplayJobs are a 10-hour GPU job, and 1-minute and 8-hour CPU jobs its server can hold.
func mixedReplayJobs() []trace.Job {
	return []trace.Job{
		{Line: 2, Submit: 0, Duration: 36000, Nodes: 1, GPUs: 1, CPUs: 8},
		{Line: 3, Submit: 0, Duration: 60, Nodes: 1, CPUs: 8},
		{Line: 4, Submit: 3600, Duration: 28800, Nodes: 1, CPUs: 8},
	}
}

// TestRowsAtOrAboveTheBound: where CPU work may run on GPU servers' spare cores, no policy's
// row beats the bound (each was under 1 x LB when the bound counted the work in its cheapest
// pool: idle-10m 0.57); the notes say the work fits more than one pool.
func TestRowsAtOrAboveTheBound(t *testing.T) {
	e := tinyEnvFor(t, cpuGPUPools(t, "", ""), &trace.Trace{Format: trace.CSV, Jobs: mixedReplayJobs()}, "peak")
	const note = "2 job(s) fit more than one pool: as the replay's job manager starts such a job on any server on that fits it"
	if !slices.ContainsFunc(e.Trace.Notes, func(n string) bool { return strings.HasPrefix(n, note) }) {
		t.Errorf("notes %q, want one starting %q", e.Trace.Notes, note)
	}
	for _, p := range []Policy{AlwaysOn(), IdleTimeout(time.Minute), IdleTimeout(10 * time.Minute), Rota("rota")} {
		if r := Run(e, p, nil); r.XLowerBound < 1 {
			t.Errorf("%s at %.3f x LB (%.2f server-h against %.2f)", r.Policy, r.XLowerBound, r.ServerHours, r.LowerBoundHours)
		}
	}
}

// TestShapesInOneFitGroupStayApart: jobs that fit the same pools but in different proportions
// of GPUs to CPUs go each to the pool with room for them: 8 jobs of (1 GPU, 1 CPU) fill a
// server of 8 GPUs and 8 cores, 8 of (0, 8) one of 1 GPU and 64 cores. Split as one load (8
// GPUs, 72 cores) in the same shares, the bound would be 8 servers, not 2.
func TestShapesInOneFitGroupStayApart(t *testing.T) {
	cfg := replayConfig(t, `pools:
  - {name: a, profile: {cpu_cores: 8, gpus: 8}, cost: {hourly: 1}, boot_timeout: 5m}
  - {name: b, profile: {cpu_cores: 64, gpus: 1}, cost: {hourly: 1}, boot_timeout: 5m}
`)
	var jobs []trace.Job
	for i := range 8 {
		jobs = append(jobs, hourJob(2+2*i, 0, 1, 1, ""), hourJob(3+2*i, 0, 0, 8, ""))
	}
	e := tinyEnvFor(t, cfg, &trace.Trace{Format: trace.CSV, Jobs: jobs}, "peak")
	if e.LowerBound != 2 {
		t.Errorf("bound %v server-h, want 2", e.LowerBound)
	}
}

// TestRelaxationIsABound: on random instants of two or three pools and jobs of random shapes,
// the relaxation's servers are at most those of a placement found by first fit (the jobs
// largest first, each on the first server on that has room, else on a new server of the pool
// that fits it with the most room), and at least each pool's need of the jobs only it fits.
func TestRelaxationIsABound(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 3))
	for trial := range 300 {
		pools := []Pool{{Name: "cpu", CPUs: 32 + 32*rng.IntN(2), PerHour: 1}, {Name: "gpu", GPUs: 8, CPUs: 48 + 48*rng.IntN(2), PerHour: 10}}
		if rng.IntN(2) == 0 {
			pools = append(pools, Pool{Name: "small-gpu", GPUs: 2, CPUs: 16, PerHour: 3})
		}
		type shape struct{ g, c int }
		var jobs []shape
		for range 1 + rng.IntN(12) {
			g := []int{0, 0, 1, 2, 4, 8}[rng.IntN(6)]
			jobs = append(jobs, shape{g, 1 + rng.IntN(min(32, 4*(1+g)))})
		}
		r := newRelaxation(pools, nil)
		groupOf := map[groupKey]int{}
		for _, j := range jobs {
			var fits []int
			set := 0 // the pools that fit it, as bits
			for p := range pools {
				if j.g <= pools[p].GPUs && j.c <= pools[p].CPUs {
					fits, set = append(fits, p), set|1<<p
				}
			}
			if len(fits) == 1 {
				r.fixedGPUs[fits[0]] += j.g
				r.fixedCPUs[fits[0]] += j.c
				continue
			}
			k := keyOf(set, j.g, j.c)
			id, ok := groupOf[k]
			if !ok {
				id = len(r.groups)
				groupOf[k] = id
				slices.SortFunc(fits, func(a, b int) int { return int(pools[a].PerHour - pools[b].PerHour) })
				r.groups = append(r.groups, flexGroup{pools: fits})
			}
			r.groups[id].gpus += j.g
			r.groups[id].cpus += j.c
		}
		perPool := make([]float64, len(pools))
		need, _ := r.servers(perPool)
		least := 0
		for p := range pools {
			least += r.least[p]
		}
		// first fit, largest first
		slices.SortFunc(jobs, func(a, b shape) int { return (b.g*100 + b.c) - (a.g*100 + a.c) })
		type server struct{ pool, g, c int }
		var on []server
	jobs:
		for _, j := range jobs {
			for i := range on {
				if s := &on[i]; s.g >= j.g && s.c >= j.c {
					s.g, s.c = s.g-j.g, s.c-j.c
					continue jobs
				}
			}
			best := -1
			for p := range pools {
				if j.g <= pools[p].GPUs && j.c <= pools[p].CPUs && (best < 0 || pools[p].CPUs > pools[best].CPUs) {
					best = p
				}
			}
			on = append(on, server{best, pools[best].GPUs - j.g, pools[best].CPUs - j.c})
		}
		sum := 0.0
		for _, v := range perPool {
			sum += v
		}
		if need > len(on) || need < least || math.Abs(sum-float64(need)) > 1e-6 {
			t.Fatalf("trial %d, pools %+v, jobs %v: need %d, first fit %d, each pool's own %d, per pool %v",
				trial, pools, jobs, need, len(on), least, perPool)
		}
	}
}

// TestSpareRoomAgreesWithTheProgram: with one group running, its work fits in the room the
// pools' least servers leave exactly when the linear program needs no server more.
func TestSpareRoomAgreesWithTheProgram(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 4))
	pools := []Pool{{Name: "cpu", CPUs: 64, PerHour: 1}, {Name: "gpu", GPUs: 8, CPUs: 96, PerHour: 10}}
	fit := 0
	for trial := range 500 {
		r := newRelaxation(pools, []flexGroup{{pools: []int{0, 1}, cpus: 1 + rng.IntN(100)}})
		r.fixedGPUs[1] = rng.IntN(17)
		r.fixedCPUs[1] = rng.IntN(2 * 96)
		r.fixedCPUs[0] = rng.IntN(3 * 64)
		r.servers(make([]float64, len(pools)))
		r.involved = []int{0, 1}
		ok, _ := r.fitsSpare()
		if pl := r.solve(); ok != (pl.extra == 0) {
			t.Fatalf("trial %d (%+v): the room holds the work %v, the program needs %d more", trial, r, ok, pl.extra)
		}
		if ok {
			fit++
		}
	}
	if fit == 0 || fit == 500 {
		t.Errorf("%d of 500 trials fit the room: want some of each", fit)
	}
}

// TestDegenerateProgramEnds: three jobs of 1 GPU and 4, 8 and 12 cores, on pools of 2-GPU and
// 8-GPU servers, make a degenerate program (no pool has work of its own) on which lp.Simplex
// with no tolerance pivoted on float noise for ever: rotactl simulate hung on the trace. Its
// bound is one server for the hour: 3 GPUs, 24 cores.
func TestDegenerateProgramEnds(t *testing.T) {
	cfg := replayConfig(t, `pools:
  - {name: small-gpu, profile: {cpu_cores: 32, gpus: 2}, cost: {hourly: 4}, boot_timeout: 5m}
  - {name: large-gpu, profile: {cpu_cores: 96, gpus: 8}, cost: {hourly: 12}, boot_timeout: 5m}
`)
	tr := &trace.Trace{Format: trace.CSV, Jobs: []trace.Job{hourJob(2, 0, 1, 4, ""), hourJob(3, 0, 1, 8, ""), hourJob(4, 0, 1, 12, "")}}
	done := make(chan *Env, 1)
	go func() {
		e, err := NewEnv(cfg, tr, Options{Fleet: "peak"})
		if err != nil {
			t.Error(err)
		}
		done <- e
	}()
	select {
	case e := <-done:
		if e != nil && e.LowerBound != 1 {
			t.Errorf("bound %v server-h, want 1", e.LowerBound)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the bound's linear program still runs after 30 s")
	}
}

// TestFailedProgramStaysABound: where lp.Simplex fails (only floats can: the programs are
// feasible and bounded), the relaxation still answers a bound and counts the failure for the
// replay's notes. The first program failing leaves each pool's least, at most the true need;
// the second (the split over pools) failing keeps the need and puts the servers it adds in the
// cheapest involved pool, a split no dearer than the program's. On random instants of three
// pools, against the relaxation whose programs succeed.
func TestFailedProgramStaysABound(t *testing.T) {
	pools := []Pool{{Name: "cpu", CPUs: 32, PerHour: 1.2}, {Name: "small-gpu", GPUs: 2, CPUs: 32, PerHour: 4},
		{Name: "large-gpu", GPUs: 8, CPUs: 96, PerHour: 12}}
	fail := errors.New("lp: linear solve failure")
	cases := []struct {
		name     string
		failFrom int // the first call of solveLP that fails (each instant's program calls it twice)
	}{
		{"the fewest servers", 0},
		{"the split over pools", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(18, 5))
			failures := 0
			for trial := range 300 {
				exact, failing := randomInstant(rng, pools), newRelaxation(pools, nil)
				failing.fixedGPUs, failing.fixedCPUs = exact.fixedGPUs, exact.fixedCPUs
				failing.groups = exact.groups
				calls := 0
				failing.solveLP = func(cost []float64, a mat.Matrix, b []float64) (float64, []float64, error) {
					calls++
					if calls > c.failFrom {
						return math.NaN(), nil, fail
					}
					return simplex(cost, a, b)
				}
				want, got := make([]float64, len(pools)), make([]float64, len(pools))
				wantNeed, _ := exact.servers(want)
				need, _ := failing.servers(got)
				least := 0
				for p := range pools {
					least += failing.least[p]
				}
				cost := func(perPool []float64) float64 {
					sum := 0.0
					for p, n := range perPool {
						sum += n * pools[p].PerHour
					}
					return sum
				}
				sum := 0.0
				for _, v := range got {
					sum += v
				}
				if math.Abs(sum-float64(need)) > 1e-6 || need > wantNeed || need < least || cost(got) > cost(want)+1e-6 ||
					(c.failFrom == 1 && need != wantNeed) {
					t.Fatalf("trial %d, %+v: need %d at %v (cost %.2f), want at most %d at %v (cost %.2f), at least the pools' own %d",
						trial, failing.groups, need, got, cost(got), wantNeed, want, cost(want), least)
				}
				if failing.failed != min(calls, 1) {
					t.Fatalf("trial %d: %d program(s) run, %d failure(s) counted", trial, calls, failing.failed)
				}
				failures += failing.failed
			}
			if failures < 30 {
				t.Errorf("%d of 300 instants needed a program: too few to test the fallback", failures)
			}
		})
	}
}

// randomInstant is a relaxation of pools with up to 12 random jobs running, of 0 to 8 GPUs.
func randomInstant(rng *rand.Rand, pools []Pool) *relaxation {
	r := newRelaxation(pools, nil)
	groupOf := map[groupKey]int{}
	for range 1 + rng.IntN(12) {
		g := []int{0, 0, 1, 2, 4, 8}[rng.IntN(6)]
		c := 1 + rng.IntN(min(32, 4*(1+g)))
		var fits []int
		set := 0
		for p := range pools {
			if g <= pools[p].GPUs && c <= pools[p].CPUs {
				fits, set = append(fits, p), set|1<<p
			}
		}
		if len(fits) == 1 {
			r.fixedGPUs[fits[0]] += g
			r.fixedCPUs[fits[0]] += c
			continue
		}
		k := keyOf(set, g, c)
		id, ok := groupOf[k]
		if !ok {
			id = len(r.groups)
			groupOf[k] = id
			slices.SortFunc(fits, func(a, b int) int { return cmp.Compare(pools[a].PerHour, pools[b].PerHour) })
			r.groups = append(r.groups, flexGroup{pools: fits})
		}
		r.groups[id].gpus += g
		r.groups[id].cpus += c
	}
	return r
}

// TestBoundStopsWithItsContext: a done Options.Context stops the lower bound at once (on a
// large trace of work several pools take it runs for minutes, and rotactl simulate ignored
// SIGTERM meanwhile), and NewEnv returns the context's error.
func TestBoundStopsWithItsContext(t *testing.T) {
	e := threePoolMix(t, 0)
	if full := e.bound(func(int) bool { return true }); len(full.need) == 0 {
		t.Fatal("the workload's bound has no need")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.ctx = ctx
	if cut := e.bound(func(int) bool { return true }); len(cut.need) != 0 {
		t.Errorf("a bound with its context done went on for %d points", len(cut.need))
	}
	if _, err := NewEnv(e.Config, e.Trace, Options{Fleet: "p95", Context: ctx}); !errors.Is(err, context.Canceled) {
		t.Errorf("NewEnv with its context done: %v, want context.Canceled", err)
	}
}
