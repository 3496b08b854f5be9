package exporter

import (
	"math"
	"os"
	"path/filepath"
	"testing"

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
