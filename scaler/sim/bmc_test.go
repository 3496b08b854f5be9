package sim

import (
	"testing"

	"github.com/rotahq/rota/scaler/fleet"
)

// The daemon's executor has at most config.BMCLimits.Shutdowns power-offs under way in the BMC
// layer, so the replay of rota starts at most that many shutdowns at once; the rest wait,
// PoweringOff, in order (the baselines keep no cap: w.bmc 0).
func TestShutdownsWaitForABMCSlot(t *testing.T) {
	w := newWorld(tinyEnv(t, tinyConfig(t, ""), "5", job(2, 0, 60, 8)))
	w.bmc = 2
	for s := range int32(5) {
		if !w.powerOff(s) {
			t.Fatalf("server %d not powered off", s)
		}
	}
	states := func() (off, shutting int) {
		for s := range w.srv {
			if w.srv[s].state == fleet.StateOff {
				off++
			}
		}
		return off, w.shutting
	}
	for i, want := range []int{0, 2, 4, 5} {
		w.advance(w.env.T0 + int64(i)*60)
		w.handle()
		if off, shutting := states(); off != want || shutting != min(2, 5-want) {
			t.Errorf("after %d shutdown times: %d off, %d shutting down; want %d and %d", i, off, shutting, want, min(2, 5-want))
		}
	}
}
