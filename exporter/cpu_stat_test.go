package exporter

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/clock"
)

func TestParseCPUStat(t *testing.T) {
	cases := []struct {
		name    string
		stat    string
		total   cpuValues
		cpus    map[int64]cpuValues
		wantErr bool
	}{
		{
			name:  "kernel 2.6.33 and later: ten columns, guest left out",
			stat:  "cpu  200 2 40 1000 6 1 3 5 70 1\ncpu0 100 1 20 500 3 1 2 4 70 1\ncpu1 100 1 20 500 3 0 1 1 0 0\nintr 5 1 2\n",
			total: cpuValues{2, 0.02, 0.4, 10, 0.06, 0.01, 0.03, 0.05},
			cpus:  map[int64]cpuValues{0: {1, 0.01, 0.2, 5, 0.03, 0.01, 0.02, 0.04}, 1: {1, 0.01, 0.2, 5, 0.03, 0, 0.01, 0.01}},
		},
		{
			name:  "kernel 2.4: four columns, the rest 0",
			stat:  "cpu 100 0 50 900\ncpu0 100 0 50 900\n",
			total: cpuValues{1, 0, 0.5, 9},
			cpus:  map[int64]cpuValues{0: {1, 0, 0.5, 9}},
		},
		{
			name: "a later kernel's extra column is not read",
			stat: "cpu0 100 0 50 900 1 2 3 4 5 6 7\n",
			cpus: map[int64]cpuValues{0: {1, 0, 0.5, 9, 0.01, 0.02, 0.03, 0.04}},
		},
		{
			name: "largest tick count the kernel can write",
			stat: "cpu0 18446744073709551615 0 0 1\n",
			cpus: map[int64]cpuValues{0: {18446744073709551615.0 / userHZ, 0, 0, 0.01}},
		},
		{name: "line cut before idle", stat: "cpu0 100 0 50\n", wantErr: true},
		{name: "NaN", stat: "cpu0 NaN 0 50 900\n", wantErr: true},
		{name: "Inf", stat: "cpu0 100 0 50 Inf\n", wantErr: true},
		{name: "negative", stat: "cpu0 100 0 -50 900\n", wantErr: true},
		{name: "fraction", stat: "cpu0 100.5 0 50 900\n", wantErr: true},
		{name: "over 2^64 ticks", stat: "cpu0 18446744073709551616 0 50 900\n", wantErr: true},
		{name: "bad cpu id", stat: "cpux 1 0 50 900\n", wantErr: true},
		{name: "cpu given twice", stat: "cpu0 1 0 50 900\ncpu0 2 0 50 900\n", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			total, cpus, err := parseCPUStat([]byte(tc.stat))
			if tc.wantErr {
				if !errors.Is(err, errMalformed) {
					t.Fatalf("error = %v, want errMalformed", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !closeValues(total, tc.total) {
				t.Errorf("total = %v, want %v", total, tc.total)
			}
			if len(cpus) != len(tc.cpus) {
				t.Fatalf("cpus = %v, want %v", cpus, tc.cpus)
			}
			for id, want := range tc.cpus {
				if !closeValues(cpus[id], want) {
					t.Errorf("cpu%d = %v, want %v", id, cpus[id], want)
				}
			}
		})
	}
}

func closeValues(a, b cpuValues) bool {
	for m := range a {
		if math.Abs(a[m]-b[m]) > 1e-9*math.Max(1, math.Abs(b[m])) {
			return false
		}
	}
	return true
}

// TestCPUCutLineNeverAddsIdle: a cpu line cut before idle fails the read. Read as idle 0, it
// made the CPU look unplugged and plugged back, and the next full line added the CPU's whole
// idle counter (here 10000 s) to one interval: a busy server read idle.
func TestCPUCutLineNeverAddsIdle(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(fixedClock())
	write := func(cpu0 string) {
		t.Helper()
		clk.Advance(15 * time.Second)
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte("cpu  "+cpu0+"\ncpu0 "+cpu0+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("100000 0 0 1000000 0 0 0 0")
	u := &updater{c: NewCPUCollector(dir, false, clk.Now)}
	series(t, u)
	write("110000 0")
	series(t, u)
	if !errors.Is(u.err, errMalformed) {
		t.Fatalf("cut line: error = %v, want errMalformed", u.err)
	}
	write("120000 0 0 1000100 0 0 0 0")
	got := series(t, u)
	if u.err != nil {
		t.Fatal(u.err)
	}
	// 1000 s busy and 1 s idle since the first read: nothing more may be counted as idle.
	if idle := got[summed("idle")]; idle != 10001 {
		t.Errorf("idle = %v s, want 10001 (10000 at start, 1 since)", idle)
	}
	if user := got[summed("user")]; user != 1200 {
		t.Errorf("user = %v s, want 1200", user)
	}
}
