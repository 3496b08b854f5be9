package plan

import (
	"fmt"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

func recentOffs(n int) fleet.History {
	h := fleet.History{}
	for i := range n {
		h.PowerOffs = append(h.PowerOffs, t0.Add(-time.Duration(i+1)*time.Minute))
	}
	return h
}

// TestCaps covers every cap on scale-down and on scale-up, each named in its skip.
func TestCaps(t *testing.T) { runCases(t, capsCases()) }

func capsCases() []planCase {
	return []planCase{
		{name: "floor keeps the last servers on", cfg: func(c *config.Config) { c.Pools[0].Min = 2 },
			snap: snapshot(onNode("c1", "cpu"), onNode("c2", "cpu"), onNode("c3", "cpu")),
			want: map[string]string{"c1": "power_off/idle", "c2": "skip/floor", "c3": "skip/floor"}, desired: map[string]int{"cpu": 2, "gpu": 0}},
		{name: "scheduled floor: share of servers rounded up", policy: "  schedules: [{name: day, start: '08:00', end: '18:00', pools: [cpu], min_on_share: 0.5}]",
			snap: snapshot(onNode("c1", "cpu"), onNode("c2", "cpu"), offNode("c3", "cpu")),
			want: map[string]string{"c1": "skip/floor", "c2": "skip/floor", "c3": "skip/not_needed"}},
		{name: "scheduled floor raises the pool", policy: "  schedules: [{name: day, start: '08:00', end: '18:00', min_on_share: 0.3}]",
			snap: snapshot(offNode("c1", "cpu"), offNode("c2", "cpu"), offNode("c3", "cpu"), offNode("c4", "cpu")),
			want: map[string]string{"c1": "power_on/floor", "c2": "power_on/floor", "c3": "skip/not_needed"}},
		{name: "schedule not active", policy: "  schedules: [{name: night, start: '22:00', end: '06:00', min_on_share: 1}]",
			snap: snapshot(onNode("c1", "cpu")), want: map[string]string{"c1": "power_off/idle"}},
		{name: "ceiling stops waking", cfg: func(c *config.Config) { m := 1; c.Pools[0].Max = &m },
			snap: withDemand(snapshot(with(onNode("c1", "cpu"), busy), offNode("c2", "cpu")), jobs(5, 32, 0)),
			want: map[string]string{"c2": "skip/ceiling"}},
		{name: "scale-down cooldown", snap: withHistory(snapshot(onNode("c1", "cpu")), fleet.History{LastScaleDown: map[string]time.Time{"cpu": t0.Add(-time.Minute)}}),
			want: map[string]string{"c1": "skip/cooldown"}},
		{name: "scale-up cooldown blocks scale-down", snap: withHistory(snapshot(onNode("c1", "cpu")), fleet.History{LastScaleUp: map[string]time.Time{"cpu": t0.Add(-time.Minute)}}),
			want: map[string]string{"c1": "skip/cooldown"}},
		{name: "cooldown over", snap: withHistory(snapshot(onNode("c1", "cpu")), fleet.History{LastScaleDown: map[string]time.Time{"cpu": t0.Add(-6 * time.Minute)}}),
			want: map[string]string{"c1": "power_off/idle"}},
		{name: "min on", snap: snapshot(with(onNode("c1", "cpu"), func(n *fleet.Node) { n.LastOn = t0.Add(-29 * time.Minute) })),
			want: map[string]string{"c1": "skip/min_on"}},
		{name: "min off holds even for a floor", cfg: func(c *config.Config) { c.Pools[0].Min = 1 },
			snap: snapshot(with(offNode("c1", "cpu"), func(n *fleet.Node) { n.LastOff = t0.Add(-9 * time.Minute) })),
			want: map[string]string{"c1": "skip/min_off"}},
		// Repair stamps a server it finds on or off with its own clock, a little after the
		// pass's now: with the dwell times at 0s (their default) that holds nothing (status
		// said "min_off: off since ..." of every server found off at rota's start).
		{name: "min off 0s: a server found off this pass is woken", cfg: func(c *config.Config) { c.Pools[0].Min, c.Policy.Node.MinOff = 1, 0 },
			snap: snapshot(with(offNode("c1", "cpu"), func(n *fleet.Node) { n.LastOff = t0.Add(time.Millisecond) })),
			want: map[string]string{"c1": "power_on/floor"}},
		{name: "min on 0s: a server found on this pass may go", cfg: func(c *config.Config) { c.Policy.Node.MinOn = 0 },
			snap: snapshot(with(onNode("c1", "cpu"), func(n *fleet.Node) { n.LastOn = t0.Add(time.Millisecond) })),
			want: map[string]string{"c1": "power_off/idle"}},
		{name: "cycle cap", snap: snapshot(with(onNode("c1", "cpu"), func(n *fleet.Node) { n.CyclesToday = 6 })),
			want: map[string]string{"c1": "skip/cycle_cap"}},
		{name: "budget spent by recent power-offs", snap: withHistory(snapshot(onNode("c1", "cpu"), drainingNode("c2", "cpu")), recentOffs(4)),
			want: map[string]string{"c1": "skip/budget", "c2": "skip/budget"}},
		{name: "budget: old power-offs fall out of the window", snap: withHistory(snapshot(onNode("c1", "cpu")),
			fleet.History{PowerOffs: []time.Time{t0.Add(-11 * time.Minute), t0.Add(-12 * time.Minute), t0.Add(-13 * time.Minute), t0.Add(-14 * time.Minute)}}),
			want: map[string]string{"c1": "power_off/idle"}},
		{name: "budget: draining servers hold their share", snap: withHistory(snapshot(onNode("c1", "cpu"), onNode("c2", "cpu"), drainingNode("c3", "cpu")), recentOffs(2)),
			want: map[string]string{"c3": "power_off/drained", "c1": "power_off/idle", "c2": "skip/budget"}},
		{name: "concurrency", cfg: func(c *config.Config) { c.Policy.Disruption.MaxConcurrent = 2 },
			snap: snapshot(onNode("c1", "cpu"), onNode("c2", "cpu"), booting(offNode("c3", "cpu"))),
			want: map[string]string{"c1": "power_off/idle", "c2": "skip/concurrency", "c3": "skip/in_flight"}},
		{name: "a power-off needs no new concurrency slot", cfg: func(c *config.Config) { c.Policy.Disruption.MaxConcurrent = 1 },
			snap: snapshot(drainingNode("c1", "cpu"), onNode("c2", "cpu")),
			want: map[string]string{"c1": "power_off/drained", "c2": "skip/concurrency"}},
		{name: "backoff", cfg: func(c *config.Config) { c.Pools[0].Min = 1 },
			snap: snapshot(with(offNode("c1", "cpu"), func(n *fleet.Node) { n.State, n.RetryAfter = fleet.StateFailed, t0.Add(time.Minute) })),
			want: map[string]string{"c1": "skip/backoff"}},
		{name: "backoff: no drain of a server back On before its retry time",
			snap: snapshot(with(onNode("c1", "cpu"), func(n *fleet.Node) { n.Failures, n.RetryAfter = 2, t0.Add(time.Minute) }), onNode("c2", "cpu")),
			want: map[string]string{"c1": "skip/backoff", "c2": "power_off/idle"}},
		{name: "backoff over: drained again",
			snap: snapshot(with(onNode("c1", "cpu"), func(n *fleet.Node) { n.Failures, n.RetryAfter = 2, t0 })),
			want: map[string]string{"c1": "power_off/idle"}},
		{name: "idle server stays when waiting work is placed on it, and only that one",
			snap: withDemand(snapshot(onNode("c1", "cpu"), drainingNode("c2", "gpu"), with(onNode("c3", "gpu"), busy), onNode("c4", "cpu")), jobs(1, 64, 0), jobs(1, 4, 0)),
			want: map[string]string{"c1": "skip/demand_waits", "c4": "power_off/idle", "c2": "resume/demand_return"}},
		{name: "work for another pool does not stop a scale-down", snap: withDemand(snapshot(onNode("c1", "cpu"), with(onNode("g1", "gpu"), busy)), jobs(1, 4, 1)),
			want: map[string]string{"c1": "power_off/idle"}},
		{name: "most expensive idle server drained first", cfg: func(c *config.Config) { c.Policy.Disruption.MaxPowerOffs = 1 },
			snap: snapshot(onNode("c1", "cpu"), onNode("g1", "gpu")),
			want: map[string]string{"g1": "power_off/idle", "c1": "skip/budget"}},
		{name: "servers paid for anyway go last", cfg: func(c *config.Config) {
			c.Policy.Disruption.MaxPowerOffs = 1
			no := false
			c.Pools[1].Cost.SavesWhenOff = &no
		}, snap: snapshot(onNode("c1", "cpu"), onNode("g1", "gpu")),
			want: map[string]string{"c1": "power_off/idle", "g1": "skip/budget"}},
		{name: "fewest cycles today drained first within a pool", cfg: func(c *config.Config) { c.Policy.Disruption.MaxPowerOffs = 1 },
			snap: snapshot(with(onNode("c1", "cpu"), func(n *fleet.Node) { n.CyclesToday = 2 }), onNode("c2", "cpu")),
			want: map[string]string{"c2": "power_off/idle", "c1": "skip/budget"}},
	}
}

// TestBudgetScalesWithTheFleet: the power-off budget is max_power_offs, or
// max_power_offs_share of the fleet where that is more; max_power_offs 0 stops power-offs.
func TestBudgetScalesWithTheFleet(t *testing.T) {
	var nodes []fleet.Node
	for i := range 100 {
		nodes = append(nodes, onNode(fmt.Sprintf("c%d", i+1), "cpu"))
	}
	for _, c := range []struct {
		count int
		share float64
		want  int
	}{{4, 0.1, 10}, {4, 0, 4}, {40, 0.1, 40}, {0, 0.1, 0}} {
		cfg := newConfig(t, "", 100, 0)
		cfg.Policy.Disruption.MaxPowerOffs, cfg.Policy.Disruption.MaxPowerOffsShare = c.count, c.share
		cfg.Policy.Disruption.MaxConcurrent = 100
		snap := snapshot(nodes...)
		d := Plan(snap, cfg, t0)
		checkInvariants(t, snap, cfg, t0, d)
		offs := 0
		for _, a := range d.Actions {
			if a.Kind == fleet.PowerOff {
				offs++
			}
		}
		if offs != c.want {
			t.Errorf("max_power_offs %d, share %v, 100 idle servers: %d power-offs, want %d", c.count, c.share, offs, c.want)
		}
	}
}

// TestCapInFlightScalesWithTheFleet: the cap on actions in flight is max_concurrent, or
// max_concurrent_share of the fleet where that is more. It was max_concurrent alone: 40 power-offs
// in flight, a minute each, held a 40,960-server fleet's idle servers on for hours.
func TestCapInFlightScalesWithTheFleet(t *testing.T) {
	var nodes []fleet.Node
	for i := range 2000 {
		nodes = append(nodes, onNode(fmt.Sprintf("c%d", i+1), "cpu"))
	}
	for _, c := range []struct {
		share float64
		want  int
	}{{0.1, 200}, {0, 40}, {0.01, 40}, {0.05, 100}} {
		cfg := newConfig(t, "", 2000, 0)
		cfg.Policy.Disruption.MaxPowerOffs, cfg.Policy.Disruption.MaxPowerOffsShare = 1000, 0
		cfg.Policy.Disruption.MaxConcurrent, cfg.Policy.Disruption.MaxConcurrentShare = 40, c.share
		snap := snapshot(nodes...)
		d := Plan(snap, cfg, t0)
		checkInvariants(t, snap, cfg, t0, d)
		offs, capped := 0, 0
		for _, a := range d.Actions {
			if a.Kind == fleet.PowerOff {
				offs++
			}
		}
		for _, s := range d.Skips {
			if s.Reason == fleet.SkipConcurrency {
				capped++
			}
		}
		if offs != c.want || capped != 2000-c.want {
			t.Errorf("max_concurrent 40, share %v, 2,000 idle servers: %d power-offs, %d skipped at the cap; want %d and %d", c.share, offs, capped, c.want, 2000-c.want)
		}
	}
}
