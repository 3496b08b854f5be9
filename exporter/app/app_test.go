package app

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
)

// TestTuneRuntimeRestores: tuneRuntime sets GOMAXPROCS and, without GOGC in the environment,
// the GC target, and its restore function puts both back.
func TestTuneRuntimeRestores(t *testing.T) {
	t.Setenv("GOGC", "")
	if err := os.Unsetenv("GOGC"); err != nil { // t.Setenv restores the original at cleanup
		t.Fatal(err)
	}
	gcPercent := func() int {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p
	}
	procs, gogc := runtime.GOMAXPROCS(0), gcPercent()
	want := procs + 1
	restore := tuneRuntime(want)
	if got := runtime.GOMAXPROCS(0); got != want {
		t.Errorf("GOMAXPROCS %d, want %d", got, want)
	}
	if got := gcPercent(); got != defaultGOGC {
		t.Errorf("GC percent %d, want %d", got, defaultGOGC)
	}
	restore()
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS after restore %d, want %d", got, procs)
	}
	if got := gcPercent(); got != gogc {
		t.Errorf("GC percent after restore %d, want %d", got, gogc)
	}

	// 0 leaves GOMAXPROCS alone; a GOGC in the environment leaves the GC target alone.
	t.Setenv("GOGC", "70")
	restore = tuneRuntime(0)
	if got, gc := runtime.GOMAXPROCS(0), gcPercent(); got != procs || gc != gogc {
		t.Errorf("GOMAXPROCS %d and GC percent %d, want them untouched (%d, %d)", got, gc, procs, gogc)
	}
	restore()
}
