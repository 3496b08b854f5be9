package exporter

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/prometheus/procfs"

	"github.com/rotahq/rota/internal/testutil"
)

// FuzzProcFiles feeds arbitrary /proc/stat and /proc/meminfo contents to the CPU and memory
// collectors: they may fail, never panic, and what they report on success is sane: at least one
// CPU, and CPU seconds that are finite and not negative.
func FuzzProcFiles(f *testing.F) {
	for _, dir := range []string{"proc", "proc-no-memavailable"} {
		f.Add(testutil.Testdata(f, dir, "stat"), testutil.Testdata(f, dir, "meminfo"))
	}
	f.Add([]byte("cpu  1 2 3\n"), []byte("MemTotal: 1 kB\nMemAvailable: x kB\n"))
	f.Add([]byte("cpu0 1 2 3 4 5 6 7 8 9 10\n"), []byte("MemTotal: 18446744073709551615 kB\n"))
	// Not what a kernel writes, which procfs read as numbers: NaN, Inf, negative, hex.
	f.Add([]byte("cpu0 NaN 2 3 4\n"), []byte{})
	f.Add([]byte("cpu0 1 2 3 +Inf\n"), []byte{})
	f.Add([]byte("cpu0 1 -2 3 4\n"), []byte{})
	f.Add([]byte("cpu0 0x1p4 2 3 4\n"), []byte{})
	f.Fuzz(func(t *testing.T, stat, mem []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "stat"), stat, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "meminfo"), mem, 0o644); err != nil {
			t.Fatal(err)
		}
		fs, err := procfs.NewFS(dir)
		if err != nil {
			t.Fatal(err)
		}
		cpu := &updater{c: NewCPUCollector(dir, true, fixedClock)}
		got := series(t, cpu)
		if cpu.err == nil && got["rota_node_cpus{}"] < 1 {
			t.Errorf("cpu collector succeeded with %v CPUs", got["rota_node_cpus{}"])
		}
		for k, v := range got {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Errorf("%s = %v", k, v)
			}
		}
		memory := &updater{c: NewMemoryCollector(fs)}
		got = series(t, memory)
		if memory.err == nil && len(got) != 2 {
			t.Errorf("memory collector succeeded with %d series, want 2", len(got))
		}
	})
}

// fuzzReturns are the NVML answers FuzzGPUAnswers picks from.
var fuzzReturns = []nvml.Return{
	nvml.SUCCESS, nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_GPU_IS_LOST, nvml.ERROR_UNKNOWN,
	nvml.ERROR_INSUFFICIENT_SIZE, nvml.ERROR_NO_PERMISSION, nvml.ERROR_TIMEOUT,
}

// FuzzGPUAnswers feeds GPU 1 of two arbitrary NVML answers: strings, numbers and a return code
// per call (rets[i] for the i-th of uuid, name, PCI info, then gpuSteps' calls). The scrape never
// fails nor panics; the other GPU is read; GPU 1 is reported with its process count, or, when
// an identity call or a step failed (ERROR_NOT_SUPPORTED is a failure only for the processes),
// with no series but its error counter, which counts the scrape.
func FuzzGPUAnswers(f *testing.F) {
	f.Add("NVIDIA H100", "GPU-1", []byte("00000000:01:00.0"), uint32(50), uint64(1<<30), uint64(80<<30), uint8(1), []byte{})
	f.Add("NVIDIA \xfe", "GPU-\xc3", []byte{'0', 0xff}, uint32(150), uint64(90<<30), uint64(0), uint8(0), []byte{0, 0, 0, 1, 1, 0, 1, 1, 1})
	f.Add("", "", []byte{}, uint32(0), uint64(0), uint64(0), uint8(3), []byte{0, 0, 0, 0, 0, 4})
	f.Add("x", "GPU-1", []byte("x"), uint32(1), uint64(1), uint64(1), uint8(0), []byte{0, 0, 0, 0, 2})
	f.Fuzz(func(t *testing.T, name, uuid string, busID []byte, util uint32, used, total uint64, procs uint8, rets []byte) {
		ret := func(i int) nvml.Return {
			if i < len(rets) {
				return fuzzReturns[int(rets[i])%len(fuzzReturns)]
			}
			return nvml.SUCCESS
		}
		fake := busyFake(2)
		dev := fake.GPUs[1].Device
		dev.GetUUIDFunc = func() (string, nvml.Return) { return uuid, ret(0) }
		dev.GetNameFunc = func() (string, nvml.Return) { return name, ret(1) }
		dev.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
			var p nvml.PciInfo
			for i := 0; i < len(busID) && i < len(p.BusId); i++ {
				p.BusId[i] = int8(busID[i])
			}
			return p, ret(2)
		}
		dev.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{Gpu: util}, ret(3) }
		dev.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{Used: used, Total: total}, ret(4) }
		dev.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
			return make([]nvml.ProcessInfo, procs), ret(5)
		}
		dev.GetPowerUsageFunc = func() (uint32, nvml.Return) { return util, ret(6) }
		dev.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return used, ret(7) }
		dev.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return util, ret(8) }
		failed := ret(5) != nvml.SUCCESS
		for i := range 9 {
			failed = failed || ret(i) != nvml.SUCCESS && (i < 3 || ret(i) != nvml.ERROR_NOT_SUPPORTED)
		}
		log, _ := quietLog()
		u := &updater{c: NewGPUCollector(fake, neverTimeout, fixedClock, log)}
		got := series(t, u)
		if u.err != nil {
			t.Fatalf("update: %v", u.err)
		}
		if _, ok := got[gpuSeries("rota_gpu_compute_processes", 0)]; !ok {
			t.Error("GPU 0 not read")
		}
		var gpu1, errs []string
		for k, v := range got {
			switch {
			case strings.HasPrefix(k, `rota_gpu_device_errors_total{gpu="1",reason="error"`):
				if v == 1 {
					errs = append(errs, k)
				}
			case strings.Contains(k, `gpu="1"`) && !strings.HasPrefix(k, "rota_gpu_device_errors_total{"):
				gpu1 = append(gpu1, k)
			}
		}
		procSeries := 0
		for _, k := range gpu1 {
			if strings.HasPrefix(k, "rota_gpu_compute_processes{") {
				procSeries++
				if got[k] != float64(procs) {
					t.Errorf("%s = %v, want %d", k, got[k], procs)
				}
			}
		}
		if failed && (len(gpu1) > 0 || len(errs) != 1) || !failed && (procSeries != 1 || len(errs) != 0) {
			t.Errorf("answers %v: GPU 1 failed %v, reported %v, error counted %v", rets, failed, gpu1, errs)
		}
	})
}
