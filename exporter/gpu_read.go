package exporter

import (
	"fmt"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// gpuMetric names one per-GPU reading.
type gpuMetric int

const (
	gpuUtilization gpuMetric = iota
	gpuMemoryUsed
	gpuMemoryTotal
	gpuProcesses
	gpuPower
	gpuEnergy
	gpuTemperature
	gpuSMActive
	gpuSMOccupancy
	gpuTensorActive
	gpuMetricCount
)

// gpuSample is one reading of one GPU.
type gpuSample struct {
	metric gpuMetric
	value  float64
}

// gpuReading is everything read from one GPU.
type gpuReading struct {
	uuid, name, pciBusID string
	samples              []gpuSample
}

// gpuStep is one NVML call and the samples it yields.
type gpuStep struct {
	what string
	read func(nvml.Device) ([]gpuSample, nvml.Return)
	// required: the GPU cannot be judged without this reading, so ERROR_NOT_SUPPORTED fails
	// the GPU's read like any other error instead of leaving the reading out.
	required bool
}

// gpuSteps lists the readings taken from every GPU, in order.
func gpuSteps() []gpuStep {
	return []gpuStep{
		{"utilization", func(d nvml.Device) ([]gpuSample, nvml.Return) {
			u, ret := d.GetUtilizationRates()
			return []gpuSample{{gpuUtilization, float64(u.Gpu) / 100}}, ret
		}, false},
		{"memory", func(d nvml.Device) ([]gpuSample, nvml.Return) {
			m, ret := d.GetMemoryInfo()
			return []gpuSample{{gpuMemoryUsed, float64(m.Used)}, {gpuMemoryTotal, float64(m.Total)}}, ret
		}, false},
		// Required: the rules read a GPU with no process series as running none, so a GPU
		// that will not list its processes (ERROR_NOT_SUPPORTED) would read idle at low
		// utilisation however much memory its work holds.
		{"compute processes", func(d nvml.Device) ([]gpuSample, nvml.Return) {
			p, ret := d.GetComputeRunningProcesses()
			return []gpuSample{{gpuProcesses, float64(len(p))}}, ret
		}, true},
		{"power", func(d nvml.Device) ([]gpuSample, nvml.Return) {
			mw, ret := d.GetPowerUsage()
			return []gpuSample{{gpuPower, float64(mw) / 1000}}, ret
		}, false},
		{"energy", func(d nvml.Device) ([]gpuSample, nvml.Return) {
			mj, ret := d.GetTotalEnergyConsumption()
			return []gpuSample{{gpuEnergy, float64(mj) / 1000}}, ret
		}, false},
		{"temperature", func(d nvml.Device) ([]gpuSample, nvml.Return) {
			c, ret := d.GetTemperature(nvml.TEMPERATURE_GPU)
			return []gpuSample{{gpuTemperature, float64(c)}}, ret
		}, false},
	}
}

// readDevice takes every reading of GPU index through NVML, its GPM metrics last (gpm is the
// GPU's sampling state, now its clock). A reading the GPU does not support (ERROR_NOT_SUPPORTED: no power
// sensor, utilisation under MIG, energy before Volta, GPM before Hopper) is left out, unless
// the step is required (the compute processes); any other error fails the whole GPU for this
// scrape.
func readDevice(lib nvml.Interface, index int, gpm *gpmState, now func() time.Time) (gpuReading, error) {
	var r gpuReading
	dev, ret := lib.DeviceGetHandleByIndex(index)
	if ret != nvml.SUCCESS {
		return r, fmt.Errorf("gpu %d: getting handle: %w", index, ret)
	}
	uuid, ret := dev.GetUUID()
	if ret != nvml.SUCCESS {
		return r, fmt.Errorf("gpu %d: reading uuid: %w", index, ret)
	}
	name, ret := dev.GetName()
	if ret != nvml.SUCCESS {
		return r, fmt.Errorf("gpu %d: reading name: %w", index, ret)
	}
	pci, ret := dev.GetPciInfo()
	if ret != nvml.SUCCESS {
		return r, fmt.Errorf("gpu %d: reading pci info: %w", index, ret)
	}
	r.uuid, r.name, r.pciBusID = labelValue(uuid), labelValue(name), labelValue(cString(pci.BusId[:]))
	for _, step := range gpuSteps() {
		samples, ret := step.read(dev)
		switch ret {
		case nvml.SUCCESS:
			r.samples = append(r.samples, samples...)
		case nvml.ERROR_NOT_SUPPORTED:
			if step.required {
				return r, fmt.Errorf("gpu %d: reading %s: %w", index, step.what, ret)
			}
		default:
			return r, fmt.Errorf("gpu %d: reading %s: %w", index, step.what, ret)
		}
	}
	samples, err := gpm.read(lib, dev, now)
	if err != nil {
		return r, fmt.Errorf("gpu %d: reading gpm metrics: %w", index, err)
	}
	r.samples = append(r.samples, samples...)
	return r, nil
}

// labelValue makes a string NVML gave a valid label value: bytes that are not UTF-8 (a garbled
// name, UUID, PCI bus id or driver version) become U+FFFD. Prometheus panics on a label value
// that is not UTF-8, and the Exporter runs each collector in a goroutine of its own, so one such
// byte would end the exporter, its CPU and memory readings with it.
func labelValue(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// cString converts NVML's NUL-terminated char array to a string.
func cString(b []int8) string {
	s := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}
