package lab

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rotahq/rota/exporter/gpufake"
	"github.com/rotahq/rota/scaler/config"
)

// The lab exporter's environment: how many mock GPUs it has, and the file whose readings it
// applies to them.
const (
	GPUsEnv    = "ROTA_LAB_GPUS"
	GPUFileEnv = "ROTA_LAB_GPU_FILE"
)

// userHZ is the kernel's clock tick for /proc/stat times.
const userHZ = 100

// What work looks like on a lab server: each allocated CPU fully busy, each allocated GPU at
// busyGPU percent with one compute process; an idle server keeps a little background load.
const (
	idleLoad   = 0.02
	busyGPU    = 90
	gpuIdleMW  = 70_000
	gpuBusyMW  = 600_000
	gpuBusyMem = 40 << 30
)

// readings are a server's cumulative CPU times and current GPU readings, advanced each tick
// from the work running on it.
type readings struct {
	cpus      int
	memory    uint64
	busy      float64 // CPU-seconds spent busy (user), summed over CPUs
	idle      float64 // CPU-seconds idle
	gpus      []gpufake.Reading
	last      work
	lastTime  time.Time
	allocated float64 // share of CPUs allocated now
}

func newReadings(p config.Profile) *readings {
	return &readings{cpus: p.CPUCores, memory: uint64(p.Memory), gpus: make([]gpufake.Reading, p.GPUs)}
}

// advance adds the time since the last call, spent running w.
func (r *readings) advance(now time.Time, w work) {
	if !r.lastTime.IsZero() {
		dt := now.Sub(r.lastTime).Seconds()
		share := min(1, idleLoad+float64(w.cpus)/float64(r.cpus))
		r.busy += share * float64(r.cpus) * dt
		r.idle += (1 - share) * float64(r.cpus) * dt
		r.allocated = share
		for i := range r.gpus {
			g := &r.gpus[i]
			*g = gpufake.Reading{PowerMilliwatts: gpuIdleMW, TemperatureC: 35, EnergyMillijoules: g.EnergyMillijoules}
			if i < w.gpus {
				g.UtilizationPercent, g.Processes, g.MemoryUsedBytes = busyGPU, 1, gpuBusyMem
				// A lab job keeps its SMs as busy as its kernels: SM activity (the busy signal
				// under policy.gpu_signal auto) agrees with utilisation.
				g.SMActivePercent, g.SMOccupancyPercent, g.TensorActivePercent = busyGPU, busyGPU/2, busyGPU/2
				g.PowerMilliwatts, g.TemperatureC = gpuBusyMW, 70
			}
			g.EnergyMillijoules += uint64(float64(g.PowerMilliwatts) * dt)
		}
	}
	r.last, r.lastTime = w, now
}

// write replaces the server's procfs files (stat, meminfo) and its GPU readings file.
func (r *readings) write(procDir, gpuFile string) error {
	if err := writeAtomic(filepath.Join(procDir, "stat"), []byte(r.stat())); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(procDir, "meminfo"), []byte(r.meminfo())); err != nil {
		return err
	}
	if len(r.gpus) == 0 {
		return nil
	}
	b, err := json.Marshal(r.gpus)
	if err != nil {
		return err
	}
	return writeAtomic(gpuFile, b)
}

// stat renders /proc/stat: the total and one line per CPU (the time shared evenly).
func (r *readings) stat() string {
	var b strings.Builder
	line := func(name string, busy, idle float64) {
		fmt.Fprintf(&b, "%s %d 0 0 %d 0 0 0 0 0 0\n", name, int64(busy*userHZ), int64(idle*userHZ))
	}
	line("cpu ", r.busy, r.idle)
	for i := range r.cpus {
		line(fmt.Sprintf("cpu%d", i), r.busy/float64(r.cpus), r.idle/float64(r.cpus))
	}
	b.WriteString("intr 0\nctxt 0\nbtime 0\nprocesses 1\nprocs_running 1\nprocs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n")
	return b.String()
}

// meminfo renders /proc/meminfo: a tenth of memory used at rest, more as CPUs are allocated.
func (r *readings) meminfo() string {
	kb := r.memory >> 10
	used := uint64(float64(kb) * (0.1 + 0.6*r.allocated))
	return fmt.Sprintf("MemTotal: %d kB\nMemFree: %d kB\nMemAvailable: %d kB\nBuffers: 0 kB\nCached: 0 kB\n", kb, kb-used, kb-used)
}

// ReadGPUFile reads the readings the lab wrote for a server's GPUs.
func ReadGPUFile(path string) ([]gpufake.Reading, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading gpu readings: %w", err)
	}
	var rs []gpufake.Reading
	if err := json.Unmarshal(b, &rs); err != nil {
		return nil, fmt.Errorf("parsing gpu readings: %w", err)
	}
	return rs, nil
}
