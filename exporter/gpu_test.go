package exporter

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"

	"github.com/rotahq/rota/exporter/gpufake"
	"github.com/rotahq/rota/internal/clock"
)

// neverTimeout is a GPU timeout no mock call comes near: tests that are not about timeouts
// cannot time out.
const neverTimeout = time.Minute

// busyFake returns n fake GPUs with distinct, deterministic readings.
func busyFake(n int) *gpufake.Server {
	s := gpufake.New(n)
	for i, g := range s.GPUs {
		g.Set(gpufake.Reading{
			UtilizationPercent: uint32(10 * i),
			MemoryUsedBytes:    uint64(i) << 30,
			PowerMilliwatts:    uint32(70000 + 1500*i),
			EnergyMillijoules:  uint64(1000000 * (i + 1)),
			TemperatureC:       uint32(30 + i),
			Processes:          i % 3,
		})
	}
	return s
}

// gpuSeries is the key series() gives a per-GPU metric of fake GPU i.
func gpuSeries(name string, i int) string {
	return fmt.Sprintf(`%s{gpu="%d",uuid="GPU-00000000-0000-0000-0000-%012d"}`, name, i, i)
}

// errorSeries is the key of fake GPU i's error counter for reason: it carries the GPU's UUID,
// as every other GPU series does.
func errorSeries(i int, reason string) string {
	return fmt.Sprintf(`rota_gpu_device_errors_total{gpu="%d",reason=%q,uuid="GPU-00000000-0000-0000-0000-%012d"}`, i, reason, i)
}

func countWarnings(entries []*logrus.Entry) int {
	n := 0
	for _, e := range entries {
		if e.Level == logrus.WarnLevel {
			n++
		}
	}
	return n
}

func TestGPUReadings(t *testing.T) {
	defer goleak.VerifyNone(t)
	cases := []struct {
		name string
		gpus int
		want map[string]float64
	}{
		{name: "no gpu", gpus: 0, want: map[string]float64{`rota_gpu_devices{}`: 0}},
		{name: "one gpu", gpus: 1, want: map[string]float64{
			`rota_gpu_devices{}`:                       1,
			gpuSeries("rota_gpu_utilization_ratio", 0): 0,
			gpuSeries("rota_gpu_compute_processes", 0): 0,
		}},
		{name: "eight gpus", gpus: 8, want: map[string]float64{
			`rota_gpu_devices{}`:                         8,
			gpuSeries("rota_gpu_utilization_ratio", 7):   0.7,
			gpuSeries("rota_gpu_memory_used_bytes", 7):   7 << 30,
			gpuSeries("rota_gpu_memory_total_bytes", 7):  81920 << 20,
			gpuSeries("rota_gpu_power_watts", 7):         80.5,
			gpuSeries("rota_gpu_energy_joules_total", 7): 8000,
			gpuSeries("rota_gpu_temperature_celsius", 7): 37,
			gpuSeries("rota_gpu_compute_processes", 7):   1,
			`rota_gpu_info{driver_version="550.54.15",gpu="7",name="NVIDIA H100 80GB HBM3",pci_bus_id="00000000:07:00.0",uuid="GPU-00000000-0000-0000-0000-000000000007"}`: 1,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			log, _ := quietLog()
			u := &updater{c: NewGPUCollector(busyFake(tc.gpus), neverTimeout, time.Now, log)}
			got := series(t, u)
			if u.err != nil {
				t.Fatalf("update: %v", u.err)
			}
			for k, v := range tc.want {
				if g, ok := got[k]; !ok || g != v {
					t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
				}
			}
			perGPU := 0
			for k := range got {
				if strings.HasPrefix(k, "rota_gpu_utilization_ratio{") {
					perGPU++
				}
			}
			if perGPU != tc.gpus {
				t.Errorf("%d GPUs with utilisation, want %d", perGPU, tc.gpus)
			}
		})
	}
}

// TestGPULibraryMissing: a failed Init makes the collector unavailable, is logged once, and is
// never followed by another NVML call (after a failed Init, a call can kill the process).
func TestGPULibraryMissing(t *testing.T) {
	defer goleak.VerifyNone(t)
	var after atomic.Int32
	lib := &mock.Interface{
		InitFunc:                   func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND },
		DeviceGetCountFunc:         func() (int, nvml.Return) { after.Add(1); return 0, nvml.SUCCESS },
		SystemGetDriverVersionFunc: func() (string, nvml.Return) { after.Add(1); return "", nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(int) (nvml.Device, nvml.Return) { after.Add(1); return nil, nvml.SUCCESS },
	}
	log, hook := quietLog()
	u := &updater{c: NewGPUCollector(lib, neverTimeout, time.Now, log)}
	for range 3 {
		got := series(t, u)
		if !errors.Is(u.err, ErrGPUUnavailable) || !errors.Is(u.err, nvml.ERROR_LIBRARY_NOT_FOUND) {
			t.Fatalf("error = %v, want ErrGPUUnavailable wrapping ERROR_LIBRARY_NOT_FOUND", u.err)
		}
		if v, ok := got[`rota_gpu_devices{}`]; !ok || v != 0 || len(got) != 1 {
			t.Fatalf("got %v, want only rota_gpu_devices 0", got)
		}
	}
	if n := len(lib.InitCalls()); n != 1 {
		t.Errorf("Init called %d times, want 1", n)
	}
	if n := after.Load(); n != 0 {
		t.Errorf("%d NVML calls after the failed Init, want 0", n)
	}
	if n := countWarnings(hook.AllEntries()); n != 1 {
		t.Errorf("%d warnings over three scrapes, want 1", n)
	}
}

// TestGPUInitSaysWhy: a failed Init's warning says what the code most likely means (a driver
// upgraded without a reboot was told "no driver or no GPU").
func TestGPUInitSaysWhy(t *testing.T) {
	for ret, want := range map[nvml.Return]string{
		nvml.ERROR_LIBRARY_NOT_FOUND:       "no driver or no GPU",
		nvml.ERROR_LIB_RM_VERSION_MISMATCH: "the NVML library and the loaded driver differ",
		nvml.ERROR_NO_PERMISSION:           "no permission to open the GPU devices",
	} {
		log, hook := quietLog()
		u := &updater{c: NewGPUCollector(&mock.Interface{InitFunc: func() nvml.Return { return ret }}, neverTimeout, time.Now, log)}
		series(t, u)
		if e := hook.LastEntry(); e == nil || !strings.Contains(e.Message, want) {
			t.Errorf("%v: logged %v, want %q", ret, e, want)
		}
	}
}

// TestGPUDeviceFailing: a lost GPU drops only its own series and counts an error per scrape.
func TestGPUDeviceFailing(t *testing.T) {
	defer goleak.VerifyNone(t)
	fake := busyFake(4)
	fake.GPUs[2].Device.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		return nvml.Utilization{}, nvml.ERROR_GPU_IS_LOST
	}
	log, hook := quietLog()
	u := &updater{c: NewGPUCollector(fake, neverTimeout, time.Now, log)}
	var got map[string]float64
	for range 2 {
		got = series(t, u)
		if u.err != nil {
			t.Fatalf("update: %v (one lost GPU must not fail the collector)", u.err)
		}
	}
	for _, k := range []string{
		gpuSeries("rota_gpu_utilization_ratio", 1),
		gpuSeries("rota_gpu_utilization_ratio", 3),
	} {
		if _, ok := got[k]; !ok {
			t.Errorf("%s missing", k)
		}
	}
	for k := range got {
		if strings.Contains(k, `gpu="2"`) && !strings.HasPrefix(k, "rota_gpu_device_errors_total{") {
			t.Errorf("series of the lost GPU still reported: %s", k)
		}
	}
	if v, ok := got[errorSeries(2, "error")]; !ok || v != 2 {
		t.Errorf("errors = %v (present %v) after two scrapes, want 2", v, ok)
	}
	if n := countWarnings(hook.AllEntries()); n != 1 {
		t.Errorf("%d warnings, want 1 (logged when the GPU starts failing)", n)
	}
}

// TestGPUSlowDevice: a GPU whose NVML call hangs cannot hold the scrape: the scrape returns,
// reports that GPU as timed out and the others as read; concurrent and later scrapes wait on the
// same stuck call instead of starting new ones; once the call returns, the GPU is back.
func TestGPUSlowDevice(t *testing.T) {
	defer goleak.VerifyNone(t)
	fake := busyFake(4)
	release := make(chan struct{})
	var calls atomic.Int32
	dev := fake.GPUs[1].Device
	answer := dev.GetUtilizationRatesFunc
	dev.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		if calls.Add(1) == 1 {
			<-release
		}
		return answer()
	}
	log, _ := quietLog()
	// The bound only decides how long the test waits for the stuck GPU: the other GPUs answer
	// in microseconds and the stuck one never answers before release.
	c := NewGPUCollector(fake, 200*time.Millisecond, time.Now, log)
	slowUtil := gpuSeries("rota_gpu_utilization_ratio", 1)
	for scrape := 1; scrape <= 2; scrape++ {
		var wg sync.WaitGroup
		results := make([]map[string]float64, 2)
		errs := make([]error, 2)
		for j := range results {
			wg.Go(func() {
				u := &updater{c: c}
				results[j] = series(t, u)
				errs[j] = u.err
			})
		}
		wg.Wait()
		for j, got := range results {
			if errs[j] != nil {
				t.Fatalf("scrape %d: update: %v", scrape, errs[j])
			}
			if _, ok := got[slowUtil]; ok {
				t.Errorf("scrape %d: the stuck GPU reported a reading", scrape)
			}
			if _, ok := got[gpuSeries("rota_gpu_utilization_ratio", 3)]; !ok {
				t.Errorf("scrape %d: GPU 3 missing", scrape)
			}
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("stuck call made %d times over four scrapes, want 1 (no pile-up)", n)
	}
	close(release)
	got := series(t, &updater{c: c})
	if _, ok := got[slowUtil]; !ok {
		t.Errorf("GPU 1 missing after its call returned")
	}
	if v := got[errorSeries(1, "timeout")]; v != 4 {
		t.Errorf("timeouts = %v, want 4 (one per scrape that missed it)", v)
	}
}

// TestGPUInitHangs: an NVML Init that does not return leaves the collector unavailable for the
// scrape, bounded, and the next scrape after it returns sees the GPUs.
func TestGPUInitHangs(t *testing.T) {
	defer goleak.VerifyNone(t)
	fake := busyFake(2)
	release := make(chan struct{})
	fake.InitFunc = func() nvml.Return { <-release; return nvml.SUCCESS }
	log, _ := quietLog()
	u := &updater{c: NewGPUCollector(fake, 100*time.Millisecond, time.Now, log)}
	got := series(t, u)
	if !errors.Is(u.err, ErrGPUTimeout) || got[`rota_gpu_devices{}`] != 0 {
		t.Fatalf("error %v, devices %v; want ErrGPUTimeout and 0", u.err, got[`rota_gpu_devices{}`])
	}
	close(release)
	u.c.(*GPUCollector).timeout = neverTimeout
	got = series(t, u)
	if u.err != nil || got[`rota_gpu_devices{}`] != 2 {
		t.Fatalf("after Init returned: error %v, devices %v; want nil and 2", u.err, got[`rota_gpu_devices{}`])
	}
}

// TestGPUReadingNotSupported: a reading the GPU does not support (utilisation under MIG, no
// power sensor) is left out; the GPU's other series stay and no error is counted.
func TestGPUReadingNotSupported(t *testing.T) {
	defer goleak.VerifyNone(t)
	fake := busyFake(2)
	dev := fake.GPUs[1].Device
	dev.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED }
	dev.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	log, _ := quietLog()
	u := &updater{c: NewGPUCollector(fake, neverTimeout, time.Now, log)}
	got := series(t, u)
	if u.err != nil {
		t.Fatalf("update: %v", u.err)
	}
	for _, absent := range []string{gpuSeries("rota_gpu_utilization_ratio", 1), gpuSeries("rota_gpu_power_watts", 1)} {
		if _, ok := got[absent]; ok {
			t.Errorf("%s reported though not supported", absent)
		}
	}
	for _, present := range []string{
		gpuSeries("rota_gpu_compute_processes", 1), gpuSeries("rota_gpu_memory_used_bytes", 1),
		gpuSeries("rota_gpu_temperature_celsius", 1), gpuSeries("rota_gpu_utilization_ratio", 0),
	} {
		if _, ok := got[present]; !ok {
			t.Errorf("%s missing", present)
		}
	}
	if v := got[errorSeries(1, "error")]; v != 0 {
		t.Errorf("errors = %v, want 0", v)
	}
}

// TestGPUErrorsUUIDUnknown: a GPU whose UUID NVML cannot give at start still has its error
// counter from the start, labelled uuid="unknown", counting its failed reads.
func TestGPUErrorsUUIDUnknown(t *testing.T) {
	defer goleak.VerifyNone(t)
	fake := busyFake(2)
	fake.GPUs[1].Device.GetUUIDFunc = func() (string, nvml.Return) { return "", nvml.ERROR_GPU_IS_LOST }
	log, _ := quietLog()
	u := &updater{c: NewGPUCollector(fake, neverTimeout, time.Now, log)}
	got := series(t, u)
	if v, ok := got[`rota_gpu_device_errors_total{gpu="1",reason="error",uuid="unknown"}`]; !ok || v != 1 {
		t.Errorf("error counter of the GPU without a UUID = %v (present %v), want 1; series %v", v, ok, got)
	}
	if v, ok := got[errorSeries(0, "timeout")]; !ok || v != 0 {
		t.Errorf("GPU 0's timeout counter = %v (present %v), want 0 from the start", v, ok)
	}
}

// TestGPUSMActivity: a GPU with GPM (Hopper) reports SM activity, SM occupancy and tensor
// activity from its second read on, each a ratio over the time since the previous read; a GPU
// without GPM reports none and stays read; a failing GPM call fails its GPU for the scrape
// like any reading; samples are freed, one kept per GPU between reads.
func TestGPUSMActivity(t *testing.T) {
	defer goleak.VerifyNone(t)
	fake := busyFake(3)
	fake.GPUs[0].Set(gpufake.Reading{UtilizationPercent: 100, SMActivePercent: 2, SMOccupancyPercent: 1, TensorActivePercent: 0, Processes: 1})
	fake.GPUs[1].Set(gpufake.Reading{UtilizationPercent: 60, SMActivePercent: 55.5, SMOccupancyPercent: 40, TensorActivePercent: 30})
	fake.GPUs[2].WithoutGPM()
	log, _ := quietLog()
	clk := clock.NewManual(fixedClock())
	u := &updater{c: NewGPUCollector(fake, neverTimeout, clk.Now, log)}
	sm := func(name string, i int) string { return gpuSeries("rota_gpu_"+name, i) }

	first := series(t, u)
	for i := range 3 {
		if _, ok := first[sm("sm_active_ratio", i)]; ok {
			t.Errorf("GPU %d reports SM activity from one sample", i)
		}
	}
	clk.Advance(15 * time.Second)
	got := series(t, u)
	if u.err != nil {
		t.Fatalf("update: %v", u.err)
	}
	for k, want := range map[string]float64{
		sm("sm_active_ratio", 0): 0.02, sm("sm_occupancy_ratio", 0): 0.01, sm("tensor_active_ratio", 0): 0,
		sm("sm_active_ratio", 1): 0.555, sm("sm_occupancy_ratio", 1): 0.4, sm("tensor_active_ratio", 1): 0.3,
		sm("utilization_ratio", 0): 1, sm("utilization_ratio", 2): 0.2,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
		}
	}
	if _, ok := got[sm("sm_active_ratio", 2)]; ok {
		t.Error("a GPU without GPM reports SM activity")
	}
	if n := fake.LiveGPMSamples(); n != 2 {
		t.Errorf("%d GPM samples live after two reads of two GPM GPUs, want 2 (one kept per GPU)", n)
	}

	// GPU 1's GPM stops answering: the GPU fails for the scrape and its series are left out.
	fake.GpmMetricsGetFunc = func(*nvml.GpmMetricsGetType) nvml.Return { return nvml.ERROR_UNKNOWN }
	clk.Advance(15 * time.Second)
	got = series(t, u)
	for _, i := range []int{0, 1} {
		if _, ok := got[sm("utilization_ratio", i)]; ok {
			t.Errorf("GPU %d's series reported though its GPM read failed", i)
		}
		if v := got[errorSeries(i, "error")]; v != 1 {
			t.Errorf("GPU %d errors = %v, want 1", i, v)
		}
	}
	if _, ok := got[sm("utilization_ratio", 2)]; !ok {
		t.Error("the GPU without GPM was not read")
	}
	if n := fake.LiveGPMSamples(); n != 2 {
		t.Errorf("%d GPM samples live after a failed read, want 2", n)
	}

	// GPM that says it is there but answers ERROR_NOT_SUPPORTED (under MIG, profiling
	// restricted) is a reading the GPU does not support: no SM series from then on, the GPUs'
	// other series stay, and their samples are freed.
	for name, fail := range map[string]func(fake *gpufake.Server){
		"sample": func(fake *gpufake.Server) {
			fake.GpmSampleGetFunc = func(nvml.Device, nvml.GpmSample) nvml.Return { return nvml.ERROR_NOT_SUPPORTED }
		},
		"metrics": func(fake *gpufake.Server) {
			fake.GpmMetricsGetFunc = func(*nvml.GpmMetricsGetType) nvml.Return { return nvml.ERROR_NOT_SUPPORTED }
		},
	} {
		fake := busyFake(2)
		log, _ := quietLog()
		u := &updater{c: NewGPUCollector(fake, neverTimeout, clk.Now, log)}
		series(t, u)
		fail(fake)
		for range 2 {
			clk.Advance(15 * time.Second)
			got := series(t, u)
			for i := range 2 {
				if _, ok := got[sm("utilization_ratio", i)]; !ok {
					t.Errorf("%s not supported: GPU %d not read", name, i)
				}
				if _, ok := got[sm("sm_active_ratio", i)]; ok {
					t.Errorf("%s not supported: GPU %d reports SM activity", name, i)
				}
			}
		}
		if n := fake.LiveGPMSamples(); n != 0 {
			t.Errorf("%s not supported: %d GPM samples live, want 0", name, n)
		}
	}
}

// TestGPUDriverWithoutGPM: a driver whose NVML library lacks GPM's functions (R470, the
// long-term branch of many V100 and T4 fleets) reports its GPUs without SM activity, and no
// GPM function is ever called: go-nvml binds NVML's functions lazily, so calling one the
// library lacks is the dynamic linker's "undefined symbol", which ended the exporter (exit
// 127) at its first scrape.
func TestGPUDriverWithoutGPM(t *testing.T) {
	for _, tc := range []struct {
		name    string
		missing []string
	}{
		{"no GPM function (R470)", []string{"nvmlGpmQueryDeviceSupport", "nvmlGpmSampleAlloc", "nvmlGpmSampleGet", "nvmlGpmMetricsGet", "nvmlGpmSampleFree"}},
		{"GPM's metrics function only", []string{"nvmlGpmMetricsGet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			fake := busyFake(2)
			missing := map[string]bool{}
			for _, name := range tc.missing {
				missing[name] = true
			}
			fake.LookupSymbolFunc = func(name string) error {
				if missing[name] {
					return fmt.Errorf("undefined symbol: %s", name)
				}
				return nil
			}
			var called atomic.Bool // a call the real library would end the process on
			query, alloc := fake.GpmQueryDeviceSupportFunc, fake.GpmSampleAllocFunc
			fake.GpmQueryDeviceSupportFunc = func(d nvml.Device) (nvml.GpmSupport, nvml.Return) {
				called.Store(called.Load() || missing["nvmlGpmQueryDeviceSupport"])
				return query(d)
			}
			fake.GpmSampleAllocFunc = func() (nvml.GpmSample, nvml.Return) {
				called.Store(called.Load() || missing["nvmlGpmSampleAlloc"])
				return alloc()
			}
			metrics := fake.GpmMetricsGetFunc
			fake.GpmMetricsGetFunc = func(m *nvml.GpmMetricsGetType) nvml.Return {
				called.Store(called.Load() || missing["nvmlGpmMetricsGet"])
				return metrics(m)
			}
			log, _ := quietLog()
			clk := clock.NewManual(fixedClock())
			u := &updater{c: NewGPUCollector(fake, neverTimeout, clk.Now, log)}
			for range 2 {
				got := series(t, u)
				if u.err != nil {
					t.Fatalf("update: %v", u.err)
				}
				for i := range 2 {
					if _, ok := got[gpuSeries("rota_gpu_utilization_ratio", i)]; !ok {
						t.Errorf("GPU %d not read", i)
					}
					if _, ok := got[gpuSeries("rota_gpu_sm_active_ratio", i)]; ok {
						t.Errorf("GPU %d reports SM activity", i)
					}
				}
				clk.Advance(15 * time.Second)
			}
			if called.Load() {
				t.Error("a GPM function the library lacks was called")
			}
		})
	}
}

// TestGPUProcessesUnreadable: a GPU whose compute processes NVML will not list
// (ERROR_NOT_SUPPORTED) is a GPU not read: left out of the scrape with its error counted, as
// for any NVML error, never reported with its utilisation and no process series, which the
// rules would read as no process (idle at 1% with 40 GiB held by two processes).
func TestGPUProcessesUnreadable(t *testing.T) {
	defer goleak.VerifyNone(t)
	fake := busyFake(2)
	fake.GPUs[1].Set(gpufake.Reading{UtilizationPercent: 1, MemoryUsedBytes: 40 << 30, Processes: 2})
	fake.GPUs[1].Device.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		return nil, nvml.ERROR_NOT_SUPPORTED
	}
	log, hook := quietLog()
	u := &updater{c: NewGPUCollector(fake, neverTimeout, time.Now, log)}
	got := series(t, u)
	if u.err != nil {
		t.Fatalf("update: %v (one unreadable GPU must not fail the collector)", u.err)
	}
	for k := range got {
		if strings.Contains(k, `gpu="1"`) && !strings.HasPrefix(k, "rota_gpu_device_errors_total{") {
			t.Errorf("series of the GPU whose processes are unreadable still reported: %s", k)
		}
	}
	if v := got[errorSeries(1, "error")]; v != 1 {
		t.Errorf("errors = %v, want 1", v)
	}
	if _, ok := got[gpuSeries("rota_gpu_compute_processes", 0)]; !ok {
		t.Error("the other GPU was not read")
	}
	if n := countWarnings(hook.AllEntries()); n != 1 {
		t.Errorf("%d warnings, want 1", n)
	}
}

// TestGPMMinimumInterval: two scrapers a few milliseconds apart do not make GPM samples a few
// milliseconds apart (NVML asks for more than 100 ms; a metric over 20 ms is noise): a read
// under gpmMinInterval after the last sample takes none and reports the metrics last computed,
// and the next sample is taken once the interval has passed.
func TestGPMMinimumInterval(t *testing.T) {
	defer goleak.VerifyNone(t)
	fake := gpufake.New(1)
	gpu := fake.GPUs[0]
	var samples atomic.Int32
	take := fake.GpmSampleGetFunc
	fake.GpmSampleGetFunc = func(d nvml.Device, s nvml.GpmSample) nvml.Return {
		samples.Add(1)
		return take(d, s)
	}
	log, _ := quietLog()
	clk := clock.NewManual(fixedClock())
	u := &updater{c: NewGPUCollector(fake, neverTimeout, clk.Now, log)}
	active := gpuSeries("rota_gpu_sm_active_ratio", 0)
	steps := []struct {
		name    string
		advance time.Duration
		set     float64 // the GPU's SM activity from now on
		want    float64 // -1: no series
		samples int32   // GPM samples taken so far
	}{
		{"scraper A: first sample", 0, 50, -1, 1},
		{"scraper B 20 ms later: no sample, nothing computed yet", 20 * time.Millisecond, 50, -1, 1},
		{"scraper A 15 s on: second sample", 15 * time.Second, 50, 0.5, 2},
		{"scraper B 20 ms later: A's metrics, no sample", 20 * time.Millisecond, 90, 0.5, 2},
		{"999 ms after the last sample: still none", 979 * time.Millisecond, 90, 0.5, 2},
		{"a second after the last sample: a new one", time.Millisecond, 90, 0.9, 3},
	}
	for _, st := range steps {
		clk.Advance(st.advance)
		gpu.Set(gpufake.Reading{SMActivePercent: st.set})
		got := series(t, u)
		if u.err != nil {
			t.Fatalf("%s: update: %v", st.name, u.err)
		}
		v, ok := got[active]
		switch {
		case st.want < 0 && ok:
			t.Errorf("%s: SM activity %v, want none", st.name, v)
		case st.want >= 0 && (!ok || v != st.want):
			t.Errorf("%s: SM activity %v (present %v), want %v", st.name, v, ok, st.want)
		}
		if _, ok := got[gpuSeries("rota_gpu_utilization_ratio", 0)]; !ok {
			t.Errorf("%s: the GPU was not read", st.name)
		}
		if n := samples.Load(); n != st.samples {
			t.Errorf("%s: %d GPM samples taken, want %d", st.name, n, st.samples)
		}
	}
	if n := fake.LiveGPMSamples(); n != 1 {
		t.Errorf("%d GPM samples live, want 1", n)
	}
}

// TestGPUStuckReadNotReportedLater: a read stuck past one scrape's timeout that finishes during
// the next scrape took its readings before the first scrape ended; the next scrape reports a
// fresh read instead (here: the GPU became busy in between, and must not read idle).
func TestGPUStuckReadNotReportedLater(t *testing.T) {
	defer goleak.VerifyNone(t)
	fake := gpufake.New(1)
	fake.GPUs[0].WithoutGPM()
	dev := fake.GPUs[0].Device
	release := make(chan struct{})
	var calls atomic.Int32
	answer := dev.GetPowerUsageFunc
	dev.GetPowerUsageFunc = func() (uint32, nvml.Return) {
		if calls.Add(1) == 1 {
			<-release // after utilisation and processes were read: idle
		}
		return answer()
	}
	log, _ := quietLog()
	u := &updater{c: NewGPUCollector(fake, 300*time.Millisecond, time.Now, log)}
	util, procs := gpuSeries("rota_gpu_utilization_ratio", 0), gpuSeries("rota_gpu_compute_processes", 0)
	if got := series(t, u); got[errorSeries(0, "timeout")] != 1 {
		t.Fatalf("first scrape: timeouts = %v, want 1", got[errorSeries(0, "timeout")])
	}
	fake.GPUs[0].Set(gpufake.Reading{UtilizationPercent: 95, Processes: 3})
	time.AfterFunc(50*time.Millisecond, func() { close(release) }) // during the second scrape
	got := series(t, u)
	if v, ok := got[util]; !ok || v != 0.95 || got[procs] != 3 {
		t.Errorf("second scrape: utilisation %v (present %v), %v processes; want the fresh 0.95 and 3, not the stuck read's 0 and 0",
			v, ok, got[procs])
	}
	if v := got[errorSeries(0, "timeout")]; v != 1 {
		t.Errorf("timeouts = %v, want 1", v)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("power read %d times, want 2 (the stuck read, then one fresh)", n)
	}
}

// TestGPUGarbledStrings: a name, UUID, PCI bus id or driver version that is not UTF-8 (stray
// bytes from a failing GPU or driver) is reported with U+FFFD in their place, and the GPU is read;
// Prometheus panics on such a label value, and in the exporter, where collectors run in
// goroutines of their own, that panic ended the process.
func TestGPUGarbledStrings(t *testing.T) {
	defer goleak.VerifyNone(t)
	fake := busyFake(2)
	dev := fake.GPUs[1].Device
	fake.SystemGetDriverVersionFunc = func() (string, nvml.Return) { return "550.\xff", nvml.SUCCESS }
	dev.GetNameFunc = func() (string, nvml.Return) { return "NVIDIA \xfe", nvml.SUCCESS }
	dev.GetUUIDFunc = func() (string, nvml.Return) { return "GPU-\xc3", nvml.SUCCESS }
	dev.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		var p nvml.PciInfo
		p.BusId[0], p.BusId[1] = '0', -1
		return p, nvml.SUCCESS
	}
	log, _ := quietLog()
	u := &updater{c: NewGPUCollector(fake, neverTimeout, time.Now, log)}
	got := series(t, u)
	if u.err != nil {
		t.Fatalf("update: %v", u.err)
	}
	for _, k := range []string{
		"rota_gpu_info{driver_version=\"550.\uFFFD\",gpu=\"1\",name=\"NVIDIA \uFFFD\",pci_bus_id=\"0\uFFFD\",uuid=\"GPU-\uFFFD\"}",
		"rota_gpu_compute_processes{gpu=\"1\",uuid=\"GPU-\uFFFD\"}",
		"rota_gpu_device_errors_total{gpu=\"1\",reason=\"error\",uuid=\"GPU-\uFFFD\"}",
		gpuSeries("rota_gpu_utilization_ratio", 0),
	} {
		if _, ok := got[k]; !ok {
			t.Errorf("%s missing; series %v", k, got)
		}
	}
}
