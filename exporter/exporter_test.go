package exporter

import (
	"errors"
	"io/fs"
	"slices"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"go.uber.org/goleak"
)

func testConfig(nv nvml.Interface, enabled ...string) Config {
	log, _ := quietLog()
	on := map[string]bool{}
	for _, n := range enabled {
		on[n] = true
	}
	return Config{Enabled: on, ProcFS: "testdata/proc", NVML: nv, GPUTimeout: neverTimeout, Now: fixedClock, Log: log}
}

// TestGolden checks whole expositions, meta-metrics included, against testdata/*.golden.
func TestGolden(t *testing.T) {
	defer goleak.VerifyNone(t)
	lost := busyFake(4)
	lost.GPUs[2].Device.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		return nvml.Utilization{}, nvml.ERROR_GPU_IS_LOST
	}
	missing := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
	cases := []struct {
		name string
		cfg  Config
	}{
		{name: "node", cfg: testConfig(nil, CollectorCPU, CollectorMemory)},
		{name: "node-per-cpu", cfg: func() Config {
			c := testConfig(nil, CollectorCPU)
			c.PerCPU = true
			return c
		}()},
		{name: "gpu-0", cfg: testConfig(busyFake(0), CollectorGPU)},
		{name: "gpu-1", cfg: testConfig(busyFake(1), CollectorGPU)},
		{name: "all-gpu-8", cfg: testConfig(busyFake(8), CollectorCPU, CollectorMemory, CollectorGPU)},
		{name: "gpu-library-missing", cfg: testConfig(missing, CollectorCPU, CollectorMemory, CollectorGPU)},
		{name: "gpu-device-lost", cfg: testConfig(lost, CollectorGPU)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name, gather(t, e))
		})
	}
}

func TestNewRejects(t *testing.T) {
	cases := []struct {
		name    string
		cfg     Config
		wantErr error
	}{
		{name: "unknown collector", cfg: testConfig(nil, "bogus"), wantErr: ErrUnknownCollector},
		{name: "procfs missing", cfg: func() Config {
			c := testConfig(nil, CollectorCPU)
			c.ProcFS = "testdata/does-not-exist"
			return c
		}(), wantErr: fs.ErrNotExist},
		{name: "procfs without meminfo", cfg: func() Config {
			c := testConfig(nil, CollectorMemory)
			c.ProcFS = "testdata"
			return c
		}(), wantErr: fs.ErrNotExist},
		{name: "gpu without a library", cfg: testConfig(nil, CollectorGPU), wantErr: ErrNoNVML},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.cfg); !errors.Is(err, tc.wantErr) {
				t.Errorf("New: %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// TestFilter: collect[] keeps the collectors named, exclude[] the others, each sharing the
// collectors built once; a collector that does not run, or both lists, is refused.
func TestFilter(t *testing.T) {
	e, err := New(testConfig(nil, CollectorCPU, CollectorMemory))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name             string
		collect, exclude []string
		want             []string
	}{
		{name: "collect one", collect: []string{CollectorMemory}, want: []string{CollectorMemory}},
		{name: "collect both, one twice", collect: []string{CollectorCPU, CollectorMemory, CollectorCPU}, want: []string{CollectorCPU, CollectorMemory}},
		{name: "exclude one", exclude: []string{CollectorCPU}, want: []string{CollectorMemory}},
		{name: "exclude all", exclude: []string{CollectorCPU, CollectorMemory}, want: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := e.Filter(tc.collect, tc.exclude)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Names(); !slices.Equal(got, tc.want) {
				t.Errorf("runs %v, want %v", got, tc.want)
			}
			got := series(t, f)
			for _, n := range []string{CollectorCPU, CollectorMemory} {
				_, has := got[`rota_exporter_collector_success{collector="`+n+`"}`]
				if has != slices.Contains(tc.want, n) {
					t.Errorf("success series of %s present: %v, want %v", n, has, !has)
				}
			}
		})
	}
	for _, tc := range []struct {
		name             string
		collect, exclude []string
	}{
		{name: "not enabled", collect: []string{CollectorGPU}},
		{name: "unknown", exclude: []string{"bogus"}},
		{name: "both lists", collect: []string{CollectorCPU}, exclude: []string{CollectorMemory}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := e.Filter(tc.collect, tc.exclude); !errors.Is(err, ErrFilter) {
				t.Errorf("Filter(%v, %v): %v, want ErrFilter", tc.collect, tc.exclude, err)
			}
		})
	}
}
