package exporter

import (
	"errors"
	"io/fs"
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
