package plan

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/learn"
)

// gen draws random fleets, policies and snapshots from a seeded source; learned are
// statistics to draw what rota learned from.
type gen struct {
	r       *rand.Rand
	learned []*learn.Stats
	// idle, when set, are idle periods a snapshot's Views may carry (for the rule on them,
	// policy.break_even.idle_periods); unset, a snapshot draws as it always did.
	idle []*learn.Idle
}

// idlePeriods learns n random sets of idle periods: begun at any time of the day before t0,
// by the first few servers in placement order, up to three hours long, most ended by a job
// and the rest cut by a power-off, so the rule on them answers either way.
func idlePeriods(r *rand.Rand, n int) []*learn.Idle {
	var out []*learn.Idle
	for range n {
		d := &learn.Idle{}
		ends := r.Float64()
		for range 400 + r.IntN(400) {
			start := t0.Add(-time.Duration(1+r.IntN(48*60)) * time.Minute)
			d.Observe(1+r.IntN(4), start, time.Duration(r.IntN(180))*time.Minute, r.Float64() < ends)
		}
		out = append(out, d)
	}
	return out
}

// histories learns n random workloads: a need that wanders for 30 hours before t0, in bursts
// or steadily, so Views of every regime come up.
func histories(r *rand.Rand, n int) []*learn.Stats {
	var out []*learn.Stats
	for range n {
		s := &learn.Stats{}
		need, burst := 3, r.IntN(2) == 0
		for m := 30 * 60; m > 0; m-- {
			switch {
			case burst && r.IntN(40) == 0:
				need += 1 + r.IntN(8)
			case burst && r.IntN(15) == 0:
				need = max(need-1-r.IntN(4), 0)
			case !burst && r.IntN(4) == 0:
				need = max(need+r.IntN(3)-1, 0)
			}
			s.Observe(t0.Add(-time.Duration(m)*time.Minute), map[string]int{"cpu": need, "gpu": need / 2})
		}
		out = append(out, s)
	}
	return out
}

func (g gen) pick(n int) int        { return g.r.IntN(n) }
func (g gen) chance(p float64) bool { return g.r.Float64() < p }
func (g gen) ago(max time.Duration) time.Time {
	return t0.Add(-time.Duration(g.r.Int64N(int64(max))))
}

var (
	genStates = []fleet.State{fleet.StateOn, fleet.StateOn, fleet.StateOn, fleet.StateOff, fleet.StateOff,
		fleet.StateDraining, fleet.StatePoweringOff, fleet.StatePoweringOn, fleet.StateBooting, fleet.StateFailed, fleet.StateUnknown}
	genPowers  = []bmc.State{bmc.StateOn, bmc.StateOff, bmc.StateUnknown, bmc.StateTransitioning, ""}
	genRegions = []string{"", "eu", "us"}
	genDepts   = []string{"", "a", "b"}
)

// config draws a policy: small budgets and caps, so the limits are reached often.
func (g gen) config(t testing.TB, nCPU, nGPU int) *config.Config {
	sched := ""
	if g.chance(0.5) {
		sched = fmt.Sprintf("  schedules: [{name: s, start: '%02d:00', end: '%02d:00', min_on_share: %.2f, backlog_queued_jobs: %d}]",
			g.pick(24), g.pick(24), g.r.Float64(), g.pick(3))
		if sched[len("  schedules: [{name: s, start: '"):][:2] == sched[len("  schedules: [{name: s, start: '00:00', end: '"):][:2] {
			sched = ""
		}
	}
	cfg := newConfig(t, sched, nCPU, nGPU)
	pol := &cfg.Policy
	pol.Disruption.MaxPowerOffs = g.pick(6)
	pol.Disruption.MaxConcurrent = 1 + g.pick(9) // 0 is refused (config.Validate)
	pol.Backlog.QueuedJobs = g.pick(4)
	pol.Node.MaxCyclesPerDay = 1 + g.pick(4)
	pol.Spares.Factor = float64(g.pick(4))
	pol.Spares.MaxShare = float64(g.pick(6)) / 5
	if g.chance(0.2) {
		cfg.Jobs.Adapter = "none"
	}
	for i := range cfg.Pools {
		pl := &cfg.Pools[i]
		n := len(pl.Nodes)
		pl.Min = g.pick(n/2 + 1)
		m := pl.Min + g.pick(n-pl.Min+1)
		pl.Max = &m
	}
	for _, d := range []string{"a", "b"} {
		if g.chance(0.5) {
			pol.Quotas = append(pol.Quotas, config.Quota{Department: d, Pool: cfg.Pools[g.pick(2)].Name, MaxServers: g.pick(4), Borrow: g.chance(0.5)})
		}
	}
	if g.chance(0.2) {
		no := false
		cfg.Pools[1].Cost.SavesWhenOff = &no
	}
	return cfg
}

func (g gen) node(name, pool string) fleet.Node {
	n := fleet.Node{
		Name: name, Pool: pool, Region: genRegions[g.pick(3)], Department: genDepts[g.pick(3)],
		State: genStates[g.pick(len(genStates))], Since: g.ago(time.Hour), Power: genPowers[g.pick(len(genPowers))],
		Pinned: g.chance(0.05), Maintenance: g.chance(0.05),
		Jobs: fleet.JobsView{Known: g.chance(0.9), Responding: g.chance(0.9), Drained: g.chance(0.1), DrainedByRota: g.chance(0.5)},
		Telemetry: fleet.TelemetryView{Present: g.chance(0.9), LastSample: g.ago(3 * time.Minute),
			CPUMax: g.r.Float64() * 0.3, GPUMax: g.r.Float64() * 0.07, GPUProcesses: g.pick(6) / 5},
		CyclesToday: g.pick(3), Failures: g.pick(3), RetryAfter: g.ago(20 * time.Minute).Add(10 * time.Minute),
	}
	if g.chance(0.6) {
		n.LastOn = g.ago(2 * time.Hour)
	}
	if g.chance(0.7) {
		n.IdleSince = g.ago(time.Hour)
	}
	if g.chance(0.6) {
		n.LastOff = g.ago(time.Hour)
	}
	if g.chance(0.3) {
		n.Jobs.Jobs = 1 + g.pick(3)
		n.Jobs.CPUs = 1 + g.pick(32)
		n.Jobs.GPUs = g.pick(3)
	}
	if g.chance(0.8) {
		// Mostly, the BMC agrees with the lifecycle state.
		n.Power = bmc.StateOn
		if n.State == fleet.StateOff || n.State == fleet.StateFailed {
			n.Power = bmc.StateOff
		}
	}
	if n.State == fleet.StateDraining {
		n.Jobs.Drained, n.Jobs.DrainedByRota = g.chance(0.8), g.chance(0.9)
	}
	return n
}

func (g gen) snapshot(cfg *config.Config) fleet.Snapshot {
	s := fleet.Snapshot{Telemetry: g.chance(0.85), JobsKnown: g.chance(0.85), Paused: g.chance(0.05)}
	s.NoJobManager = !cfg.Jobs.ReportsAllocation() // as the loop derives it
	for i := range cfg.Pools {
		for _, cn := range cfg.Pools[i].Nodes {
			s.Nodes = append(s.Nodes, g.node(cn.Name, cfg.Pools[i].Name))
		}
	}
	if g.chance(0.05) {
		s.Nodes = append(s.Nodes, g.node("stray", "tpu"))
	}
	for range g.pick(6) {
		s.Demand = append(s.Demand, fleet.Demand{
			Region: genRegions[g.pick(3)], Department: genDepts[g.pick(3)],
			Shape: config.Shape{CPUs: g.pick(70), GPUs: g.pick(10) / 3, Memory: config.Bytes(g.pick(4)) << 35},
			Nodes: 1 + g.pick(4)/3, Count: g.pick(12), Since: g.ago(10 * time.Minute),
		})
	}
	s.History = fleet.History{LastScaleUp: map[string]time.Time{}, LastScaleDown: map[string]time.Time{}}
	for _, p := range []string{"cpu", "gpu"} {
		if g.chance(0.2) {
			s.History.LastScaleUp[p] = g.ago(10 * time.Minute)
		}
		if g.chance(0.2) {
			s.History.LastScaleDown[p] = g.ago(10 * time.Minute)
		}
	}
	for range g.pick(4) {
		s.History.PowerOffs = append(s.History.PowerOffs, g.ago(20*time.Minute))
	}
	if g.chance(0.6) {
		st := g.learned[g.pick(len(g.learned))]
		s.Learned = map[string]learn.View{}
		for _, p := range []string{"cpu", "gpu"} {
			if g.chance(0.8) {
				s.Learned[p] = st.View(p, t0, time.Duration(g.pick(3))*12*time.Hour)
			}
		}
	}
	if len(g.idle) > 0 {
		for p, v := range s.Learned {
			if g.chance(0.8) {
				v.Idle = g.idle[g.pick(len(g.idle))]
				s.Learned[p] = v
			}
		}
	}
	return s
}

// TestPropertyRandomFleets: for random fleets, policies and observations, every decision keeps
// every invariant, and the same input in another order gives the same decision.
func TestPropertyRandomFleets(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	g := gen{r: r, learned: histories(r, 6)}
	acts := map[fleet.Kind]int{}
	for iter := range 1500 {
		cfg := g.config(t, 1+g.pick(12), 1+g.pick(6))
		snap := g.snapshot(cfg)
		before := append([]fleet.Node(nil), snap.Nodes...)
		d := Plan(snap, cfg, t0)
		if !reflect.DeepEqual(before, snap.Nodes) {
			t.Fatalf("iteration %d: Plan modified the snapshot's nodes", iter)
		}
		checkInvariants(t, snap, cfg, t0, d)
		if acts := Actions(snap, cfg, t0); !reflect.DeepEqual(acts, terse(d.Actions)) && len(acts)+len(d.Actions) > 0 {
			t.Fatalf("iteration %d: Actions %v, Plan %v", iter, acts, d.Actions)
		}
		shuffled := snap
		shuffled.Nodes = append([]fleet.Node(nil), snap.Nodes...)
		shuffled.Demand = append([]fleet.Demand(nil), snap.Demand...)
		g.r.Shuffle(len(shuffled.Nodes), func(i, j int) { shuffled.Nodes[i], shuffled.Nodes[j] = shuffled.Nodes[j], shuffled.Nodes[i] })
		g.r.Shuffle(len(shuffled.Demand), func(i, j int) { shuffled.Demand[i], shuffled.Demand[j] = shuffled.Demand[j], shuffled.Demand[i] })
		if d2 := Plan(shuffled, cfg, t0); !reflect.DeepEqual(d, d2) {
			t.Fatalf("iteration %d: decision depends on input order:\n%s\nvs\n%s", iter, describe(d), describe(d2))
		}
		if t.Failed() {
			t.Fatalf("iteration %d failed:\n%s", iter, describe(d))
		}
		for _, a := range d.Actions {
			acts[a.Kind]++
		}
	}
	// The generator must reach every kind of action, or the invariants were checked on nothing.
	for _, k := range []fleet.Kind{fleet.PowerOn, fleet.Drain, fleet.PowerOff, fleet.Resume} {
		if acts[k] == 0 {
			t.Errorf("no %s action in any random pass", k)
		}
	}
	t.Logf("actions over the random passes: %v", acts)
}

// TestPropertyPlannerReused: one Planner, reused from pass to pass over random sequences of
// snapshots, gives at each pass the actions of a fresh Plan (without their details). It keeps memory between passes
// (each pool's members and regions while the nodes' names, pools and regions stay as they
// were, and its buffers), so the sequences mostly keep that layout and change everything else,
// the nodes rewritten in place as the replay does; and sometimes change it at one node, reorder
// the nodes, or bring a new config.
func TestPropertyPlannerReused(t *testing.T) {
	plannerPasses(t, 3, 3000, func(g gen, c **config.Config, s *fleet.Snapshot) (string, []int) {
		cfg, snap := *c, *s
		defer func() { *s = snap }()
		kind := "same layout"
		switch {
		case cfg == nil || g.chance(0.05):
			kind, cfg = "new config", g.config(t, 1+g.pick(12), 1+g.pick(6))
			*c, snap = cfg, g.snapshot(cfg)
		case g.chance(0.1):
			kind, snap = "new snapshot", g.snapshot(cfg)
		case g.chance(0.1):
			kind = "nodes reordered"
			snap.Nodes = append([]fleet.Node(nil), snap.Nodes...)
			g.r.Shuffle(len(snap.Nodes), func(i, j int) { snap.Nodes[i], snap.Nodes[j] = snap.Nodes[j], snap.Nodes[i] })
		default:
			next := g.snapshot(cfg)
			if len(next.Nodes) != len(snap.Nodes) {
				kind, snap = "new snapshot", next
				break
			}
			for i := range next.Nodes {
				n := &next.Nodes[i]
				n.Name, n.Pool, n.Region = snap.Nodes[i].Name, snap.Nodes[i].Pool, snap.Nodes[i].Region
			}
			if g.chance(0.15) {
				// One node moves to another region, or another pool (maybe none in the config).
				kind = "layout changed at one node"
				n := &next.Nodes[g.pick(len(next.Nodes))]
				if g.chance(0.5) {
					n.Region = genRegions[g.pick(len(genRegions))]
				} else {
					n.Pool = []string{"cpu", "gpu", "tpu"}[g.pick(3)]
				}
			}
			copy(snap.Nodes, next.Nodes) // in place: the Planner holds the old nodes' addresses
			next.Nodes = snap.Nodes
			snap = next
		}
		return kind, nil
	})
}

// plannerPasses checks one Planner, reused over passes random passes, against a fresh Plan at
// each: step draws the next pass from the last (no config at the first), rewriting the config
// and snapshot, and says what kind of pass it is and which nodes changed (ActionsChanged; nil:
// none said, as Actions).
func plannerPasses(t *testing.T, seed uint64, passes int, step func(g gen, cfg **config.Config, snap *fleet.Snapshot) (kind string, changed []int)) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, seed+1))
	g := gen{r, histories(r, 6), idlePeriods(r, 4)}
	var pn Planner
	var cfg *config.Config
	var snap fleet.Snapshot
	kinds := map[string]int{}
	for iter := range passes {
		kind, changed := step(g, &cfg, &snap)
		if g.chance(0.1) {
			// The rule on the idle periods switched in place: its verdicts read each
			// server's rank and idle time, which nothing kept may stand for.
			cfg.Policy.BreakEven.IdlePeriods = !cfg.Policy.BreakEven.IdlePeriods
			kind = fmt.Sprintf("%s, idle_periods %t", kind, cfg.Policy.BreakEven.IdlePeriods)
		}
		kinds[kind]++
		now := t0.Add(time.Duration(g.pick(600)-300) * time.Second)
		want := terse(Plan(snap, cfg, now).Actions)
		if got := pn.ActionsChanged(snap, cfg, now, changed); !reflect.DeepEqual(got, want) && len(got)+len(want) > 0 {
			t.Fatalf("iteration %d (%s, changed %v): reused Planner %v, Plan %v", iter, kind, changed, got, want)
		}
		if !snap.Paused {
			checkKept(t, &pn.p, fmt.Sprintf("iteration %d (%s, changed %v)", iter, kind, changed))
		}
	}
	t.Logf("passes: %v", kinds)
}

// checkKept fails unless each pool's asleep servers kept from pass to pass (tiers.asleep) are
// those of its members asleep and neither pinned nor in maintenance, in the wake queue's
// order, its kept count of servers On with work (counts.busyOn) is theirs, and each On
// member's kept idle check (screening.idle) is its node's, all worked out afresh from the nodes.
func checkKept(t *testing.T, p *pass, at string) {
	t.Helper()
	type queued struct {
		i, rank int
		n       *fleet.Node
	}
	for _, pl := range p.pools {
		var fresh []queued
		busyOn := 0
		for r, i := range pl.members {
			if n := p.servers[i].node; n.State == fleet.StateOn && n.Jobs.Allocated() {
				busyOn++
			}
			if n := p.servers[i].node; n.State == fleet.StateOn {
				if got, want := p.mem.screens[i].idle, p.idleKeyOf(n); got != want {
					t.Fatalf("%s: server %s keeps idle check %+v, afresh %+v", at, n.Name, got, want)
				}
			}
			if n := p.servers[i].node; asleep(n.State) && !n.Pinned && !n.Maintenance {
				fresh = append(fresh, queued{i, r, n})
			}
		}
		slices.SortFunc(fresh, func(a, b queued) int {
			return cmp.Or(cmp.Compare(boolInt(a.n.State == fleet.StateFailed), boolInt(b.n.State == fleet.StateFailed)),
				cmp.Compare(a.n.CyclesToday, b.n.CyclesToday), a.n.LastOff.Compare(b.n.LastOff), cmp.Compare(a.rank, b.rank))
		})
		want := []int{}
		for _, q := range fresh {
			want = append(want, q.i)
		}
		if got := append([]int{}, pl.kept.asleep...); !slices.Equal(got, want) {
			t.Fatalf("%s: pool %s keeps asleep %v, afresh %v", at, pl.name, got, want)
		}
		if pl.tally.busyOn != busyOn {
			t.Fatalf("%s: pool %s keeps %d servers On with work, afresh %d", at, pl.name, pl.tally.busyOn, busyOn)
		}
	}
}

// terse is actions without their details, as a Planner gives them.
func terse(acts []fleet.Action) []fleet.Action {
	out := slices.Clone(acts)
	for i := range out {
		out[i].Detail = ""
	}
	return out
}

// TestPropertyPlannerChanged: one Planner told which nodes changed (ActionsChanged) gives at
// each pass the actions of a fresh Plan, over random sequences of snapshots rewritten in place
// at a few listed nodes (any field but the name, pool and region; every node's telemetry may
// change unlisted), with listed nodes that did not change and nodes listed twice; and sometimes
// a listed node moved to another region or pool, a new slice of the same nodes, a new config,
// a paused pass or no list; most changes are of a node's work alone. The Planner keeps each
// node's counts and screening from pass to pass, so a change it is not told of would show
// here as a difference from Plan.
func TestPropertyPlannerChanged(t *testing.T) {
	plannerPasses(t, 5, 4000, func(g gen, c **config.Config, s *fleet.Snapshot) (string, []int) {
		cfg, snap := *c, *s
		defer func() { *s = snap }()
		kind := "changed at listed nodes"
		var changed []int
		switch {
		case cfg == nil || g.chance(0.03):
			kind, cfg = "new config", g.config(t, 1+g.pick(12), 1+g.pick(6))
			*c, snap = cfg, g.snapshot(cfg)
			snap.Paused = false
		case g.chance(0.03):
			kind = "same nodes, another slice"
			snap.Nodes = slices.Clone(snap.Nodes)
			changed = []int{}
		case g.chance(0.03):
			kind = "no list"
		default:
			next := g.snapshot(cfg)
			next.Paused = g.chance(0.02)
			next.Nodes = snap.Nodes
			changed = []int{}
			for i := range next.Nodes {
				n := &next.Nodes[i]
				if g.chance(0.5) {
					n.Telemetry = g.node(n.Name, n.Pool).Telemetry
				}
				if g.chance(0.1) {
					changed = append(changed, i)
					switch {
					case g.chance(0.4):
						// Work starts or ends on it, as most changes in a replay.
						n.Jobs.Jobs, n.Jobs.CPUs, n.Jobs.GPUs = g.pick(3), g.pick(33), g.pick(3)
					case g.chance(0.8):
						fresh := g.node(n.Name, n.Pool)
						fresh.Region = n.Region
						*n = fresh
					}
				}
			}
			if len(changed) > 0 && g.chance(0.2) {
				changed = append(changed, changed[g.pick(len(changed))])
			}
			if len(changed) > 0 && g.chance(0.1) {
				kind = "layout changed at a listed node"
				n := &next.Nodes[changed[0]]
				if g.chance(0.5) {
					n.Region = genRegions[g.pick(len(genRegions))]
				} else {
					n.Pool = []string{"cpu", "gpu", "tpu"}[g.pick(3)]
				}
			}
			if next.Paused {
				kind = "paused"
			}
			snap = next
		}
		return kind, changed
	})
}
