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
}

// Server is a mock NVML with H100 80GB GPUs (driver 550.54.15, as dgxh100).
type Server struct {
	*server.Server
	GPUs []*GPU
}

// GPU is one fake device; Set changes what it reports. Safe for concurrent use.
type GPU struct {
	Device *server.Device
	mu     sync.Mutex
	r      Reading
}

// New returns a server with n GPUs, each idle, UUID GPU-00000000-0000-0000-0000-00000000000<i>
// and PCI bus id 00000000:<i>:00.0 (hexadecimal). Note that the mock records every call it
// answers, so a long-running lab grows slowly in memory.
func New(n int) *Server {
	s := &Server{Server: dgxh100.NewWithGPUs(gpus.Multiple(n, gpus.H100_SXM5_80GB)...)}
	for i, d := range s.Devices {
		g := &GPU{Device: d.(*server.Device)}
		g.wire(i)
		s.GPUs = append(s.GPUs, g)
	}
	return s
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
