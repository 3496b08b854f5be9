package exporter

import (
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// gpmMetrics are the GPM (GPU Performance Monitoring) metrics read, and what each becomes.
// NVML gives them in percent.
var gpmMetrics = []struct {
	id     nvml.GpmMetricId
	metric gpuMetric
}{
	{nvml.GPM_METRIC_SM_UTIL, gpuSMActive},
	{nvml.GPM_METRIC_SM_OCCUPANCY, gpuSMOccupancy},
	{nvml.GPM_METRIC_ANY_TENSOR_UTIL, gpuTensorActive},
}

// gpmFunctions are the NVML functions GPM reading calls. A driver older than GPM (R470, the
// long-term branch of many V100 and T4 fleets) has none of them in its library, and go-nvml
// binds NVML's functions lazily: calling one the library lacks is the dynamic linker's
// "undefined symbol", which ends the process. So they are looked up before any is called.
var gpmFunctions = []string{"nvmlGpmQueryDeviceSupport", "nvmlGpmSampleAlloc", "nvmlGpmSampleGet", "nvmlGpmMetricsGet", "nvmlGpmSampleFree"}

// gpmMinInterval is the least time between two GPM samples of a GPU. NVML asks for more than
// 100 ms between two nvmlGpmSampleGet calls; a metric over a shorter time is mostly noise.
const gpmMinInterval = time.Second

// gpmState is one GPU's GPM sampling. A GPM metric is computed from two samples taken some
// time apart, so each read keeps its sample for the next: the metrics a scrape reports cover
// the time since the previous sample, as a rate does, and the first read reports none. A read
// less than gpmMinInterval after the last sample takes none and reports the metrics computed at
// that sample (covering the time up to under gpmMinInterval ago): of two scrapers a few
// milliseconds apart, the second reports what the first computed, not a metric over those
// milliseconds. Only the GPU's one read in flight touches it (reads of a GPU never overlap).
type gpmState struct {
	checked, supported bool
	prev               nvml.GpmSample
	prevAt             time.Time   // when prev was taken
	last               []gpuSample // the metrics computed from the last two samples
}

// read returns the GPM metrics since the previous sample, none on a GPU without GPM (before
// Hopper, or a driver without it: see gpmFunctions) or before two samples are taken; now is
// the clock. A GPM call that fails is an error, which fails the GPU for the scrape like any
// other reading, but for ERROR_NOT_SUPPORTED on a sample or the metrics (a GPU that says it
// has GPM, under MIG or with profiling restricted): that is a reading the GPU does not
// support, left out from then on, and the GPU's other series stay.
func (g *gpmState) read(lib nvml.Interface, dev nvml.Device, now func() time.Time) ([]gpuSample, error) {
	if !g.checked {
		support, ret := nvml.GpmSupport{}, nvml.ERROR_FUNCTION_NOT_FOUND
		if hasGPM(lib) {
			support, ret = lib.GpmQueryDeviceSupport(dev)
		}
		switch ret {
		case nvml.SUCCESS:
			g.supported = support.IsSupportedDevice != 0
		case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND:
			g.supported = false
		default:
			return nil, fmt.Errorf("querying support: %w", ret)
		}
		g.checked = true
	}
	if !g.supported {
		return nil, nil
	}
	at := now()
	// A clock that went back (a test's, or a wall clock without a monotonic reading) takes a
	// sample rather than serve the last metrics for as long as it went back.
	if age := at.Sub(g.prevAt); g.prev != nil && age >= 0 && age < gpmMinInterval {
		return g.last, nil
	}
	cur, ret := lib.GpmSampleAlloc()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("allocating a sample: %w", ret)
	}
	if ret := lib.GpmSampleGet(dev, cur); ret != nvml.SUCCESS {
		lib.GpmSampleFree(cur)
		if ret == nvml.ERROR_NOT_SUPPORTED {
			return g.unsupported(lib), nil
		}
		return nil, fmt.Errorf("taking a sample: %w", ret)
	}
	prev := g.prev
	g.prev, g.prevAt, g.last = cur, at, nil
	if prev == nil {
		return nil, nil
	}
	defer lib.GpmSampleFree(prev)
	m := nvml.GpmMetricsGetType{NumMetrics: uint32(len(gpmMetrics)), Sample1: prev, Sample2: cur}
	for i, gm := range gpmMetrics {
		m.Metrics[i].MetricId = uint32(gm.id)
	}
	switch ret := lib.GpmMetricsGet(&m); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_NOT_SUPPORTED:
		return g.unsupported(lib), nil
	default:
		return nil, fmt.Errorf("computing metrics: %w", ret)
	}
	var out []gpuSample
	for i, gm := range gpmMetrics {
		// A metric the GPU cannot compute has its own error and is left out.
		if nvml.Return(m.Metrics[i].NvmlReturn) == nvml.SUCCESS {
			out = append(out, gpuSample{gm.metric, m.Metrics[i].Value / 100})
		}
	}
	g.last = out
	return out, nil
}

// hasGPM reports whether lib has every one of gpmFunctions.
func hasGPM(lib nvml.Interface) bool {
	for _, name := range gpmFunctions {
		if lib.Extensions().LookupSymbol(name) != nil {
			return false
		}
	}
	return true
}

// unsupported marks the GPU as one without GPM from now on, freeing the sample it keeps, and
// returns its (no) metrics.
func (g *gpmState) unsupported(lib nvml.Interface) []gpuSample {
	if g.prev != nil {
		lib.GpmSampleFree(g.prev)
	}
	g.supported, g.prev, g.last = false, nil, nil
	return nil
}
