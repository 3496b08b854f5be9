package gpufake

import (
	"fmt"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// Reading is what one fake GPU reports. The zero value is an idle GPU.
type Reading struct {
	UtilizationPercent uint32
	MemoryUsedBytes    uint64
	PowerMilliwatts    uint32
	EnergyMillijoules  uint64
	TemperatureC       uint32
	// Processes is the number of compute processes running.
	Processes int
	// SMActivePercent, SMOccupancyPercent and TensorActivePercent are the GPM metrics
	// (Hopper and later) the GPU reports between two samples: the fake gives those it held
	// when the later sample was taken.
	SMActivePercent, SMOccupancyPercent, TensorActivePercent float64
}

// Server is a mock NVML with H100 80GB GPUs (driver 550.54.15, as dgxh100), each with GPM.
type Server struct {
	*server.Server
	GPUs []*GPU

	mu      sync.Mutex
	samples map[*gpmSample]bool // GPM samples allocated and not yet freed
}

// GPU is one fake device; Set changes what it reports. Safe for concurrent use.
type GPU struct {
	Device *server.Device
	mu     sync.Mutex
	r      Reading
	noGPM  bool
}

// New returns a server with n GPUs, each idle, UUID GPU-00000000-0000-0000-0000-00000000000<i>
// and PCI bus id 00000000:<i>:00.0 (hexadecimal). Note that the mock records every call it
// answers, so a long-running lab grows slowly in memory.
func New(n int) *Server {
	s := &Server{Server: dgxh100.NewWithGPUs(gpus.Multiple(n, gpus.H100_SXM5_80GB)...), samples: map[*gpmSample]bool{}}
	for i, d := range s.Devices {
		g := &GPU{Device: d.(*server.Device)}
		g.wire(i)
		s.GPUs = append(s.GPUs, g)
	}
	s.wireGPM()
	return s
}

// WithoutGPM makes the GPU one without GPM (before Hopper): GpmQueryDeviceSupport says so.
func (g *GPU) WithoutGPM() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.noGPM = true
}

// LiveGPMSamples counts the GPM samples allocated and not freed.
func (s *Server) LiveGPMSamples() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.samples)
}

// gpmSample is a fake GPM sample: what its GPU held when it was taken.
type gpmSample struct {
	s     *Server
	taken bool
	r     Reading
}

func (p *gpmSample) Free() nvml.Return                   { return p.s.GpmSampleFree(p) }
func (p *gpmSample) Get(d nvml.Device) nvml.Return       { return p.s.GpmSampleGet(d, p) }
func (p *gpmSample) MigGet(nvml.Device, int) nvml.Return { return nvml.ERROR_NOT_SUPPORTED }

func (s *Server) gpu(d nvml.Device) *GPU {
	for _, g := range s.GPUs {
		if nvml.Device(g.Device) == d {
			return g
		}
	}
	return nil
}

// wireGPM answers the GPM calls: support per GPU, samples that record the GPU's reading, and
// metrics from the later of two samples of one GPU.
func (s *Server) wireGPM() {
	s.GpmQueryDeviceSupportFunc = func(d nvml.Device) (nvml.GpmSupport, nvml.Return) {
		g := s.gpu(d)
		if g == nil {
			return nvml.GpmSupport{}, nvml.ERROR_INVALID_ARGUMENT
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.noGPM {
			return nvml.GpmSupport{Version: nvml.GPM_SUPPORT_VERSION}, nvml.SUCCESS
		}
		return nvml.GpmSupport{Version: nvml.GPM_SUPPORT_VERSION, IsSupportedDevice: 1}, nvml.SUCCESS
	}
	s.GpmSampleAllocFunc = func() (nvml.GpmSample, nvml.Return) {
		p := &gpmSample{s: s}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.samples[p] = true
		return p, nvml.SUCCESS
	}
	s.GpmSampleFreeFunc = func(sample nvml.GpmSample) nvml.Return {
		p, ok := sample.(*gpmSample)
		s.mu.Lock()
		defer s.mu.Unlock()
		if !ok || !s.samples[p] {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		delete(s.samples, p)
		return nvml.SUCCESS
	}
	s.GpmSampleGetFunc = func(d nvml.Device, sample nvml.GpmSample) nvml.Return {
		p, ok := sample.(*gpmSample)
		g := s.gpu(d)
		if !ok || g == nil {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		p.r, p.taken = g.reading(), true
		return nvml.SUCCESS
	}
	s.GpmMetricsGetFunc = func(m *nvml.GpmMetricsGetType) nvml.Return {
		first, ok1 := m.Sample1.(*gpmSample)
		second, ok2 := m.Sample2.(*gpmSample)
		if !ok1 || !ok2 || !first.taken || !second.taken || m.NumMetrics > uint32(len(m.Metrics)) {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		for i := range m.NumMetrics {
			mm := &m.Metrics[i]
			mm.NvmlReturn = uint32(nvml.SUCCESS)
			switch nvml.GpmMetricId(mm.MetricId) {
			case nvml.GPM_METRIC_SM_UTIL:
				mm.Value = second.r.SMActivePercent
			case nvml.GPM_METRIC_SM_OCCUPANCY:
				mm.Value = second.r.SMOccupancyPercent
			case nvml.GPM_METRIC_ANY_TENSOR_UTIL:
				mm.Value = second.r.TensorActivePercent
			default:
				mm.NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
			}
		}
		return nvml.SUCCESS
	}
}

// Set changes what the GPU reports from now on.
func (g *GPU) Set(r Reading) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.r = r
}

func (g *GPU) reading() Reading {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.r
}

func (g *GPU) wire(i int) {
	d := g.Device
	d.UUID = fmt.Sprintf("GPU-00000000-0000-0000-0000-%012d", i)
	d.PciBusID = fmt.Sprintf("00000000:%02X:00.0", i)
	d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		p := nvml.PciInfo{PciDeviceId: d.Config.PciDeviceId, Bus: uint32(i)}
		for j := 0; j < len(d.PciBusID) && j < len(p.BusId)-1; j++ {
			p.BusId[j] = int8(d.PciBusID[j])
		}
		return p, nvml.SUCCESS
	}
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		return nvml.Utilization{Gpu: g.reading().UtilizationPercent}, nvml.SUCCESS
	}
	d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		used := g.reading().MemoryUsedBytes
		return nvml.Memory{Total: d.MemoryInfo.Total, Used: used, Free: d.MemoryInfo.Total - used}, nvml.SUCCESS
	}
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) {
		return g.reading().PowerMilliwatts, nvml.SUCCESS
	}
	d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) {
		return g.reading().EnergyMillijoules, nvml.SUCCESS
	}
	d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) {
		return g.reading().TemperatureC, nvml.SUCCESS
	}
	d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		n := g.reading().Processes
		procs := make([]nvml.ProcessInfo, n)
		for j := range procs {
			procs[j] = nvml.ProcessInfo{Pid: uint32(1000 + j), UsedGpuMemory: 1 << 30}
		}
		return procs, nvml.SUCCESS
	}
}
