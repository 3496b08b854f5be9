package exporter

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

func TestNodeCollectors(t *testing.T) {
	cases := []struct {
		name    string
		c       func(t *testing.T) Collector
		want    map[string]float64
		wantErr error
	}{
		{
			name: "cpu summed over cpus",
			c:    func(t *testing.T) Collector { return NewCPUCollector(fixtureDir("proc"), false, fixedClock) },
			want: map[string]float64{
				`rota_node_cpu_seconds_total{mode="user"}`:   3012.70,
				`rota_node_cpu_seconds_total{mode="idle"}`:   88456.00,
				`rota_node_cpu_seconds_total{mode="iowait"}`: 123.30,
				`rota_node_cpu_seconds_total{mode="steal"}`:  1.50,
				`rota_node_cpus{}`:                           4,
			},
		},
		{
			name: "cpu per cpu",
			c:    func(t *testing.T) Collector { return NewCPUCollector(fixtureDir("proc"), true, fixedClock) },
			want: map[string]float64{
				`rota_node_logical_cpu_seconds_total{cpu="0",mode="softirq"}`: 19.00,
				`rota_node_logical_cpu_seconds_total{cpu="3",mode="user"}`:    753.70,
				`rota_node_cpu_seconds_total{mode="system"}`:                  983.40,
			},
		},
		{
			name: "memory",
			c:    func(t *testing.T) Collector { return NewMemoryCollector(fixtureFS(t, "proc")) },
			want: map[string]float64{
				`rota_node_memory_total_bytes{}`:     16316412 * 1024,
				`rota_node_memory_available_bytes{}`: 11721396 * 1024,
			},
		},
		{
			name:    "memory without MemAvailable (kernel before 3.14)",
			c:       func(t *testing.T) Collector { return NewMemoryCollector(fixtureFS(t, "proc-no-memavailable")) },
			wantErr: ErrMissingField,
		},
		{
			name:    "cpu with no stat file",
			c:       func(t *testing.T) Collector { return NewCPUCollector(fixtureDir("."), false, fixedClock) },
			wantErr: fs.ErrNotExist,
		},
		{
			name:    "memory with no meminfo file",
			c:       func(t *testing.T) Collector { return NewMemoryCollector(fixtureFS(t, ".")) },
			wantErr: fs.ErrNotExist,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := &updater{c: tc.c(t)}
			got := series(t, u)
			if !errors.Is(u.err, tc.wantErr) {
				t.Fatalf("error = %v, want %v", u.err, tc.wantErr)
			}
			for k, v := range tc.want {
				g, ok := got[k]
				if !ok {
					t.Errorf("%s missing; got %v", k, got)
					continue
				}
				if diff := g - v; diff > 1e-6 || diff < -1e-6 {
					t.Errorf("%s = %v, want %v", k, g, v)
				}
			}
		})
	}
}

// TestCPUModesSumToTotal: summing every mode gives all CPU time, so utilisation computed as
// 1 - (idle+iowait)/sum is a ratio in [0,1]; guest time must not be counted twice.
func TestCPUModesSumToTotal(t *testing.T) {
	got := series(t, &updater{c: NewCPUCollector(fixtureDir("proc"), false, fixedClock)})
	var sum float64
	modes := 0
	for k, v := range got {
		if strings.HasPrefix(k, "rota_node_cpu_seconds_total{") {
			sum += v
			modes++
		}
	}
	// The fixture's first line: 301270 1425 98340 8845600 12330 0 3260 150 (guest 0 0), in 1/100 s.
	want := float64(301270+1425+98340+8845600+12330+0+3260+150) / 100
	if modes != 8 || sum-want > 1e-6 || want-sum > 1e-6 {
		t.Errorf("%d modes summing to %v, want 8 modes summing to %v", modes, sum, want)
	}
}
