package promfacts

import (
	"fmt"
	"math"
	"time"

	"github.com/rotahq/rota/scaler/fleet"
)

// fact names one query's answer.
type fact int

const (
	cpuMax       fact = iota // highest CPU use over the idle window
	cpuSteps                 // steps of the idle window with a CPU reading
	gpuMax                   // highest GPU busy signal over the idle window
	gpuSteps                 // steps of the idle window with a GPU reading
	gpuCountMin              // fewest GPUs with a reading at any step of the idle window
	gpuCountNow              // GPUs with a reading now
	gpuMean                  // mean GPU busy signal over the underuse window
	gpuProcesses             // compute processes on the GPUs now
	newest                   // time of the newest CPU sample
	gpuDevices               // rota-exporter: GPUs NVML reports
	failing                  // rota-exporter: failing collectors other than the GPU collector
	gpuFailing               // rota-exporter: the GPU collector fails
	unread                   // rota-exporter: reported GPUs without a reading
	gpuCountMax              // external source: most GPUs with a reading at any step of the idle window
	factCount
)

// results holds each query's answer by node name, for one telemetry source.
type results [factCount]map[string]float64

// server is what the config says of one server: the GPUs its pool declares, and the unknown
// telemetry of its source (blocking: its data cannot be whole).
type server struct {
	gpus          int
	unknown       string
	unknownBlocks bool
}

// view turns the query answers into the server's view as of now. It is Present only when every
// condition in the package doc holds; Missing names the first that does not. A NaN fact
// (ambiguous answer) or an infinite one (no count, share or time is) is no fact.
func (res *results) view(n string, s server, now time.Time, maxAge time.Duration, steps int) fleet.TelemetryView {
	var v fleet.TelemetryView
	newestAt, hasNewest := res.get(newest, n)
	if hasNewest {
		v.LastSample = time.UnixMilli(int64(newestAt * 1000)).UTC()
	}
	v.CPUMax, _ = res.get(cpuMax, n)
	v.GPUMax, _ = res.get(gpuMax, n)
	v.GPUMean, _ = res.get(gpuMean, n)
	v.GPUProcesses = processes(res[gpuProcesses][n])
	v.UnknownTelemetry = s.unknown
	switch {
	case s.unknownBlocks:
		v.Missing = "unknown telemetry: " + s.unknown
	case !hasNewest:
		v.Missing = "no sample"
	case !fleet.SampleFresh(v.LastSample, now, maxAge):
		v.Missing = fmt.Sprintf("newest sample %s old (max age %s)", now.Sub(v.LastSample).Round(time.Second), maxAge)
	default:
		v.Missing = res.incomplete(n, s.gpus, steps)
	}
	v.Present = v.Missing == ""
	return v
}

// incomplete says what the server's fresh data lacks: CPU readings at every step of the idle
// window; a reading at every step and now for every GPU its pool declares, and for every GPU it
// reports (a GPU beyond the profile too: the rules hold the window's fewest readings against
// the more of the two counts; on an external source, which reports no count, every GPU read
// at any step of the window, on a pool that declares none too); no failing collector. Empty
// when nothing is missing.
func (res *results) incomplete(n string, declared, steps int) string {
	if c, ok := res.get(cpuSteps, n); !ok || c < float64(steps) {
		return fmt.Sprintf("CPU readings at %.0f of the %d steps of the idle window", c, steps)
	}
	if _, ok := res.get(cpuMax, n); !ok {
		return "no CPU reading"
	}
	devices, _ := res.get(gpuDevices, n)
	if _, fails := res.get(failing, n); fails {
		return "a collector fails"
	}
	if _, fails := res.get(gpuFailing, n); fails && (declared > 0 || devices > 0) {
		return "the GPU collector fails"
	}
	if u, ok := res.get(unread, n); ok && u > 0 {
		return fmt.Sprintf("%.0f of %.0f reported GPUs without a reading", u, devices)
	}
	need, whose := float64(declared), "its pool declares"
	if devices > need {
		need, whose = devices, "its exporter finds"
	}
	if most, ok := res.get(gpuCountMax, n); ok && most > need {
		need, whose = most, "read during the idle window"
	}
	if need > 0 {
		now, _ := res.get(gpuCountNow, n)
		least, hasLeast := res.get(gpuCountMin, n)
		switch {
		case now < need:
			return fmt.Sprintf("%.0f of the %.0f GPUs %s report readings", now, need, whose)
		case !hasLeast || least < need:
			return fmt.Sprintf("as few as %.0f of the %.0f GPUs %s reported during the idle window", least, need, whose)
		}
	}
	if need > 0 {
		c, ok := res.get(gpuSteps, n)
		if _, hasMax := res.get(gpuMax, n); !ok || !hasMax || c < float64(steps) {
			return fmt.Sprintf("GPU readings at %.0f of the %d steps of the idle window", c, steps)
		}
	}
	return ""
}

// get returns the node's value of f; a missing, NaN or infinite value is not ok.
func (res *results) get(f fact, n string) (float64, bool) {
	v, ok := res[f][n]
	if !ok || !finite(v) {
		return 0, false
	}
	return v, true
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// processes is a count of GPU processes as the rules read it (node:..._processes:sum > 0): none
// when absent or NaN, and some when past int's range (+Inf), which a plain conversion made
// negative on amd64, so a server with processes read as one without.
func processes(v float64) int {
	if !(v > 0) {
		return 0
	}
	return int(math.Ceil(min(v, math.MaxInt32)))
}
