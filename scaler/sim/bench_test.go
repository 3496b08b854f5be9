package sim

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/sim/trace"
)

// kthSized is a workload of the size of the KTH SP2 log as the issue sets it (28,000 jobs,
// a 900-server fleet of one-core servers), drawn from a fixed seed: a daily swell of arrivals
// in bursts, gangs of 1 to 128 servers (mostly small), run times from a minute to a day.
func kthSized() []trace.Job {
	rng := rand.New(rand.NewPCG(28, 900))
	sizes := []int{1, 1, 1, 1, 2, 2, 4, 4, 8, 8, 16, 32, 64, 128}
	var jobs []trace.Job
	t := int64(0)
	for i := range 28000 {
		hour := float64(t%86400) / 3600
		rate := 1 + math.Sin((hour-6)/24*2*math.Pi) // busier by day
		if rng.IntN(12) == 0 {
			t += int64(rng.IntN(3600))
		}
		t += int64(rng.ExpFloat64() * 900 / (0.3 + rate))
		dur := int64(math.Exp(4 + rng.Float64()*7.3)) // 55s .. about a day
		jobs = append(jobs, trace.Job{Line: i + 2, Submit: t, Duration: dur, Nodes: sizes[rng.IntN(len(sizes))], CPUs: 1})
	}
	return jobs
}

func kthEnv(b testing.TB) *Env { return kthEnvOf(b, "900", false) }

// kthEnvOf is the KTH-sized workload on a fleet of one-core servers (servers: --fleet's
// value); with moves, policy.moves is on and every job requeueable (the trace says none is).
func kthEnvOf(b testing.TB, servers string, moves bool) *Env {
	cfg, err := config.Parse([]byte(`server: {webhook_auth_disabled: true}
pools:
  - {name: sp2, profile: {cpu_cores: 1}, cost: {watts: 100, price_per_kwh: 0.15}, boot_timeout: 5m}
`))
	if err != nil {
		b.Fatal(err)
	}
	cfg.Policy.Moves.Enabled = moves
	tr := &trace.Trace{Format: trace.SWF, Start: time.Date(1996, 9, 23, 0, 0, 0, 0, time.UTC), Jobs: kthSized()}
	e, err := NewEnv(cfg, tr, Options{Fleet: servers, WatchDelay: time.Second, RequeueAll: moves})
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkReplayKTHSized replays the KTH-sized workload under rota's default policy; the
// goal is under 5 s a replay (s/replay, wall-clock; cpu-s/replay is the process's CPU time).
func BenchmarkReplayKTHSized(b *testing.B) {
	e := kthEnv(b)
	var wall, cpu time.Duration
	for b.Loop() {
		c, w := timedReplay(b, e, Rota("rota"))
		cpu, wall = cpu+c, wall+w
	}
	b.ReportMetric(wall.Seconds()/float64(b.N), "s/replay")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/replay")
}

// BenchmarkReplayOverloaded replays the KTH-sized workload on a third of its fleet (300
// servers), every job requeueable and policy.moves on: work waits for hours (p95 about 20 h),
// as on a trace replayed with --fleet p95 or on a machine smaller than its log's. It reports
// each policy's CPU time a replay: the idle timeout's, which a long queue once made grow with
// the queue times the fleet (wakeFor laid every waiting job over every server at each call),
// and rota's planner's with moves off and on (rota-moves), which a full fleet once made grow
// with the square of the fleet (each server's jobs weighed against every other server).
func BenchmarkReplayOverloaded(b *testing.B) {
	e := kthEnvOf(b, "300", true)
	policies := []Policy{AlwaysOn(), IdleTimeout(10 * time.Minute), RotaWithoutMoves("rota"), Rota("rota-moves")}
	cpu := make([]time.Duration, len(policies))
	for b.Loop() {
		for k, p := range policies {
			c, _ := timedReplay(b, e, p)
			cpu[k] += c
		}
	}
	for k, p := range policies {
		b.ReportMetric(cpu[k].Seconds()/float64(b.N), "cpu-s/"+p.Name())
	}
}

// timedReplay replays e under p and returns the CPU and wall-clock time the replay took. It
// starts from a collected heap: the garbage one replay leaves is not charged to the next.
func timedReplay(b *testing.B, e *Env, p Policy) (cpu, wall time.Duration) {
	runtime.GC()
	start, c := time.Now(), cpuTime(b)
	Run(e, p, nil)
	return cpuTime(b) - c, time.Since(start)
}

// cpuTime is the CPU time the process has used so far (user and system, every thread: the
// garbage collector's work too).
func cpuTime(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// BenchmarkReplayCostEveryTrace is BenchmarkReplayRatio's measure on each of the repository's
// traces (the goal holds for any trace, not one).
func BenchmarkReplayCostEveryTrace(b *testing.B) {
	for _, rel := range []string{"itp/cluster01.csv", "itp/cluster02.csv", "itp/cluster03.csv", "itp/cluster04.csv",
		"itp/cluster05.csv", "swf/NASA-iPSC-1993-3.1-cln.swf.gz"} {
		b.Run(strings.TrimSuffix(filepath.Base(rel), filepath.Ext(rel)), func(b *testing.B) {
			tr, cfg := repoTrace(b, rel)
			replayRatio(b, tr, cfg)
		})
	}
}

// BenchmarkReplayCostIdlePeriods is BenchmarkReplayCostEveryTrace with
// policy.break_even.idle_periods on.
func BenchmarkReplayCostIdlePeriods(b *testing.B) {
	for _, rel := range []string{"itp/cluster04.csv", "swf/NASA-iPSC-1993-3.1-cln.swf.gz"} {
		b.Run(strings.TrimSuffix(filepath.Base(rel), filepath.Ext(rel)), func(b *testing.B) {
			tr, cfg := repoTrace(b, rel)
			cfg.Policy.BreakEven.IdlePeriods = true
			replayRatio(b, tr, cfg)
		})
	}
}

// BenchmarkReplayRatio replays ITP cluster04 with the 10-minute idle timeout and with rota
// in the same run, and reports rota's CPU time over the baseline's (goal: at most 2), and the
// same of wall-clock time.
func BenchmarkReplayRatio(b *testing.B) {
	tr, cfg := repoTrace(b, "itp/cluster04.csv")
	replayRatio(b, tr, cfg)
}

// replayRatio replays tr with the 10-minute idle timeout and with rota in turn, each loop, and
// reports rota's CPU and wall-clock time over the baseline's.
func replayRatio(b *testing.B, tr *trace.Trace, cfg *config.Config) {
	e, err := NewEnv(cfg, tr, Options{WatchDelay: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	var base, rota, baseWall, rotaWall time.Duration
	for b.Loop() {
		c, w := timedReplay(b, e, IdleTimeout(10*time.Minute))
		base, baseWall = base+c, baseWall+w
		c, w = timedReplay(b, e, Rota("rota"))
		rota, rotaWall = rota+c, rotaWall+w
	}
	b.ReportMetric(rota.Seconds()/base.Seconds(), "rota/baseline")
	b.ReportMetric(rotaWall.Seconds()/baseWall.Seconds(), "wall-rota/baseline")
	b.ReportMetric(base.Seconds()/float64(b.N), "cpu-s/baseline")
	b.ReportMetric(rota.Seconds()/float64(b.N), "cpu-s/rota")
}
