package cost

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/bmc/spec"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// fleetYAML: rent (2 EUR/h, 8 CPUs), owned (1000 W at 0.30 EUR/kWh, 4 GPUs) and a monthly
// rent paid whether on or off.
const fleetYAML = `
server: {webhook_auth_disabled: true}
policy: {evaluation_interval: 1m}
accounting:
  stale_after: 2h
  carbon:
    - {region: eu, grams_per_kwh: 300}
pools:
  - name: rent
    profile: {cpu_cores: 8}
    cost: {hourly: 2, currency: EUR}
    labels: {region: eu, department: platform}
    nodes: [{name: r1, bmc: {protocol: ipmi, host: h, username: u, password_env: P}}]
  - name: gpu
    profile: {cpu_cores: 64, gpus: 4}
    cost: {watts: 1000, price_per_kwh: 0.30, currency: EUR}
    labels: {region: eu, department: research}
    nodes:
      - {name: g1, bmc: {protocol: ipmi, host: h, username: u, password_env: P}}
      - {name: g2, bmc: {protocol: ipmi, host: h, username: u, password_env: P}}
  - name: monthly
    profile: {cpu_cores: 8}
    cost: {hourly: 1, saves_when_off: false, currency: EUR}
    labels: {region: us, department: platform}
    nodes: [{name: m1, bmc: {protocol: ipmi, host: h, username: u, password_env: P}}]
`

func testConfig(t testing.TB, extra string) *config.Config {
	t.Helper()
	y := fleetYAML
	if extra != "" {
		y = strings.Replace(y, "accounting:\n", "accounting:\n"+extra, 1)
	}
	c, err := config.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var t0 = time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)

func obs(node, pool, region, owner string, p Power) Observation {
	return Observation{Node: node, Pool: pool, Region: region, Owner: owner, Power: p}
}

// run books one interval of d at the observation nodes, from fresh books.
func run(t *testing.T, cfg *config.Config, d time.Duration, nodes ...Observation) *Ledger {
	t.Helper()
	l := (&Ledger{}).Accrue(cfg, Pass{At: t0, Nodes: nodes, Carbon: map[string]float64{"eu": 300}})
	return l.Accrue(cfg, Pass{At: t0.Add(d), Nodes: nodes, Carbon: map[string]float64{"eu": 300}})
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func TestBooks(t *testing.T) {
	cfg := testConfig(t, "")
	h := time.Hour
	m := 3 * time.Minute
	m60 := m.Hours()
	t.Run("rent on, half held by another department", func(t *testing.T) {
		o := obs("r1", "rent", "eu", "platform", PowerOn)
		o.Holds = []Hold{{Department: "physics", CPUs: 4}}
		l := run(t, cfg, m, o)
		near(t, "physics spend", l.Value("spend", "rent", "physics", "eu", "EUR", "on", "hourly"), 1*m60)
		near(t, "platform spend (the idle half)", l.Value("spend", "rent", "platform", "eu", "EUR", "on", "hourly"), 1*m60)
		near(t, "idle", l.Value("node_idle", "r1", "rent", "EUR"), 1*m60)
		near(t, "borrowed seconds", l.Value("borrowed_seconds", "rent", "physics", "platform"), m.Seconds()/2)
		near(t, "borrowed", l.Value("borrowed", "rent", "physics", "platform", "EUR"), 1*m60)
		near(t, "no saving", l.Value("saving", "rent", "platform", "eu", "EUR"), 0)
	})
	t.Run("owned off: saving, avoided energy and carbon", func(t *testing.T) {
		l := run(t, cfg, m, obs("g1", "gpu", "eu", "research", PowerOff))
		near(t, "saving", l.Value("saving", "gpu", "research", "eu", "EUR"), 0.3*m60)
		near(t, "spend", l.Value("spend", "gpu", "research", "eu", "EUR", "off", "measured"), 0)
		near(t, "avoided J", l.Value("avoided_energy", "gpu", "research", "eu", "known"), 1000*m.Seconds())
		near(t, "avoided g", l.Value("avoided_carbon", "gpu", "research", "eu"), 1*m60*300)
	})
	t.Run("owned off with a measured standby draw", func(t *testing.T) {
		o := obs("g1", "gpu", "eu", "research", PowerOff)
		o.Watts, o.Measured, o.Source = 20, true, SourceBMC
		l := run(t, cfg, h, o)
		near(t, "saving less standby", l.Value("saving", "gpu", "research", "eu", "EUR"), 0.3-0.02*0.3)
		near(t, "standby spend", l.Value("spend", "gpu", "research", "eu", "EUR", "off", "measured"), 0.02*0.3)
		near(t, "standby energy", l.Value("node_energy", "g1", "gpu", "bmc"), 20*3600)
		near(t, "avoided J", l.Value("avoided_energy", "gpu", "research", "eu", "known"), 980*3600)
		near(t, "no idle for an off server", l.Value("node_idle", "g1", "gpu", "EUR"), 0)
	})
	t.Run("unknown power: spend as if on, never a saving", func(t *testing.T) {
		l := run(t, cfg, m, obs("g1", "gpu", "eu", "research", PowerUnknown))
		near(t, "spend", l.Value("spend", "gpu", "research", "eu", "EUR", "unknown", "profile"), 0.3*m60)
		near(t, "saving", l.Value("saving", "gpu", "research", "eu", "EUR"), 0)
		near(t, "energy as if on", l.Value("node_energy", "g1", "gpu", "profile"), 1000*m.Seconds())
		near(t, "no avoided energy", l.Value("avoided_energy", "gpu", "research", "eu", "known"), 0)
	})
	t.Run("unknown power ignores a reading", func(t *testing.T) {
		o := obs("g1", "gpu", "eu", "research", PowerUnknown)
		o.Watts, o.Measured, o.Source = 10, true, SourceBMC
		l := run(t, cfg, m, o)
		near(t, "spend", l.Value("spend", "gpu", "research", "eu", "EUR", "unknown", "profile"), 0.3*m60)
	})
	t.Run("failed and on keeps costing", func(t *testing.T) {
		l := run(t, cfg, m, obs("g1", "gpu", "eu", "research", PowerFailed))
		near(t, "spend", l.Value("spend", "gpu", "research", "eu", "EUR", "failed", "profile"), 0.3*m60)
	})
	t.Run("measured draw on: its energy and cost", func(t *testing.T) {
		o := obs("g1", "gpu", "eu", "research", PowerOn)
		o.Watts, o.Measured, o.Source = 1500, true, SourceBMC
		o.Holds = []Hold{{Department: "research", GPUs: 4}}
		l := run(t, cfg, h, o)
		near(t, "spend", l.Value("spend", "gpu", "research", "eu", "EUR", "on", "measured"), 1.5*0.3)
		near(t, "energy", l.Value("node_energy", "g1", "gpu", "bmc"), 1500*3600)
		near(t, "nothing idle: the GPUs were held", l.Value("node_idle", "g1", "gpu", "EUR"), 0)
	})
	t.Run("measured by its GPUs: energy under source gpu", func(t *testing.T) {
		o := obs("g1", "gpu", "eu", "research", PowerOn)
		o.Watts, o.Measured, o.Source = 1200, true, SourceGPU
		l := run(t, cfg, h, o)
		near(t, "spend", l.Value("spend", "gpu", "research", "eu", "EUR", "on", "measured"), 1.2*0.3)
		near(t, "energy", l.Value("node_energy", "g1", "gpu", "gpu"), 1200*3600)
	})
	t.Run("GPUs count: one GPU of four held is a quarter", func(t *testing.T) {
		o := obs("g1", "gpu", "eu", "research", PowerOn)
		o.Holds = []Hold{{Department: "physics", CPUs: 1, GPUs: 1}}
		l := run(t, cfg, h, o)
		near(t, "physics", l.Value("spend", "gpu", "physics", "eu", "EUR", "on", "profile"), 0.3/4)
		near(t, "idle", l.Value("node_idle", "g1", "gpu", "EUR"), 0.3*3/4)
	})
	t.Run("holds beyond the server are scaled to it", func(t *testing.T) {
		o := obs("r1", "rent", "eu", "platform", PowerOn)
		o.Holds = []Hold{{Department: "a", CPUs: 8}, {Department: "b", CPUs: 8}}
		l := run(t, cfg, h, o)
		near(t, "a", l.Value("spend", "rent", "a", "eu", "EUR", "on", "hourly"), 1)
		near(t, "b", l.Value("spend", "rent", "b", "eu", "EUR", "on", "hourly"), 1)
		near(t, "idle", l.Value("node_idle", "r1", "rent", "EUR"), 0)
	})
	t.Run("monthly rent off still costs, saves nothing", func(t *testing.T) {
		l := run(t, cfg, h, obs("m1", "monthly", "us", "platform", PowerOff))
		near(t, "spend", l.Value("spend", "monthly", "platform", "us", "EUR", "off", "hourly"), 1)
		near(t, "saving", l.Value("saving", "monthly", "platform", "us", "EUR"), 0)
	})
	t.Run("dry run: would save while decided", func(t *testing.T) {
		o := obs("g1", "gpu", "eu", "research", PowerOn)
		o.TakeDown = true
		l := run(t, cfg, m, o)
		near(t, "would save", l.Value("would_save", "gpu", "research", "eu", "EUR"), 0.3*m60)
		near(t, "spend goes on", l.Value("spend", "gpu", "research", "eu", "EUR", "on", "profile"), 0.3*m60)
	})
	t.Run("carbon unknown: energy counted, no carbon", func(t *testing.T) {
		o := obs("g1", "gpu", "eu", "research", PowerOff)
		l := (&Ledger{}).Accrue(cfg, Pass{At: t0, Nodes: []Observation{o}})
		l = l.Accrue(cfg, Pass{At: t0.Add(h), Nodes: []Observation{o}})
		near(t, "unknown J", l.Value("avoided_energy", "gpu", "research", "eu", "unknown"), 1000*3600)
		near(t, "no grams", l.Value("avoided_carbon", "gpu", "research", "eu"), 0)
	})
}

func TestIdleSharedByPool(t *testing.T) {
	cfg := testConfig(t, "  chargeback: {idle: pool}\n")
	a := obs("g1", "gpu", "eu", "research", PowerOn)
	a.Holds = []Hold{{Department: "physics", GPUs: 3}, {Department: "chemistry", GPUs: 1}}
	b := obs("g2", "gpu", "eu", "research", PowerOn) // idle all hour
	l := run(t, cfg, time.Hour, a, b)
	// g1 is held whole (0.3); g2's 0.3 idle is shared 3:1.
	near(t, "physics", l.Value("spend", "gpu", "physics", "eu", "EUR", "on", "profile"), 0.3*3/4+0.3*3/4)
	near(t, "chemistry", l.Value("spend", "gpu", "chemistry", "eu", "EUR", "on", "profile"), 0.3/4+0.3/4)
	near(t, "owner pays nothing", l.Value("spend", "gpu", "research", "eu", "EUR", "on", "profile"), 0)
	near(t, "g2's idle is still idle", l.Value("node_idle", "g2", "gpu", "EUR"), 0.3)
}

// TestStaleAndRestart: time past stale_after, and the time before the first pass after a
// restart, is unknown power; the restored totals go on from where they were.
func TestStaleAndRestart(t *testing.T) {
	cfg := testConfig(t, "")
	cfg.Accounting.StaleAfter = model.Duration(3 * time.Minute)
	off := []Observation{obs("g1", "gpu", "eu", "research", PowerOff)}
	l := (&Ledger{}).Accrue(cfg, Pass{At: t0, Nodes: off})
	l = l.Accrue(cfg, Pass{At: t0.Add(10 * time.Minute), Nodes: off})
	near(t, "saving for the 3 minutes observed", l.Value("saving", "gpu", "research", "eu", "EUR"), 0.3*3.0/60)
	near(t, "unknown for the 7 after", l.Value("spend", "gpu", "research", "eu", "EUR", "unknown", "profile"), 0.3*7.0/60)

	r, err := Restore(l.At, l.Counters())
	if err != nil {
		t.Fatal(err)
	}
	r = r.Accrue(cfg, Pass{At: l.At.Add(time.Minute), Nodes: off})
	near(t, "the first pass books nothing yet", r.Value("spend", "gpu", "research", "eu", "EUR", "unknown", "profile"), 0.3*7.0/60)
	r = r.Accrue(cfg, Pass{At: l.At.Add(2 * time.Minute), Nodes: off})
	near(t, "the restart's minute is unknown", r.Value("spend", "gpu", "research", "eu", "EUR", "unknown", "profile"), 0.3*8.0/60)
	near(t, "then observed again", r.Value("saving", "gpu", "research", "eu", "EUR"), 0.3*4.0/60)

	back := r.Accrue(cfg, Pass{At: r.At.Add(-time.Minute), Nodes: off})
	if !back.At.Equal(r.At) || back.Value("saving", "gpu", "research", "eu", "EUR") != r.Value("saving", "gpu", "research", "eu", "EUR") {
		t.Error("a clock that stepped back booked something")
	}
	for _, bad := range [][]Counter{
		{{Family: "nope", Labels: nil, Value: 1}},
		{{Family: "saving", Labels: []string{"a"}, Value: 1}},
		{{Family: "saving", Labels: []string{"a", "b", "c", "d"}, Value: -1}},
		{{Family: "saving", Labels: []string{"a", "b", "c", "d"}, Value: math.NaN()}},
		{{Family: "saving", Labels: []string{"a", "b", "c", "d"}, Value: math.Inf(1)}},
		{{Family: "saving", Labels: []string{"a", "b", "c", "d"}, Value: 1}, {Family: "saving", Labels: []string{"a", "b", "c", "d"}, Value: 2}},
	} {
		if _, err := Restore(t0, bad); err == nil {
			t.Errorf("restored %+v", bad)
		}
	}
}

// TestRestartNewServer: a server new in the config after a restart has no series yet; the
// time rota was down is booked into them only after a pass exported them at 0 (increase()
// counts from a series' first sample), and then exactly once.
func TestRestartNewServer(t *testing.T) {
	cfg := testConfig(t, "")
	r1 := obs("r1", "rent", "eu", "platform", PowerOn)
	g1 := obs("g1", "gpu", "eu", "research", PowerOn)
	l := (&Ledger{}).Accrue(cfg, Pass{At: t0, Nodes: []Observation{r1}})
	l = l.Accrue(cfg, Pass{At: t0.Add(time.Minute), Nodes: []Observation{r1}})
	l, err := Restore(l.At, l.Counters())
	if err != nil {
		t.Fatal(err)
	}
	both := []Observation{r1, g1}
	for i, at := range []time.Duration{11 * time.Minute, 12 * time.Minute, 13 * time.Minute} {
		before := l
		l = l.Accrue(cfg, Pass{At: t0.Add(at), Nodes: both})
		for k, v := range l.totals {
			if _, ok := before.totals[k]; !ok && v > 0 {
				t.Errorf("pass %d: %s%v was born holding %v", i, familyNames[k.f], k.labels, v)
			}
		}
	}
	near(t, "g1's 10 minutes down, unknown", l.Value("spend", "gpu", "research", "eu", "EUR", "unknown", "profile"), 0.3*10/60)
	near(t, "then 2 observed", l.Value("spend", "gpu", "research", "eu", "EUR", "on", "profile"), 0.3*2/60)
	near(t, "r1: 1 + 2 minutes on", l.Value("spend", "rent", "platform", "eu", "EUR", "on", "hourly"), 2*3.0/60)
	near(t, "r1: 10 down", l.Value("spend", "rent", "platform", "eu", "EUR", "unknown", "hourly"), 2*10.0/60)
}

// TestBooksAddUp: over random histories every counter only grows, and for servers that save
// when off, spend plus saving is exactly what leaving them on would have cost (no
// measurements): nothing is lost, nothing counted twice.
func TestBooksAddUp(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 14))
	powers := []Power{PowerOn, PowerOff, PowerUnknown, PowerFailed}
	for trial := range 200 {
		extra := ""
		if trial%2 == 1 {
			extra = "  chargeback: {idle: pool}\n"
		}
		cfg := testConfig(t, extra)
		cfg.Accounting.StaleAfter = model.Duration(2 * time.Minute) // some steps outlast it
		l := &Ledger{}
		at := t0
		var allOn float64
		for step := range 20 {
			var nodes []Observation
			for i, n := range []string{"g1", "g2"} {
				// in two regions: with idle shared by pool, one's idle goes to whoever
				// held the other, under its own region
				o := obs(n, "gpu", []string{"eu", "us"}[i], "research", powers[rng.IntN(len(powers))])
				if o.Power != PowerOff && rng.IntN(2) == 0 {
					o.Holds = []Hold{{Department: []string{"a", "b", ""}[rng.IntN(3)], GPUs: rng.IntN(5), CPUs: rng.IntN(80)}}
				}
				nodes = append(nodes, o)
			}
			next := at.Add(time.Duration(1+rng.IntN(300)) * time.Second)
			if step > 0 {
				allOn += 2 * 0.3 * next.Sub(at).Hours()
			}
			before := l
			l = l.Accrue(cfg, Pass{At: next, Nodes: nodes})
			for _, c := range before.Counters() {
				if l.Value(c.Family, c.Labels...) < c.Value {
					t.Fatalf("trial %d: %s%v went down", trial, c.Family, c.Labels)
				}
			}
			// A series holding an amount was there (at 0 at least) before: increase()
			// counts from a series' first sample.
			for k, v := range l.totals {
				if _, ok := before.totals[k]; !ok && v > 0 && step > 0 {
					t.Fatalf("trial %d step %d: %s%v was born holding %v", trial, step, familyNames[k.f], k.labels, v)
				}
			}
			at = next
		}
		var sum float64
		for _, c := range l.Counters() {
			if c.Family == "spend" || c.Family == "saving" {
				sum += c.Value
			}
		}
		if math.Abs(sum-allOn) > 1e-9 {
			t.Fatalf("trial %d: spend + saving = %v, all on = %v", trial, sum, allOn)
		}
	}
}

// TestObserve: power from the BMC's reading (a failed server that is on is its own bucket;
// an unreadable BMC is unknown, whatever rota's state), holds and readings carried over.
func TestObserve(t *testing.T) {
	snap := fleet.Snapshot{Nodes: []fleet.Node{
		{Name: "a", Pool: "gpu", Region: "eu", Department: "research", State: fleet.StateOn, Power: spec.StateOn,
			Jobs: fleet.JobsView{Running: []fleet.Job{{ID: "1", Department: "x", GPUs: 1}, {ID: "2", Department: "x", CPUs: 2, GPUs: 1}}}},
		{Name: "b", Pool: "gpu", State: fleet.StateFailed, Power: spec.StateOn},
		{Name: "c", Pool: "gpu", State: fleet.StateFailed, Power: spec.StateOff},
		{Name: "d", Pool: "gpu", State: fleet.StatePoweringOn, Power: spec.StateUnknown},
		{Name: "e", Pool: "gpu", State: fleet.StateBooting, Power: spec.StateTransitioning},
	}}
	p := Observe(snap, t0, map[string]Draw{"a": {Watts: 700, Source: SourceBMC}}, map[string]bool{"a": true}, nil)
	want := []Power{PowerOn, PowerFailed, PowerOff, PowerUnknown, PowerOn}
	for i, o := range p.Nodes {
		if o.Power != want[i] {
			t.Errorf("%s: %s, want %s", o.Node, o.Power, want[i])
		}
	}
	a := p.Nodes[0]
	if !a.Measured || a.Watts != 700 || a.Source != SourceBMC || !a.TakeDown || a.Owner != "research" || a.Region != "eu" ||
		len(a.Holds) != 1 || a.Holds[0] != (Hold{Department: "x", CPUs: 2, GPUs: 2}) {
		t.Errorf("a: %+v", a)
	}
	if p.Nodes[1].Measured {
		t.Error("b has no reading")
	}
}

// FuzzRestore: no stored books make Restore panic, and what it accepts reads back as it was.
func FuzzRestore(f *testing.F) {
	f.Add("saving", "gpu\x00research\x00eu\x00EUR", 12.5)
	f.Add("node_energy", "g1\x00gpu\x00bmc", 3.6e6)
	f.Add("spend", "a", -1.0)
	f.Add("nope", "", 1.0)
	f.Fuzz(func(t *testing.T, family, labels string, v float64) {
		c := Counter{Family: family, Labels: strings.Split(labels, "\x00"), Value: v}
		l, err := Restore(t0, []Counter{c})
		if err != nil {
			return
		}
		got := l.Counters()
		if len(got) != 1 || got[0].Family != family || got[0].Value != v || strings.Join(got[0].Labels, "\x00") != labels {
			t.Fatalf("restored %+v as %+v", c, got)
		}
	})
}

// TestStandbyAboveWatts: only a server off, measured above its pool's watts, is one whose
// saving and avoided energy the books clamp to none; a pool that gives no watts has nothing to
// compare with (a rented server's energy is then not counted).
func TestStandbyAboveWatts(t *testing.T) {
	owned := config.Cost{Watts: 1000, PricePerKWh: 0.3}
	cases := []struct {
		name string
		o    Observation
		c    config.Cost
		want bool
	}{
		{"off above", Observation{Power: PowerOff, Measured: true, Watts: 1200}, owned, true},
		{"off at the watts", Observation{Power: PowerOff, Measured: true, Watts: 1000}, owned, false},
		{"off unmeasured", Observation{Power: PowerOff}, owned, false},
		{"on above", Observation{Power: PowerOn, Measured: true, Watts: 1200}, owned, false},
		{"rented without watts", Observation{Power: PowerOff, Measured: true, Watts: 12}, config.Cost{Hourly: 2}, false},
	}
	for _, c := range cases {
		if got := StandbyAboveWatts(c.o, c.c); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
