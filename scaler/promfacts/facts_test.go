package promfacts

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/fleet"
)

// answers builds results from per-fact values of node "n".
func answers(values map[fact]float64) *results {
	var r results
	for f := range r {
		r[f] = map[string]float64{}
	}
	for f, v := range values {
		r[f]["n"] = v
	}
	return &r
}

// TestViews holds each rule of the package doc against the answers of one server: a complete
// CPU or GPU server is Present, and each missing piece makes it not Present, naming what is
// missing. The GPU cases hold the readings against the GPUs the pool declares, whatever the
// exporter reports.
func TestViews(t *testing.T) {
	now := time.Unix(1_000_000, 0).UTC()
	const steps, maxAge = 40, 2 * time.Minute
	fresh := float64(now.Add(-10 * time.Second).Unix())
	cpuServer := func() map[fact]float64 {
		return map[fact]float64{cpuMax: 0.05, cpuSteps: steps, newest: fresh, gpuDevices: 0}
	}
	// gpuServer reports and reads its 2 GPUs at every step.
	gpuServer := func() map[fact]float64 {
		v := cpuServer()
		v[gpuDevices], v[gpuMax], v[gpuSteps], v[gpuMean], v[gpuProcesses] = 2, 0.3, steps, 0.2, 1
		v[gpuCountMin], v[gpuCountNow], v[unread] = 2, 2, 0
		return v
	}
	// external makes the GPU answers an external source's (no device count, no collectors):
	// most, fewest (-1: none) and now (-1: none) GPUs read, and the steps with a reading.
	external := func(most, least, now, gsteps float64) func(map[fact]float64) {
		return func(v map[fact]float64) {
			delete(v, gpuDevices)
			delete(v, unread)
			v[gpuCountMax], v[gpuCountMin], v[gpuCountNow], v[gpuSteps] = most, least, now, gsteps
			for f, x := range map[fact]float64{gpuCountMin: least, gpuCountNow: now} {
				if x < 0 {
					delete(v, f)
				}
			}
		}
	}
	cases := []struct {
		name     string
		values   map[fact]float64
		change   func(v map[fact]float64)
		declared int
		unknown  string
		blocks   bool
		missing  string // "" when Present
	}{
		{name: "complete cpu server", values: cpuServer()},
		{name: "complete gpu server", values: gpuServer(), declared: 2},
		{name: "cpu server without a gpu collector", values: cpuServer(), change: func(v map[fact]float64) { delete(v, gpuDevices) }},
		{name: "cpu server without nvml", values: cpuServer(), change: func(v map[fact]float64) { v[gpuFailing] = 1 }},
		{name: "no data at all", values: map[fact]float64{}, missing: "no sample"},
		{name: "newest sample just under max age", values: cpuServer(), change: func(v map[fact]float64) { v[newest] = float64(now.Add(-maxAge + time.Second).Unix()) }},
		{name: "newest sample at max age", values: cpuServer(), change: func(v map[fact]float64) { v[newest] = float64(now.Add(-maxAge).Unix()) },
			missing: "newest sample 2m0s old (max age 2m0s)"},
		{name: "newest sample past max age", values: cpuServer(), change: func(v map[fact]float64) { v[newest] = float64(now.Add(-maxAge - time.Second).Unix()) },
			missing: "newest sample 2m1s old (max age 2m0s)"},
		{name: "one step of the window missing", values: cpuServer(), change: func(v map[fact]float64) { v[cpuSteps] = steps - 1 },
			missing: "CPU readings at 39 of the 40 steps of the idle window"},
		{name: "no cpu reading", values: cpuServer(), change: func(v map[fact]float64) { delete(v, cpuMax) }, missing: "no CPU reading"},
		{name: "failing collector", values: cpuServer(), change: func(v map[fact]float64) { v[failing] = 1 }, missing: "a collector fails"},
		{name: "gpu without a reading", values: gpuServer(), declared: 2, change: func(v map[fact]float64) { v[unread] = 1 },
			missing: "1 of 2 reported GPUs without a reading"},
		{name: "gpu readings miss a step", values: gpuServer(), declared: 2, change: func(v map[fact]float64) { v[gpuSteps] = steps - 1 },
			missing: "GPU readings at 39 of the 40 steps of the idle window"},
		{name: "gpu readings missing", values: gpuServer(), declared: 2, change: func(v map[fact]float64) {
			delete(v, gpuSteps)
			delete(v, gpuMax)
		}, missing: "GPU readings at 0 of the 40 steps"},
		{name: "gpus reported on a cpu pool still need readings", values: gpuServer(), change: func(v map[fact]float64) { v[gpuSteps] = 3 },
			missing: "GPU readings at 3 of the 40 steps"},
		{name: "two series for the server", values: cpuServer(), change: func(v map[fact]float64) { v[cpuMax] = math.NaN() }, missing: "no CPU reading"},
		// Infinities no query of Prometheus gives for these facts (a broken proxy, a store
		// answering garbage) are no facts either.
		{name: "cpu max of -Inf", values: cpuServer(), change: func(v map[fact]float64) { v[cpuMax] = math.Inf(-1) }, missing: "no CPU reading"},
		{name: "newest sample at +Inf", values: cpuServer(), change: func(v map[fact]float64) { v[newest] = math.Inf(1) }, missing: "no sample"},
		{name: "+Inf steps of the window", values: cpuServer(), change: func(v map[fact]float64) { v[cpuSteps] = math.Inf(1) },
			missing: "CPU readings at 0 of the 40 steps"},
		{name: "+Inf gpus read now", values: gpuServer(), declared: 3, change: func(v map[fact]float64) { v[gpuCountNow] = math.Inf(1) },
			missing: "0 of the 3 GPUs its pool declares report readings"},

		// Coverage against the profile: the pool declares 2 GPUs.
		{name: "gpu collector off (--no-collector.gpu)", values: cpuServer(), declared: 2, change: func(v map[fact]float64) { delete(v, gpuDevices) },
			missing: "0 of the 2 GPUs its pool declares report readings"},
		{name: "nvml did not start", values: cpuServer(), declared: 2, change: func(v map[fact]float64) { v[gpuFailing] = 1 },
			missing: "the GPU collector fails"},
		{name: "fewer gpus reported than declared", values: gpuServer(), declared: 3,
			missing: "2 of the 3 GPUs its pool declares report readings"},
		{name: "a declared gpu missing during the window", values: gpuServer(), declared: 2, change: func(v map[fact]float64) { v[gpuCountMin] = 1 },
			missing: "as few as 1 of the 2 GPUs its pool declares reported during the idle window"},
		{name: "gpu readings gone now (stale)", values: gpuServer(), declared: 2, change: func(v map[fact]float64) { delete(v, gpuCountNow) },
			missing: "0 of the 2 GPUs its pool declares report readings"},
		{name: "no count of gpus over the window", values: gpuServer(), declared: 2, change: func(v map[fact]float64) { delete(v, gpuCountMin) },
			missing: "as few as 0 of the 2"},
		// More GPUs reported than declared: each is held to, over the window too.
		{name: "a gpu beyond the profile read throughout", values: gpuServer(), declared: 1},
		{name: "a gpu beyond the profile missing during the window", values: gpuServer(), declared: 1, change: func(v map[fact]float64) { v[gpuCountMin] = 1 },
			missing: "as few as 1 of the 2 GPUs its exporter finds reported during the idle window"},
		// An external source reports no count of GPUs: those read at any step of the window
		// are held to, on a pool that declares none too.
		{name: "external: a gpu on a pool declaring none, read at some steps", values: gpuServer(), change: external(1, 1, 1, 30),
			missing: "GPU readings at 30 of the 40 steps of the idle window"},
		{name: "external: a gpu on a pool declaring none, read no more", values: gpuServer(), change: external(1, -1, -1, 30),
			missing: "0 of the 1 GPUs read during the idle window report readings"},
		{name: "external: a gpu on a pool declaring none, read throughout", values: gpuServer(), change: external(1, 1, 1, steps)},
		{name: "external: a gpu beyond the profile missing for a while", values: gpuServer(), declared: 2, change: external(3, 2, 3, steps),
			missing: "as few as 2 of the 3 GPUs read during the idle window"},

		// Unknown telemetry: a blocking series absent makes the server not Present, others are
		// only named.
		{name: "blocking unknown telemetry", values: gpuServer(), declared: 2, unknown: "no X series", blocks: true,
			missing: "unknown telemetry: no X series"},
		{name: "unknown telemetry that does not block", values: gpuServer(), declared: 2, unknown: "no X series"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.change != nil {
				tc.change(tc.values)
			}
			res := answers(tc.values)
			got := res.view("n", server{gpus: tc.declared, unknown: tc.unknown, unknownBlocks: tc.blocks}, now, maxAge, steps)
			if got.Present != (tc.missing == "") {
				t.Errorf("Present = %v, want %v (view %+v)", got.Present, tc.missing == "", got)
			}
			if tc.missing == "" && got.Missing != "" || !strings.HasPrefix(got.Missing, tc.missing) {
				t.Errorf("Missing = %q, want %q", got.Missing, tc.missing)
			}
			if got.UnknownTelemetry != tc.unknown {
				t.Errorf("UnknownTelemetry = %q, want %q", got.UnknownTelemetry, tc.unknown)
			}
			if other := res.view("other", server{}, now, maxAge, steps); other.Present || other.Missing != "no sample" {
				t.Errorf("a node without series got %+v, want not present, no sample", other)
			}
		})
	}
}

func TestViewValues(t *testing.T) {
	now := time.Unix(1_000_000, 0).UTC()
	res := answers(map[fact]float64{
		cpuMax: 0.12, cpuSteps: 5, gpuMax: 0.7, gpuSteps: 5, gpuMean: 0.4, gpuProcesses: 3,
		gpuDevices: 2, gpuCountMin: 2, gpuCountNow: 2, newest: 999_999.5, unread: 0,
	})
	want := fleet.TelemetryView{
		Present: true, LastSample: time.UnixMilli(999_999_500).UTC(),
		CPUMax: 0.12, GPUMax: 0.7, GPUProcesses: 3, GPUMean: 0.4,
	}
	if got := res.view("n", server{gpus: 2}, now, time.Minute, 5); got != want {
		t.Errorf("view = %+v, want %+v", got, want)
	}
}

// TestGPUProcessCount: the process count reads as the rules read it (> 0 is some): NaN or
// none is none, a fraction or one past int's range (+Inf) is some.
func TestGPUProcessCount(t *testing.T) {
	now := time.Unix(1_000_000, 0).UTC()
	for _, tc := range []struct {
		v    float64
		some bool
	}{{math.NaN(), false}, {math.Inf(-1), false}, {0, false}, {0.5, true}, {3, true}, {math.Inf(1), true}, {1e300, true}} {
		res := answers(map[fact]float64{gpuProcesses: tc.v})
		if got := res.view("n", server{}, now, time.Minute, 5).GPUProcesses; (got > 0) != tc.some {
			t.Errorf("%v processes read as %d", tc.v, got)
		}
	}
}

// BenchmarkViews assembles the views of a 10,000-server fleet of 8-GPU servers from query
// answers.
func BenchmarkViews(b *testing.B) {
	const n = 10_000
	now := time.Unix(1_000_000, 0).UTC()
	var res results
	for f := range res {
		res[f] = make(map[string]float64, n)
	}
	nodes := make([]string, n)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("node%05d", i)
		for f, v := range map[fact]float64{cpuMax: 0.1, cpuSteps: 40, newest: 999_990, gpuDevices: 8, gpuMax: 0.5,
			gpuSteps: 40, gpuCountMin: 8, gpuCountNow: 8, unread: 0} {
			res[f][nodes[i]] = v
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, node := range nodes {
			if v := res.view(node, server{gpus: 8}, now, time.Minute, 40); !v.Present {
				b.Fatal("not present")
			}
		}
	}
}

// FuzzViews holds views assembled from any answers (Prometheus's, or a broken proxy's: NaN,
// infinities, negative counts) to what Present promises: finite readings, every step of the
// window covered, every declared GPU read now and throughout, a fresh newest sample, and a
// process count that is no negative number.
func FuzzViews(f *testing.F) {
	inf, nan := math.Inf(1), math.NaN()
	f.Add(0.05, 5.0, -10.0, 0.01, 5.0, 2.0, 2.0, 0.0, 2)
	f.Add(math.Inf(-1), 5.0, -10.0, 0.01, 5.0, 2.0, 2.0, inf, 2)
	f.Add(0.05, inf, inf, math.Inf(-1), inf, inf, inf, nan, 3)
	f.Fuzz(func(t *testing.T, cpu, steps, age, gpu, gsteps, least, now, procs float64, declared int) {
		at := time.Unix(1_000_000, 0).UTC()
		const want, maxAge = 5, time.Minute
		res := answers(map[fact]float64{cpuMax: cpu, cpuSteps: steps, newest: float64(at.Unix()) + age,
			gpuMax: gpu, gpuSteps: gsteps, gpuCountMin: least, gpuCountNow: now, gpuProcesses: procs})
		declared = max(0, min(declared, 64))
		v := res.view("n", server{gpus: declared}, at, maxAge, want)
		if v.GPUProcesses < 0 {
			t.Errorf("%v processes read as %d", procs, v.GPUProcesses)
		}
		if !v.Present {
			return
		}
		if !finite(v.CPUMax) || !finite(v.GPUMax) || !(steps >= want) || !fleet.SampleFresh(v.LastSample, at, maxAge) {
			t.Errorf("present with cpu %v over %v steps, gpu %v, newest %v", cpu, steps, gpu, v.LastSample)
		}
		if declared > 0 && !(least >= float64(declared) && now >= float64(declared) && gsteps >= want && finite(gpu)) {
			t.Errorf("present with %d GPUs declared, %v read now, %v at least, %v steps", declared, now, least, gsteps)
		}
	})
}
