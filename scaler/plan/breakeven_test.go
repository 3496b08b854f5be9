package plan

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/learn"
)

// learned is what rota would have learned of pool cpu by t0 from three days of a need that
// follows need(minute of the hour).
func learned(need func(minute int) int) map[string]learn.View {
	var s learn.Stats
	for t := t0.Add(-72 * time.Hour); !t.After(t0); t = t.Add(time.Minute) {
		s.Observe(t, map[string]int{"cpu": need(t.Minute())})
	}
	return map[string]learn.View{"cpu": s.View("cpu", t0, 24*time.Hour)}
}

// everyFive: one server's worth of work arrives every five minutes and leaves after one.
func everyFive(m int) int {
	if m%5 == 4 {
		return 1
	}
	return 0
}

// bursts: every five minutes three servers' worth arrives, one more a minute later, and all
// of it leaves two minutes after.
func bursts(m int) int {
	switch m % 5 {
	case 1:
		return 3
	case 2:
		return 4
	}
	return 0
}

// hourly: one server's worth arrives once an hour for a minute: seldom enough that an idle
// server is not worth keeping for it, often enough (one boot in six) to keep a spare at q0.9.
func hourly(m int) int {
	if m == 30 {
		return 1
	}
	return 0
}

func withLearned(s fleet.Snapshot, v map[string]learn.View) fleet.Snapshot { s.Learned = v; return s }

func idleFor(d time.Duration) func(*fleet.Node) {
	return func(n *fleet.Node) { n.IdleSince = t0.Add(-d) }
}

// withIdle gives pool cpu idle periods begun at every hour: 100 of the first empty server in
// placement order (30 ending within two minutes, 70 cut by a power-off after four hours) and
// 100 of the second (all cut), none of the third.
func withIdle(s fleet.Snapshot) fleet.Snapshot {
	var d learn.Idle
	for k := range 100 {
		start := t0.Add(-time.Duration(k) * time.Hour)
		if k < 30 {
			d.Observe(1, start, 90*time.Second, true)
		} else {
			d.Observe(1, start, 4*time.Hour, false)
		}
		d.Observe(2, start, 4*time.Hour, false)
	}
	s.Learned = map[string]learn.View{"cpu": {Idle: &d}}
	return s
}

func TestBreakEven(t *testing.T) { runCases(t, breakEvenCases()) }

func breakEvenCases() []planCase {
	// The test pools cost 1 an hour and boot in 10m (the default boot_timeout): a cycle
	// costs 10m+1m of energy and the default wear_time of 10m, 21 minutes of an idle hour.
	return []planCase{
		{name: "no history: on until idle for the break-even time (ski rental)",
			snap: snapshot(with(onNode("c1", "cpu"), idleFor(20*time.Minute)), with(onNode("c2", "cpu"), idleFor(22*time.Minute))),
			want: map[string]string{"c1": "skip/break_even", "c2": "power_off/idle"}},
		{name: "no history: the waiting price lengthens the break-even", cfg: func(c *config.Config) { c.Policy.BreakEven.WaitPerJobHour = 3 },
			// waiting: one job for a 10m boot at 3 an hour is 0.5, 30 more minutes of idle
			snap: snapshot(with(onNode("c1", "cpu"), idleFor(45*time.Minute)), with(onNode("c2", "cpu"), idleFor(52*time.Minute))),
			want: map[string]string{"c1": "skip/break_even", "c2": "power_off/idle"}},
		{name: "history: the server the next arrival will take stays on, the one above it goes",
			snap: withLearned(snapshot(onNode("c1", "cpu"), onNode("c2", "cpu")), learned(everyFive)),
			want: map[string]string{"c1": "power_off/idle", "c2": "skip/break_even"}},
		{name: "history: with work that never comes back, both go", cfg: func(c *config.Config) { c.Policy.Spares.MaxShare = 0 },
			snap: withLearned(snapshot(onNode("c1", "cpu"), onNode("c2", "cpu")), learned(func(int) int { return 0 })),
			want: map[string]string{"c1": "power_off/idle", "c2": "power_off/idle"}},
		{name: "cycle budget: a server that spent most of its cycles today is dearer to cycle",
			cfg:  func(c *config.Config) { c.Policy.Node.MaxCyclesPerDay = 6 },
			snap: snapshot(with(onNode("c1", "cpu"), func(n *fleet.Node) { n.CyclesToday = 5; n.IdleSince = t0.Add(-30 * time.Minute) }), with(onNode("c2", "cpu"), idleFor(30*time.Minute))),
			// c1: wear 10m x 6/(6-5) = 60m, break-even 71m; c2: 21m
			want: map[string]string{"c1": "skip/break_even", "c2": "power_off/idle"}},
		{name: "idle periods: the first empty server in placement order, idle a minute, stays for its quick job; the second, which never gets one, goes",
			cfg:  func(c *config.Config) { c.Policy.BreakEven.IdlePeriods = true },
			snap: withIdle(snapshot(with(onNode("c2", "cpu"), idleFor(time.Minute)), with(onNode("c1", "cpu"), idleFor(time.Minute)))),
			want: map[string]string{"c1": "skip/break_even", "c2": "power_off/idle"}},
		{name: "idle periods: the first one, idle past its quick returns, goes too",
			cfg:  func(c *config.Config) { c.Policy.BreakEven.IdlePeriods = true },
			snap: withIdle(snapshot(with(onNode("c1", "cpu"), idleFor(5*time.Minute)), with(onNode("c2", "cpu"), idleFor(time.Minute)))),
			want: map[string]string{"c1": "power_off/idle", "c2": "power_off/idle"}},
		{name: "idle periods: none seen of the third server's rank, the rule on the rise of need decides (none learned: ski rental keeps it)",
			cfg:  func(c *config.Config) { c.Policy.BreakEven.IdlePeriods = true },
			snap: withIdle(snapshot(with(onNode("c1", "cpu"), idleFor(5*time.Minute)), with(onNode("c2", "cpu"), idleFor(5*time.Minute)), with(onNode("c3", "cpu"), idleFor(5*time.Minute)))),
			want: map[string]string{"c1": "power_off/idle", "c2": "power_off/idle", "c3": "skip/break_even"}},
		{name: "idle periods: off by default (ski rental keeps both)",
			snap: withIdle(snapshot(with(onNode("c1", "cpu"), idleFor(time.Minute)), with(onNode("c2", "cpu"), idleFor(time.Minute)))),
			want: map[string]string{"c1": "skip/break_even", "c2": "skip/break_even"}},
		{name: "forecast: a pool whose bursts outgrow a boot wakes spares for them",
			cfg:  func(c *config.Config) { c.Policy.Spares.MaxShare = 0.5 },
			snap: withLearned(snapshot(offNode("c1", "cpu"), offNode("c2", "cpu"), offNode("c3", "cpu"), offNode("c4", "cpu")), learned(bursts)),
			want: map[string]string{"c1": "power_on/spare", "c2": "power_on/spare", "c3": "skip/not_needed"}},
		{name: "forecast: just after a burst every idle server is kept for the next",
			snap: withLearned(snapshot(onNode("c1", "cpu"), onNode("c2", "cpu"), onNode("c3", "cpu"), onNode("c4", "cpu")), learned(bursts)),
			want: map[string]string{"c1": "skip/break_even", "c4": "skip/break_even"}},
		{name: "forecast: a spare is kept where break-even alone would power it off", cfg: func(c *config.Config) { c.Policy.Spares.MaxShare = 0.5 },
			snap: withLearned(snapshot(onNode("c1", "cpu"), onNode("c2", "cpu")), learned(hourly)),
			want: map[string]string{"c1": "power_off/idle", "c2": "skip/spare"}},
		{name: "forecast: capped at max_share, none at 0", cfg: func(c *config.Config) { c.Policy.Spares.MaxShare = 0 },
			snap: withLearned(snapshot(offNode("c1", "cpu"), offNode("c2", "cpu")), learned(bursts)),
			want: map[string]string{"c1": "skip/not_needed", "c2": "skip/not_needed"}},
	}
}

// TestBreakEvenNumbers: each kept-on server says why with the numbers.
func TestBreakEvenNumbers(t *testing.T) {
	cfg := newConfig(t, "", 2, 0)
	snap := withLearned(snapshot(onNode("c1", "cpu"), onNode("c2", "cpu")), learned(everyFive))
	d := Plan(snap, cfg, t0)
	kept := d.Skips[0]
	for _, want := range []string{"P(needed within", "x cycle 0.35 > idle", "level 1", "a cycle costs 0.35 (boot and shutdown 0.183, wear 0.167, waiting 0), an idle hour 1"} {
		if kept.Node != "c2" || !strings.Contains(kept.Detail, want) {
			t.Errorf("%s %s: detail %q lacks %q", kept.Node, kept.Reason, kept.Detail, want)
		}
	}
	if off := d.Actions[0]; !strings.Contains(off.Detail, "no horizon where staying on pays") {
		t.Errorf("power-off detail %q", off.Detail)
	}
	snap = withLearned(snapshot(offNode("c1", "cpu"), offNode("c2", "cpu")), learned(bursts))
	cfg.Policy.Spares.MaxShare = 1
	d = Plan(snap, cfg, t0)
	if len(d.Actions) == 0 || !strings.Contains(d.Actions[0].Detail, "forecast: need rises by") || !strings.Contains(d.Actions[0].Detail, "at q0.9") {
		t.Errorf("spare power-on detail: %s", describe(d))
	}
}

// TestBreakEvenTime: the ski-rental time is a cycle's cost over an idle hour's.
func TestBreakEvenTime(t *testing.T) {
	cfg := newConfig(t, "", 1, 1)
	cfg.Policy.BreakEven = config.BreakEven{WearCost: 0.5, WaitPerGPUHour: 0.6}
	cases := []struct {
		pool int
		view learn.View
		want time.Duration
	}{
		// cpu costs 1/h: 11m of boot and shutdown, wear 0.5 (30m), no GPUs to wait
		{0, learn.View{}, 41 * time.Minute},
		// gpu costs 10/h: 11m, wear 0.5 (3m), 8 GPUs x 0.6 x 10m boot = 0.8 (4m48s)
		{1, learn.View{}, 18*time.Minute + 48*time.Second},
		// a boot of 2m seen: 3m, 3m, 8 x 0.6 x 2m = 0.16 (57.6s)
		{1, learn.View{Boot: 2 * time.Minute}, 6*time.Minute + 58*time.Second},
	}
	for _, c := range cases {
		if got := BreakEvenTime(&cfg.Pools[c.pool], &cfg.Policy, &cfg.BMC, c.view, 0); got != c.want {
			t.Errorf("pool %s, boot seen %s: %s, want %s", cfg.Pools[c.pool].Name, c.view.Boot, got, c.want)
		}
	}
	// Cycles spent today make the next dearer: wear 0.5 x 6/(6-3) = 1.0, 71m in all.
	if got := BreakEvenTime(&cfg.Pools[0], &cfg.Policy, &cfg.BMC, learn.View{}, 3); got != 71*time.Minute {
		t.Errorf("after 3 cycles of 6: %s, want 1h11m", got)
	}
	// A graceful timeout under a minute bounds the shutdown: 10m + 5s of boot and shutdown, wear 30m.
	cfg.BMC.GracefulTimeout = model.Duration(5 * time.Second)
	if got := BreakEvenTime(&cfg.Pools[0], &cfg.Policy, &cfg.BMC, learn.View{}, 0); got != 40*time.Minute+5*time.Second {
		t.Errorf("graceful timeout 5s: %s, want 40m5s", got)
	}
	// A cycle dearer than a year of idling keeps the server on for a year: 10^12 hours made a
	// negative time.Duration, and the server went off at once.
	cfg.Policy.BreakEven.WearCost = 1e12
	if got := BreakEvenTime(&cfg.Pools[0], &cfg.Policy, &cfg.BMC, learn.View{}, 0); got != 365*24*time.Hour {
		t.Errorf("wear_cost 1e12: %s, want a year", got)
	}
}

// TestPropertyRuleKept: the prices and break-even answers a Planner keeps from pass to pass
// are, at every pass, those worked out afresh from that pass's config and Views, and its
// actions those of a fresh Plan; over random passes that keep the Views, relabel them (the same
// distributions read for another origin, hour, regime, need or until), change their boot and
// shutdown times, draw new ones, change the config's prices, adapter or pools' caps in place,
// or draw new nodes. It fails when the kept answers outlive a change they follow.
func TestPropertyRuleKept(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	g := gen{r, histories(r, 6), idlePeriods(r, 4)}
	cfg := g.config(t, 1+g.pick(12), 1+g.pick(6))
	// No floor, spares, cooldown, dwell time or budget: more idle servers come to the rule.
	cfg.Policy.Spares.MaxShare, cfg.Policy.Cooldown, cfg.Policy.Node.MinOn = 0, config.Cooldown{}, 0
	cfg.Policy.Disruption.MaxPowerOffs, cfg.Policy.Disruption.MaxConcurrent = 100, 100
	for i := range cfg.Pools {
		cfg.Pools[i].Min = 0
	}
	views := func() map[string]learn.View {
		st, out := g.learned[g.pick(len(g.learned))], map[string]learn.View{}
		for _, p := range []string{"cpu", "gpu"} {
			v := st.View(p, t0, time.Duration(g.pick(3))*12*time.Hour)
			if g.chance(0.7) {
				v.Idle = g.idle[g.pick(len(g.idle))]
			}
			out[p] = v
		}
		return out
	}
	// Half the servers idle, On and read this pass (some with work, idle to a scaler with no
	// job manager), with the Views: most passes come to the rule.
	idler := func(s fleet.Snapshot) fleet.Snapshot {
		s.Telemetry, s.JobsKnown, s.Paused, s.Learned = true, true, false, views()
		for i := range s.Nodes {
			if n := &s.Nodes[i]; g.chance(0.5) {
				n.State, n.Power, n.RetryAfter = fleet.StateOn, bmc.StateOn, time.Time{}
				n.Jobs = fleet.JobsView{Known: true, Responding: true}
				if g.chance(0.25) {
					n.Jobs.Jobs, n.Jobs.CPUs = 1, 1
				}
				n.Telemetry = fleet.TelemetryView{Present: true, LastSample: t0}
				n.IdleSince = g.ago(90 * time.Minute)
			}
		}
		return s
	}
	snap := idler(g.snapshot(cfg))
	var pn Planner
	kinds, reused := map[string]int{}, 0
	last := map[*pool]ruleKey{}
	for iter := range 3000 {
		kind := "same"
		switch {
		case g.chance(0.1):
			kind, snap = "new snapshot", idler(g.snapshot(cfg))
		case g.chance(0.1):
			kind, snap.Learned = "new views", views()
		case g.chance(0.15):
			kind = "views relabelled"
			relabelled := map[string]learn.View{}
			for p, v := range snap.Learned {
				v.Origins, v.HourOfWeek, v.Regime, v.Need = v.Origins+1, g.pick(learn.HoursOfWeek), g.pick(learn.Regimes), g.pick(9)
				v.Until = v.Until.Add(time.Minute)
				relabelled[p] = v
			}
			snap.Learned = relabelled
		case g.chance(0.1):
			kind = "boot or shutdown times changed"
			timed := map[string]learn.View{}
			for p, v := range snap.Learned {
				v.Boot, v.Shutdown = time.Duration(g.pick(3))*time.Minute, time.Duration(g.pick(3))*time.Minute
				timed[p] = v
			}
			snap.Learned = timed
		case g.chance(0.2):
			kind = "prices changed in place"
			pl, be := &cfg.Pools[g.pick(len(cfg.Pools))], &cfg.Policy.BreakEven
			switch g.pick(10) {
			case 0:
				// Below zero (which validation refuses) a cycle is the cheaper the more the
				// server cycled today: the rule's answer differs with the cycles either way.
				be.WearCost = float64(g.pick(4)) - 1.5
			case 1:
				be.WearTime = model.Duration(g.pick(4)) * model.Duration(10*time.Minute)
			case 2:
				be.WaitPerJobHour, be.WaitPerGPUHour = float64(g.pick(4)), float64(g.pick(4))
			case 3:
				pl.BootTimeout = model.Duration(1+g.pick(4)) * model.Duration(2*time.Minute)
			case 4:
				cfg.BMC.GracefulTimeout = model.Duration(g.pick(3)) * model.Duration(30*time.Second)
			case 5:
				pl.Cost.Hourly, pl.Profile.GPUs = float64(g.pick(3)), g.pick(3)
			case 6:
				cfg.Policy.Node.MaxCyclesPerDay = 1 + g.pick(4)
			case 7:
				cfg.Jobs.Adapter = []string{"none", "slurm"}[g.pick(2)]
			case 8:
				// The pools' own caps: a floor, spares and a cooldown, or none of them.
				pl.Min, cfg.Policy.Spares.MaxShare, cfg.Policy.Cooldown.ScaleDown = 0, 0, 0
				if g.chance(0.5) {
					pl.Min, cfg.Policy.Spares.MaxShare = g.pick(len(pl.Nodes)/2+1), float64(g.pick(3))/4
					cfg.Policy.Cooldown.ScaleDown = model.Duration(g.pick(2)) * model.Duration(5*time.Minute)
				}
			case 9:
				// The rule on the idle periods, which reads each server's rank and idle time.
				be.IdlePeriods = !be.IdlePeriods
			}
		}
		kinds[kind]++
		snap.NoJobManager = !cfg.Jobs.ReportsAllocation()
		now := t0.Add(time.Duration(g.pick(600)-300) * time.Second)
		want := terse(Plan(snap, cfg, now).Actions)
		if got := pn.Actions(snap, cfg, now); !reflect.DeepEqual(got, want) && len(got)+len(want) > 0 {
			t.Fatalf("iteration %d (%s): Planner %v, Plan %v", iter, kind, got, want)
		}
		for _, pl := range pn.p.pools {
			if !pl.priced {
				continue
			}
			fresh := poolCosts(pl.cfg, &cfg.Policy, &cfg.BMC, pl.view)
			if pl.rule.prices != fresh {
				t.Fatalf("iteration %d (%s): pool %s kept prices %+v, afresh %+v", iter, kind, pl.name, pl.rule.prices, fresh)
			}
			for k, m := range pl.rule.answers {
				var want dpmMemo
				want.best, want.gain, want.f, want.e = dpm(&pl.view, k.level, fresh.spending(k.cycles, cfg.Policy.Node.MaxCyclesPerDay))
				if m != want {
					t.Fatalf("iteration %d (%s): pool %s level %d, %d cycles: kept answer %+v, afresh %+v", iter, kind, pl.name, k.level, k.cycles, m, want)
				}
			}
			if k, ok := last[pl]; ok && k == pl.rule.key && len(pl.rule.answers) > 0 {
				reused++
			}
			last[pl] = pl.rule.key
		}
	}
	t.Logf("passes %v; pools priced with the pass before's prices %d", kinds, reused)
	if reused < 500 {
		t.Errorf("prices kept from the pass before %d times: too few for the test to tell", reused)
	}
}

// TestQuietScaleDownByCycles: once the break-even rule keeps an idle server on, a Planner
// refuses the pool's next ones unasked only at the same cycles of the day (shutBy): the
// rule's answer need not follow the cycles the same way at every price. Here a wear cost
// below zero (which validation refuses) makes a cycle cheaper for a server that cycled
// today: c2 (no cycle) stays on, c1 (one) goes, as Plan decides.
func TestQuietScaleDownByCycles(t *testing.T) {
	cfg := newConfig(t, "", 2, 0)
	cfg.Policy.Spares.MaxShare, cfg.Policy.BreakEven.WearCost, cfg.Policy.Node.MaxCyclesPerDay = 0, -0.3, 2
	snap := withLearned(snapshot(with(onNode("c1", "cpu"), func(n *fleet.Node) { n.CyclesToday = 1 }), onNode("c2", "cpu")), learned(bursts))
	want := terse(Plan(snap, cfg, t0).Actions)
	var pn Planner
	if got := pn.Actions(snap, cfg, t0); !reflect.DeepEqual(got, want) || len(want) != 1 || want[0].Node != "c1" {
		t.Errorf("Planner %v, Plan %v; want c1 powered off by both", got, want)
	}
}

// TestQuietScaleDownWithWork: the break-even rule prices idle servers without work alone, so a
// Planner that saw it keep one on does not refuse, unasked, a server whose work a scaler with
// no job manager cannot see (it is drained, as Plan decides).
func TestQuietScaleDownWithWork(t *testing.T) {
	cfg := newConfig(t, "", 2, 0)
	cfg.Jobs.Adapter, cfg.Policy.Spares.MaxShare = "none", 0
	withWork := func(n *fleet.Node) { n.Jobs.Jobs, n.Jobs.CPUs = 1, 1 }
	snap := withLearned(snapshot(onNode("c1", "cpu"), with(onNode("c2", "cpu"), withWork)), learned(bursts))
	snap.NoJobManager = true
	want := terse(Plan(snap, cfg, t0).Actions)
	var pn Planner
	if got := pn.Actions(snap, cfg, t0); !reflect.DeepEqual(got, want) || len(want) != 1 || want[0].Node != "c2" {
		t.Errorf("Planner %v, Plan %v; want c2 drained by both", got, want)
	}
}
