package promfacts

import (
	"math"
	"time"

	"github.com/rotahq/rota/scaler/fleet"
)

// views turns the query answers into one view per node as of now. A server is Present only
// when every condition in the package doc holds; a NaN fact (ambiguous answer) is no fact.
func (res *results) views(nodes []string, now time.Time, maxAge time.Duration, steps int) map[string]fleet.TelemetryView {
	out := make(map[string]fleet.TelemetryView, len(nodes))
	for _, n := range nodes {
		var v fleet.TelemetryView
		newest, ok := get(res.newest, n)
		if ok {
			v.LastSample = time.UnixMilli(int64(newest * 1000)).UTC()
		}
		v.CPUMax, _ = get(res.cpuMax, n)
		v.GPUMax, _ = get(res.gpuMax, n)
		v.GPUMean, _ = get(res.gpuMean, n)
		procs, _ := get(res.gpuProcesses, n)
		v.GPUProcesses = int(procs)
		v.Present = ok && now.Sub(v.LastSample) <= maxAge && res.covered(n, steps) && res.complete(n)
		out[n] = v
	}
	return out
}

// covered: CPU readings at every step of the idle window, and GPU readings too on a server that
// reports GPUs.
func (res *results) covered(n string, steps int) bool {
	if c, ok := get(res.cpuSteps, n); !ok || c < float64(steps) {
		return false
	}
	if _, ok := get(res.cpuMax, n); !ok {
		return false
	}
	devices, ok := get(res.gpuDevices, n)
	if !ok || devices == 0 {
		return true
	}
	c, ok := get(res.gpuSteps, n)
	_, hasMax := get(res.gpuMax, n)
	return ok && hasMax && c >= float64(steps)
}

// complete: no failing collector, no GPU without a reading.
func (res *results) complete(n string) bool {
	if _, failing := res.failing[n]; failing {
		return false
	}
	unread, ok := res.unread[n]
	return !ok || unread == 0
}

// get returns the node's value; a missing or NaN value is not ok.
func get(m map[string]float64, n string) (float64, bool) {
	v, ok := m[n]
	if !ok || math.IsNaN(v) {
		return 0, false
	}
	return v, true
}
