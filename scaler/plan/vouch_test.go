package plan

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/learn"
)

// TestPropertyVouch: whenever a Planner vouches for its last pass with other Views, Plan with
// those Views decides the same actions, and so after each further View it vouches for. The
// Views are what a replay meets at a View's Until: the same statistics an hour or a few on, at
// a history old enough or not (readiness), sometimes another history. It must both vouch and
// refuse often, or the test could not tell (a Vouch that skips any of its checks fails here).
func TestPropertyVouch(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	g := gen{r, histories(r, 6), idlePeriods(r, 4)}
	cfg := g.config(t, 1+g.pick(12), 1+g.pick(6))
	cfg.Policy.Cooldown, cfg.Policy.Node.MinOn = config.Cooldown{}, 0
	cfg.Policy.Disruption.MaxPowerOffs, cfg.Policy.Disruption.MaxConcurrent = 100, 100
	for i := range cfg.Pools {
		cfg.Pools[i].Min = 0
	}
	idle := g.idle[g.pick(len(g.idle))]
	views := func(st *learn.Stats, at time.Time) map[string]learn.View {
		out := map[string]learn.View{}
		for _, p := range []string{"cpu", "gpu"} {
			v := st.View(p, at, time.Duration(g.pick(5))*12*time.Hour) // 30 hours of history: Ready or not
			if cfg.Policy.BreakEven.IdlePeriods {
				v.Idle = idle
			}
			out[p] = v
		}
		return out
	}
	var vouched, refused, acting int
	for iter := range 5000 {
		cfg.Policy.Spares.MaxShare = float64(g.pick(3)) / 4
		cfg.Policy.BreakEven.IdlePeriods = g.chance(0.3)
		st := g.learned[g.pick(len(g.learned))]
		snap := g.snapshot(cfg)
		snap.Telemetry, snap.JobsKnown, snap.Paused = true, true, g.chance(0.03)
		snap.Learned = views(st, t0)
		// Few servers on and idle, or many: spares to wake, or idle servers for the rule.
		idleShare := []float64{0, 0.3, 0.6}[g.pick(3)]
		for i := range snap.Nodes {
			if n := &snap.Nodes[i]; g.chance(idleShare) {
				n.State, n.Power, n.RetryAfter = fleet.StateOn, bmc.StateOn, time.Time{}
				n.Jobs = fleet.JobsView{Known: true, Responding: true}
				n.Telemetry = fleet.TelemetryView{Present: true, LastSample: t0}
				n.IdleSince = g.ago(90 * time.Minute)
			}
		}
		var pn Planner
		want := terse(pn.Actions(snap, cfg, t0))
		if len(want) > 0 {
			acting++
		}
		at := t0
		for range 4 {
			if g.chance(0.2) {
				st = g.learned[g.pick(len(g.learned))]
			}
			at = at.Add(time.Duration(1+g.pick(3)) * time.Hour)
			next := views(st, at)
			if !pn.Vouch(next, t0) {
				refused++
				break
			}
			if snap.Paused {
				t.Fatalf("iteration %d: vouched for a paused pass", iter)
			}
			vouched++
			again := snap
			again.Learned = next
			if got := terse(Plan(again, cfg, t0).Actions); !reflect.DeepEqual(got, want) && len(got)+len(want) > 0 {
				t.Fatalf("iteration %d: vouched with Views of %s, but Plan with them decides %v, not %v", iter, at, got, want)
			}
		}
	}
	t.Logf("vouched %d times, refused %d; %d passes acted", vouched, refused, acting)
	if vouched < 300 || refused < 300 {
		t.Errorf("vouched %d times and refused %d: too few of one for the test to tell", vouched, refused)
	}
}

// TestVouchDecidesAtNow: Vouch makes its choices at the time it is asked, not at the last
// pass's. Under the rule on the idle periods, the first empty server, idle a minute, stays for
// its quick job: the pass acts on nothing. Asked again with the same Views at that time, Vouch
// vouches; asked four minutes later, when the server is past its quick returns and Plan powers
// it off, it refuses.
func TestVouchDecidesAtNow(t *testing.T) {
	later := t0.Add(4 * time.Minute)
	snap := withIdle(snapshot(with(onNode("c1", "cpu"), func(n *fleet.Node) {
		n.IdleSince = t0.Add(-time.Minute)
		n.Telemetry.LastSample = later.Add(-15 * time.Second) // fresh at both times
	})))
	cfg := newConfig(t, "", 1, 0)
	cfg.Policy.BreakEven.IdlePeriods = true
	var pn Planner
	if acts := pn.Actions(snap, cfg, t0); len(acts) != 0 {
		t.Fatalf("the pass acts: %v", acts)
	}
	if !pn.Vouch(snap.Learned, t0) {
		t.Error("refused the pass's own Views at its own time")
	}
	if acts := Plan(snap, cfg, later).Actions; len(acts) != 1 || acts[0].Kind != fleet.PowerOff {
		t.Fatalf("four minutes later Plan decides %v, not c1's power-off: the test would show nothing", acts)
	}
	if pn.Vouch(snap.Learned, later) {
		t.Error("vouched four minutes later, when Plan powers c1 off")
	}
}
