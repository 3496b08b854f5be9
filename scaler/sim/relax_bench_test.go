package sim

import (
	"fmt"
	"math/rand/v2"
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

// BenchmarkBoundThreePools times the lower bound of three-pool mixed workloads (nearly every
// instant needs a linear program: 5,556 to 5,703 of them). Commit e6540a0's
// BenchmarkRelaxationCache compared the relaxation with and without its answers kept by what
// they read: they served 2% of the programs and no time, and are gone.
func BenchmarkBoundThreePools(b *testing.B) {
	for k := range uint64(4) {
		e := threePoolMix(b, k)
		b.Run(fmt.Sprintf("mix%d", k), func(b *testing.B) {
			for b.Loop() {
				e.bound(func(int) bool { return true })
			}
		})
	}
}
