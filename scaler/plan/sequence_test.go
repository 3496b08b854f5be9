package plan

import (
	"math/rand/v2"
	"testing"
	"time"
)

// runSequence plays minutes evaluation intervals of one minute: the fleet moves, the demand
// becomes wave(minute), the planner decides, every invariant is checked, the actions apply.
// It returns the simulator and the number of actions taken.
func runSequence(t *testing.T, s *sim, minutes int, wave func(minute int) int) int {
	t.Helper()
	acted := 0
	for m := range minutes {
		s.now = t0.Add(time.Duration(m) * time.Minute)
		s.advance()
		s.setDemand(wave(m))
		s.schedule()
		snap := s.snapshot()
		d := Plan(snap, s.cfg, s.now)
		checkInvariants(t, snap, s.cfg, s.now, d)
		s.apply(d)
		acted += len(d.Actions)
	}
	return acted
}

// checkBounds checks the power actions of a sequence against what the policy allows.
//
// A server powers off only min_on after it came up and powers on only min_off after it went
// off, so in T minutes it powers off at most 1 + T/(min_on+min_off) times (and never more than
// the cycle cap), and powers on at most once more than that; across the fleet no disruption
// window holds more than max_power_offs power-offs.
func checkBounds(t *testing.T, s *sim, minutes int) (ons, offs int) {
	t.Helper()
	pol := s.cfg.Policy
	offBound := 1 + minutes*int(time.Minute)/int(time.Duration(pol.Node.MinOn)+time.Duration(pol.Node.MinOff))
	offBound = min(offBound, pol.Node.MaxCyclesPerDay)
	for i := range s.nodes {
		if s.offs[i] > offBound || s.ons[i] > offBound+1 {
			t.Errorf("%s: %d power-ons, %d power-offs in %d minutes; bound %d and %d", s.nodes[i].Name, s.ons[i], s.offs[i], minutes, offBound+1, offBound)
		}
		ons += s.ons[i]
		offs += s.offs[i]
	}
	window := time.Duration(pol.Disruption.Window)
	for _, a := range s.history.PowerOffs {
		inWindow := 0
		for _, b := range s.history.PowerOffs {
			if !b.Before(a) && b.Sub(a) < window {
				inWindow++
			}
		}
		if budget := pol.Disruption.PowerOffs(len(s.nodes)); inWindow > budget {
			t.Errorf("%d power-offs within %s from %s, budget %d", inWindow, window, a.Format(time.TimeOnly), budget)
		}
	}
	return ons, offs
}

// TestSequenceOscillatingDemand feeds the planner's decisions back through the simulator for an
// hour of demand that comes and goes every three minutes, and bounds the power actions (see
// checkBounds; with the defaults, 2 power-offs and 3 power-ons per server in the hour).
func TestSequenceOscillatingDemand(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	cases := []struct {
		name   string
		window time.Duration // idle window: short makes servers idle between bursts
		wave   func(minute int) int
	}{
		{"steady bursts, long idle window", 10 * time.Minute, func(m int) int { return 20 * (1 - m/3%2) }},
		{"steady bursts, short idle window", 2 * time.Minute, func(m int) int { return 20 * (1 - m/3%2) }},
		{"random bursts, short idle window", 2 * time.Minute, func(m int) int { return r.IntN(40) * (1 - m/3%2) }},
	}
	const minutes = 60
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := newConfig(t, "", 10, 1)
			cfg.Pools[0].Min = 1
			cfg.Policy.Idle.Window = modelDuration(c.window)
			s := newSim(cfg, 3, 7)
			acted := runSequence(t, s, minutes, c.wave)
			ons, offs := checkBounds(t, s, minutes)
			if acted == 0 {
				t.Error("the planner never acted: the sequence tested nothing")
			}
			t.Logf("%d actions; %d power-ons, %d power-offs over %d minutes", acted, ons, offs, minutes)
		})
	}
}

// TestPropertySequences: random policies and random demand (seeded), an hour each; every pass
// keeps every invariant and the power actions stay within the bounds of checkBounds.
func TestPropertySequences(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	total := 0
	for seed := range 30 {
		cfg := newConfig(t, "", 10, 1)
		pol := &cfg.Policy
		pol.Idle.Window = modelDuration(time.Duration(1+r.IntN(10)) * time.Minute)
		pol.Node.MinOn = modelDuration(time.Duration(5+r.IntN(26)) * time.Minute)
		pol.Node.MinOff = modelDuration(time.Duration(2+r.IntN(9)) * time.Minute)
		pol.Node.MaxCyclesPerDay = 1 + r.IntN(6)
		pol.Cooldown.ScaleUp = modelDuration(time.Duration(r.IntN(5)) * time.Minute)
		pol.Cooldown.ScaleDown = modelDuration(time.Duration(r.IntN(5)) * time.Minute)
		pol.Disruption.MaxPowerOffs = 1 + r.IntN(5)
		pol.Disruption.MaxConcurrent = 1 + r.IntN(8)
		pol.Backlog.QueuedJobs = r.IntN(4)
		pol.Spares.Factor = float64(r.IntN(4))
		pol.Spares.MaxShare = float64(r.IntN(6)) / 5
		cfg.Pools[0].Min = r.IntN(3)
		period := 1 + r.IntN(5)
		on := r.IntN(6)
		s := newSim(cfg, on, 10-on)
		total += runSequence(t, s, 60, func(m int) int { return r.IntN(41) * (1 - m/period%2) })
		checkBounds(t, s, 60)
		if t.Failed() {
			t.Fatalf("seed %d failed", seed)
		}
	}
	if total == 0 {
		t.Error("no action in any sequence: nothing was tested")
	}
}
