package promfacts

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/fleet"
)

func TestViews(t *testing.T) {
	now := time.Unix(1_000_000, 0).UTC()
	const steps, maxAge = 40, 2 * time.Minute
	fresh := float64(now.Add(-10 * time.Second).Unix())
	// cpuServer is a complete, fresh, idle CPU server; each case changes one thing.
	cpuServer := func() *results {
		return &results{
			cpuMax: map[string]float64{"n": 0.05}, cpuSteps: map[string]float64{"n": steps},
			gpuMax: map[string]float64{}, gpuSteps: map[string]float64{}, gpuMean: map[string]float64{},
			gpuProcesses: map[string]float64{}, gpuDevices: map[string]float64{"n": 0},
			newest: map[string]float64{"n": fresh}, failing: map[string]float64{}, unread: map[string]float64{},
		}
	}
	gpuServer := func() *results {
		r := cpuServer()
		r.gpuDevices["n"], r.gpuMax["n"], r.gpuSteps["n"], r.gpuMean["n"], r.gpuProcesses["n"] = 2, 0.3, steps, 0.2, 1
		r.unread["n"] = 0
		return r
	}
	cases := []struct {
		name    string
		res     *results
		change  func(r *results)
		present bool
	}{
		{"complete cpu server", cpuServer(), func(*results) {}, true},
		{"complete gpu server", gpuServer(), func(*results) {}, true},
		{"cpu server without a gpu collector", cpuServer(), func(r *results) { delete(r.gpuDevices, "n") }, true},
		{"no data at all", cpuServer(), func(r *results) { r.newest, r.cpuMax, r.cpuSteps = nil, nil, nil }, false},
		{"newest sample at max age", cpuServer(), func(r *results) { r.newest["n"] = float64(now.Add(-maxAge).Unix()) }, true},
		{"newest sample past max age", cpuServer(), func(r *results) { r.newest["n"] = float64(now.Add(-maxAge - time.Second).Unix()) }, false},
		{"one step of the window missing", cpuServer(), func(r *results) { r.cpuSteps["n"] = steps - 1 }, false},
		{"no cpu reading", cpuServer(), func(r *results) { delete(r.cpuMax, "n") }, false},
		{"failing collector", cpuServer(), func(r *results) { r.failing["n"] = 1 }, false},
		{"gpu without a reading", gpuServer(), func(r *results) { r.unread["n"] = 1 }, false},
		{"gpu readings miss a step", gpuServer(), func(r *results) { r.gpuSteps["n"] = steps - 1 }, false},
		{"gpu readings missing", gpuServer(), func(r *results) { delete(r.gpuSteps, "n"); delete(r.gpuMax, "n") }, false},
		{"two series for the server", cpuServer(), func(r *results) { r.cpuMax["n"] = math.NaN() }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.change(tc.res)
			got := tc.res.views([]string{"n", "other"}, now, maxAge, steps)
			if got["n"].Present != tc.present {
				t.Errorf("Present = %v, want %v (view %+v)", got["n"].Present, tc.present, got["n"])
			}
			if got["other"] != (fleet.TelemetryView{}) {
				t.Errorf("a node without series got %+v, want the zero view", got["other"])
			}
		})
	}
}

func TestViewValues(t *testing.T) {
	now := time.Unix(1_000_000, 0).UTC()
	res := &results{
		cpuMax: map[string]float64{"g": 0.12}, cpuSteps: map[string]float64{"g": 5},
		gpuMax: map[string]float64{"g": 0.7}, gpuSteps: map[string]float64{"g": 5}, gpuMean: map[string]float64{"g": 0.4},
		gpuProcesses: map[string]float64{"g": 3}, gpuDevices: map[string]float64{"g": 2},
		newest: map[string]float64{"g": 999_999.5}, unread: map[string]float64{"g": 0},
	}
	want := fleet.TelemetryView{
		Present: true, LastSample: time.UnixMilli(999_999_500).UTC(),
		CPUMax: 0.12, GPUMax: 0.7, GPUProcesses: 3, GPUMean: 0.4,
	}
	if got := res.views([]string{"g"}, now, time.Minute, 5)["g"]; got != want {
		t.Errorf("view = %+v, want %+v", got, want)
	}
}

// BenchmarkViews assembles the views of a 10,000-server fleet from query answers.
func BenchmarkViews(b *testing.B) {
	const n = 10_000
	now := time.Unix(1_000_000, 0).UTC()
	res := &results{}
	maps := []*map[string]float64{&res.cpuMax, &res.cpuSteps, &res.gpuMax, &res.gpuSteps, &res.gpuMean,
		&res.gpuProcesses, &res.gpuDevices, &res.newest, &res.failing, &res.unread}
	for _, m := range maps {
		*m = make(map[string]float64, n)
	}
	nodes := make([]string, n)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("node%05d", i)
		res.cpuMax[nodes[i]], res.cpuSteps[nodes[i]], res.newest[nodes[i]] = 0.1, 40, 999_990
		res.gpuDevices[nodes[i]], res.gpuMax[nodes[i]], res.gpuSteps[nodes[i]], res.unread[nodes[i]] = 8, 0.5, 40, 0
	}
	b.ReportAllocs()
	for b.Loop() {
		if v := res.views(nodes, now, time.Minute, 40); !v["node00000"].Present {
			b.Fatal("not present")
		}
	}
}
