package loop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

func TestNudgesMerge(t *testing.T) {
	f := newFx(t, nil, nil)
	passes := func() float64 { return testutil.ToFloat64(f.loop.metrics.passes.WithLabelValues("success")) }
	for range 3 {
		f.loop.Nudge("alert")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- f.loop.Run(ctx) }()

	<-f.clock.calls        // the interval's timer, after the first pass at start
	gap := <-f.clock.calls // the nudges' pass waits nudgeGap after it
	if got := passes(); got != 1 {
		t.Fatalf("%v passes before the gap after the start, want 1", got)
	}
	gap <- f.clock.Now()
	timer := <-f.clock.calls
	if got := passes(); got != 2 {
		t.Fatalf("%v passes after three nudges, want 2 (the start, then one for all three)", got)
	}
	if len(f.loop.nudges) != 0 {
		t.Fatal("a nudge is still pending")
	}
	timer <- f.clock.Now() // the evaluation interval
	<-f.clock.calls
	if got := passes(); got != 3 {
		t.Fatalf("%v passes after the interval, want 3", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// A flood of nudges (webhooks) runs one pass per nudgeGap, but work that asks meanwhile (the
// watch, a wake) runs at once.
func TestNudgesAreSpacedButWorkIsNot(t *testing.T) {
	f := newFx(t, nil, nil)
	passes := func() float64 { return testutil.ToFloat64(f.loop.metrics.passes.WithLabelValues("success")) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- f.loop.Run(ctx) }()
	<-f.clock.calls // the interval's timer, after the first pass
	f.loop.Nudge("alert")
	<-f.clock.calls // the nudge's pass waits nudgeGap after the first; that wait is never ended
	for range 100 {
		f.loop.Nudge("alert")
	}
	if got := passes(); got != 1 {
		t.Fatalf("%v passes within the gap, want 1", got)
	}
	f.loop.request(triggerWatch, "new work")
	<-f.clock.calls // the interval's timer: the watch's pass ran, the gap's timer unread
	if got := passes(); got != 2 {
		t.Fatalf("%v passes after new work, want 2", got)
	}
	if got := testutil.ToFloat64(f.loop.metrics.triggers.WithLabelValues(triggerWatch)); got != 1 {
		t.Errorf("%v passes for the watch, want 1", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// Invariant 2 (and its job-manager twin): without telemetry or the job manager, no scale-down
// that pass, whatever the planner says; scale-up still happens; the metrics say so.
func TestBlindPassScalesNothingDown(t *testing.T) {
	cases := []struct {
		name     string
		blind    func(f *fx)
		skip     fleet.Reason
		teleOK   float64
		jobsOK   float64
		powersOn bool
	}{
		{"prometheus down", func(f *fx) { f.tele.fail(errors.New("connection refused")) }, fleet.SkipNoTelemetry, 0, 1, true},
		{"job manager down", func(f *fx) { f.world.SetJobsErr(errors.New("slurmctld down")) }, fleet.SkipJobsUnknown, 1, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t, nil, nil)
			f.pass() // adopt the fleet
			f.world.Set("gpu02", func(s *executortest.Server) { s.Power = "off" })
			f.pass() // gpu02 is Off now
			if err := f.st.UpdateNode("cpu02", func(n *store.Node) error { n.State = fleet.StateDraining; return nil }); err != nil {
				t.Fatal(err)
			}
			c.blind(f)
			f.propose = []fleet.Action{
				act(fleet.Drain, "cpu01", "cpu", fleet.ReasonIdle),
				act(fleet.PowerOff, "cpu02", "cpu", fleet.ReasonDrained),
				act(fleet.PowerOn, "gpu02", "gpu", fleet.ReasonBacklog),
			}
			f.pass()
			for _, cmd := range f.world.Commands() {
				if cmd.Op == "drain" || cmd.Op == "off" {
					t.Errorf("scale-down sent while blind: %v", cmd)
				}
			}
			on := slices.Contains(f.world.Commands(), executortest.Command{Node: "gpu02", Op: "on"})
			if on != c.powersOn {
				t.Errorf("power-on sent: %v, want %v", on, c.powersOn)
			}
			dec := f.loop.lastPass().dec
			for _, n := range []string{"cpu01", "cpu02"} {
				if got := skipFor(dec, n); got != c.skip {
					t.Errorf("%s skipped for %q, want %q", n, got, c.skip)
				}
			}
			if got := testutil.ToFloat64(f.loop.metrics.telemetryOK); got != c.teleOK {
				t.Errorf("rota_scaler_telemetry_ok = %v, want %v", got, c.teleOK)
			}
			if got := testutil.ToFloat64(f.loop.metrics.jobsOK); got != c.jobsOK {
				t.Errorf("rota_scaler_jobs_ok = %v, want %v", got, c.jobsOK)
			}
		})
	}
}

// Invariant 2 at the gate: a planner that proposes draining a server for idleness while the
// server's own telemetry is not whole (here: GPUs its pool declares without readings) gets a
// skip, whatever the rest of the pass read; a drain for another reason is not the gate's to stop.
func TestGateHoldsIdleDrainWithoutTelemetry(t *testing.T) {
	f := newFx(t, nil, nil)
	f.pass() // adopt the fleet
	const missing = "0 of the 8 GPUs its pool declares report readings"
	f.tele.views["gpu01"] = fleet.TelemetryView{LastSample: f.clock.Now(), CPUMax: 0.01, Missing: missing}
	f.propose = []fleet.Action{act(fleet.Drain, "gpu01", "gpu", fleet.ReasonIdle), act(fleet.Drain, "cpu01", "cpu", fleet.ReasonIdle)}
	f.pass()
	if slices.Contains(f.world.Commands(), executortest.Command{Node: "gpu01", Op: "drain"}) {
		t.Errorf("gpu01 drained for idleness without its GPU readings: %v", f.world.Commands())
	}
	if !slices.Contains(f.world.Commands(), executortest.Command{Node: "cpu01", Op: "drain"}) {
		t.Errorf("cpu01, with whole telemetry, not drained: %v", f.world.Commands())
	}
	dec := f.loop.lastPass().dec
	if got := skipFor(dec, "gpu01"); got != fleet.SkipNoTelemetry {
		t.Errorf("gpu01 skipped for %q, want %q", got, fleet.SkipNoTelemetry)
	}
	for _, s := range dec.Skips {
		if s.Node == "gpu01" && s.Detail != missing {
			t.Errorf("skip detail %q, want what is missing (%q)", s.Detail, missing)
		}
	}
}

// Invariant 3 at the gate: a planner that proposes a power command for a server whose BMC
// cannot be read gets a skip, and nothing is sent to it.
func TestGateHoldsUnknownPower(t *testing.T) {
	f := newFx(t, nil, nil)
	f.pass() // adopt the fleet
	f.world.Set("gpu02", func(s *executortest.Server) { s.Power = "off" })
	f.pass() // gpu02 is Off now
	for _, n := range []string{"cpu01", "gpu02"} {
		f.world.Set(n, func(s *executortest.Server) { s.PowerUnknown = true })
	}
	f.propose = []fleet.Action{act(fleet.Drain, "cpu01", "cpu", fleet.ReasonIdle), act(fleet.PowerOn, "gpu02", "gpu", fleet.ReasonBacklog)}
	before := len(f.world.Commands())
	f.pass()
	if cmds := f.world.Commands()[before:]; len(cmds) != 0 {
		t.Errorf("commands sent to servers whose power is unknown: %v", cmds)
	}
	dec := f.loop.lastPass().dec
	for _, n := range []string{"cpu01", "gpu02"} {
		if got := skipFor(dec, n); got != fleet.SkipPowerUnknown {
			t.Errorf("%s skipped for %q, want %q", n, got, fleet.SkipPowerUnknown)
		}
	}
}

// Invariant 5: a paused scaler and a pinned server (or one in maintenance) get no action, and
// repair leaves them be.
func TestPausedAndPinnedGetNoAction(t *testing.T) {
	cases := []struct {
		name  string
		setup func(f *fx)
		skip  fleet.Reason
	}{
		{"paused", func(f *fx) {
			if err := f.loop.SetPaused(context.Background(), true, "alice: firmware"); err != nil {
				t.Fatal(err)
			}
		}, fleet.SkipPaused},
		{"pinned", func(f *fx) {
			if err := f.loop.SetPinned(context.Background(), "cpu01", true, "bob: benchmark"); err != nil {
				t.Fatal(err)
			}
		}, fleet.SkipPinned},
		{"in maintenance", func(f *fx) {
			if err := f.loop.SetMaintenance(context.Background(), "cpu01", true, "carol: new disks"); err != nil {
				t.Fatal(err)
			}
		}, fleet.SkipMaintenance},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t, nil, nil)
			f.pass()
			// cpu01 was left drained by rota long ago: repair would resume it, unless told off.
			err := f.st.UpdateNode("cpu01", func(n *store.Node) error {
				n.State, n.Since, n.DrainedByRota = fleet.StateDraining, t0.Add(-48*3600e9), true
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			f.world.Set("cpu01", func(s *executortest.Server) { s.Drained, s.DrainedByRota = true, true })
			c.setup(f)
			f.propose = []fleet.Action{act(fleet.PowerOff, "cpu01", "cpu", fleet.ReasonDrained)}
			f.pass()
			if cmds := f.world.Commands(); len(cmds) != 0 {
				t.Errorf("commands sent: %v", cmds)
			}
			if got := skipFor(f.loop.lastPass().dec, "cpu01"); got != c.skip {
				t.Errorf("cpu01 skipped for %q, want %q", got, c.skip)
			}
			if got := f.state("cpu01"); got != fleet.StateDraining {
				t.Errorf("cpu01 is %s, want it left draining", got)
			}
		})
	}
}

func TestPausedIsExported(t *testing.T) {
	f := newFx(t, nil, nil)
	if err := f.loop.SetPaused(context.Background(), true, "x"); err != nil {
		t.Fatal(err)
	}
	f.pass()
	st, _ := f.loop.Status(context.Background())
	if !st.Paused || testutil.ToFloat64(f.loop.metrics.paused) != 1 {
		t.Errorf("paused: status %v, metric %v", st.Paused, testutil.ToFloat64(f.loop.metrics.paused))
	}
	if err := f.loop.SetPaused(context.Background(), false, ""); err != nil {
		t.Fatal(err)
	}
	f.pass()
	if testutil.ToFloat64(f.loop.metrics.paused) != 0 {
		t.Error("still exported as paused")
	}
}

// TestStatusTotalsInOneCurrency: the fleet's spend sums each server in the currency rota plans
// in (a USD pool converted at its rate), where each server shows its own.
func TestStatusTotalsInOneCurrency(t *testing.T) {
	cfg, err := config.Parse([]byte(`
server: {webhook_auth_disabled: true}
accounting: {currency: EUR, exchange_rates: {USD: 0.5}}
pools:
  - name: eu
    profile: {cpu_cores: 8}
    cost: {hourly: 3, currency: EUR}
    nodes: [{name: e1, bmc: {protocol: ipmi, host: h1, username: u, password_env: P}}]
  - name: us
    profile: {cpu_cores: 8}
    cost: {hourly: 4, currency: USD}
    nodes: [{name: u1, bmc: {protocol: ipmi, host: h2, username: u, password_env: P}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	st := api.Status{}
	on := tally(&st, api.NodeStatus{State: fleet.StateOn}, cfg.Pools[1].Cost)
	off := tally(&st, api.NodeStatus{State: fleet.StateOff}, cfg.Pools[0].Cost)
	if !on || off || st.SpendPerHour != 2 || st.AllOnPerHour != 5 {
		t.Errorf("4 USD/h on and 3 EUR/h off at 0.5 EUR a dollar: powered %v %v, spend %v of %v EUR/h; want 2 of 5",
			on, off, st.SpendPerHour, st.AllOnPerHour)
	}
	// Spent as the books spend it: a server whose power is unknown as if on, a rented one
	// (paid whether on or off) while off too; neither is counted powered.
	rented := cfg.Pools[0].Cost
	rented.SavesWhenOff = new(false)
	for _, tc := range []struct {
		name  string
		state fleet.State
		cost  config.Cost
		spend float64
	}{
		{"unknown power", fleet.StateUnknown, cfg.Pools[0].Cost, 3},
		{"rented and off", fleet.StateOff, rented, 3},
		{"owned and off", fleet.StateOff, cfg.Pools[0].Cost, 0},
	} {
		st := api.Status{}
		if tally(&st, api.NodeStatus{State: tc.state}, tc.cost) || st.SpendPerHour != tc.spend || st.AllOnPerHour != 3 {
			t.Errorf("%s: spend %v of %v EUR/h, want %v of 3, not powered", tc.name, st.SpendPerHour, st.AllOnPerHour, tc.spend)
		}
	}
}

// TestAccountsAreChargedToDepartments: the planner (quotas, lending) sees each account the job
// manager names as the department accounting.chargeback.accounts charges it to, as the books
// do; an account not listed is its own department, and no account stays none.
func TestAccountsAreChargedToDepartments(t *testing.T) {
	var seen fleet.Snapshot
	f := newFx(t, func(c *config.Config) {
		c.Accounting.Chargeback.Accounts = map[string]string{"phys-a": "physics"}
	}, func(s fleet.Snapshot, _ *config.Config, _ time.Time) fleet.Decision {
		seen = s
		return fleet.Decision{}
	})
	f.world.SetDemand([]fleet.Demand{{Department: "phys-a", Count: 1}, {Department: "chem", Count: 1}, {Count: 1}})
	f.pass()
	var got []string
	for _, d := range seen.Demand {
		got = append(got, d.Department)
	}
	if !slices.Equal(got, []string{"physics", "chem", ""}) {
		t.Errorf("the planner saw demand of %q, want physics, chem and none", got)
	}
	cb := config.Chargeback{Accounts: map[string]string{"phys-a": "physics"}}
	running := []fleet.Job{{ID: "1", Department: "phys-a"}, {ID: "2", Department: "bio"}}
	jobs, _ := chargedTo(cb, map[string]fleet.JobsView{"n1": {Known: true, Running: running}}, nil)
	if r := jobs["n1"].Running; r[0].Department != "physics" || r[1].Department != "bio" || running[0].Department != "phys-a" {
		t.Errorf("running jobs charged to %q and %q (the job manager's own view now %q); want physics, bio and its own untouched",
			r[0].Department, r[1].Department, running[0].Department)
	}
}

func TestPlanActsOnNothing(t *testing.T) {
	f := newFx(t, nil, nil)
	f.propose = []fleet.Action{act(fleet.Drain, "cpu01", "cpu", fleet.ReasonIdle)}
	dec, err := f.loop.Plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(dec.Actions) != 1 {
		t.Errorf("plan %+v, want the drain", dec)
	}
	f.ex.Wait()
	if cmds := f.world.Commands(); len(cmds) != 0 {
		t.Errorf("Plan sent %v", cmds)
	}
	if recs, _ := f.st.Nodes(); len(recs) != 0 {
		t.Errorf("Plan wrote %v", recs)
	}
}

func TestStatusAndExplain(t *testing.T) {
	f := newFx(t, nil, nil)
	f.propose = []fleet.Action{act(fleet.Drain, "gpu01", "gpu", fleet.ReasonIdle)}
	f.pass()
	st, err := f.loop.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !st.LastPassOK || !st.LastPass.Equal(t0) || len(st.Nodes) != 4 || st.Currency != "EUR" {
		t.Errorf("status %+v", st)
	}
	if st.AllOnPerHour != 2*1.5+2*24 || st.SpendPerHour != st.AllOnPerHour {
		t.Errorf("spend %v of %v, want all on", st.SpendPerHour, st.AllOnPerHour)
	}
	if want := []api.PoolStatus{{Name: "cpu", Servers: 2, Powered: 2, Desired: 1}, {Name: "gpu", Servers: 2, Powered: 2, Desired: 2}}; !slices.Equal(st.Pools, want) {
		t.Errorf("pools %+v, want %+v", st.Pools, want)
	}
	ex, err := f.loop.Explain(context.Background(), "gpu01")
	if err != nil {
		t.Fatal(err)
	}
	if ex.Action == nil || ex.Action.Kind != fleet.Drain || len(ex.History) == 0 || ex.History[0].Result != "succeeded" {
		t.Errorf("explanation %+v", ex)
	}
	if _, err := f.loop.Explain(context.Background(), "nope"); !errors.Is(err, api.ErrUnknownNode) {
		t.Errorf("Explain(unknown) = %v, want ErrUnknownNode", err)
	}
	if err := f.loop.SetPinned(context.Background(), "nope", true, ""); !errors.Is(err, api.ErrUnknownNode) {
		t.Errorf("SetPinned(unknown) = %v, want ErrUnknownNode", err)
	}
	// A name of any size (it comes from the request's path) is quoted cut short.
	huge := strings.Repeat("n", 1<<20)
	if _, err := f.loop.Explain(context.Background(), huge); err == nil || len(err.Error()) > 200 {
		t.Errorf("Explain(a 1 MB name): an error of %d bytes", len(fmt.Sprint(err)))
	}
}

func TestFleetMetrics(t *testing.T) {
	f := newFx(t, nil, nil)
	f.world.Set("gpu02", func(s *executortest.Server) { s.Power = "off" })
	f.world.SetDemand([]fleet.Demand{{Class: "heavy", Count: 3, Nodes: 1}, {Class: "light", Count: 2, Nodes: 1}})
	f.propose = []fleet.Action{act(fleet.Drain, "gpu01", "gpu", fleet.ReasonIdle)}
	f.pass()
	m := f.loop.metrics
	checks := []struct {
		name string
		got  float64
		want float64
	}{
		{"node_state gpu01 on", testutil.ToFloat64(m.nodeState.WithLabelValues("gpu01", "gpu", "on")), 1},
		{"node_state gpu02 off", testutil.ToFloat64(m.nodeState.WithLabelValues("gpu02", "gpu", "off")), 1},
		{"one series per node", float64(testutil.CollectAndCount(m.nodeState)), 4},
		{"node_powered gpu02", testutil.ToFloat64(m.nodePowered.WithLabelValues("gpu02", "gpu", "eu", "research")), 0},
		{"node_powered cpu01", testutil.ToFloat64(m.nodePowered.WithLabelValues("cpu01", "cpu", "eu", "platform")), 1},
		{"node_cost gpu01", testutil.ToFloat64(m.nodeCost.WithLabelValues("gpu01", "gpu", "eu", "research", "EUR")), 24},
		{"node_saves_when_off", testutil.ToFloat64(m.nodeSaves.WithLabelValues("cpu01", "cpu")), 1},
		{"pool_powered gpu", testutil.ToFloat64(m.poolPowered.WithLabelValues("gpu")), 1},
		{"pool_desired cpu", testutil.ToFloat64(m.poolDesired.WithLabelValues("cpu")), 1},
		{"pending light on cpu", testutil.ToFloat64(m.pending.WithLabelValues("cpu", "light")), 2},
		{"decisions drain", testutil.ToFloat64(m.decisions.WithLabelValues("drain", "idle", "gpu")), 1},
		{"would save", testutil.ToFloat64(m.wouldSave), 24},
		{"dry run off", testutil.ToFloat64(m.dryRun), 0},
		{"last success", testutil.ToFloat64(m.lastSuccess), float64(t0.Unix())},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// Of the jobs waiting, rota_scaler_deferred_jobs counts those that wait on purpose (a
// deferrable class outside its window, not yet waited its defer.max), so the backlog alert
// leaves them out; every pool and class waiting has the series, 0 included. t0 is Monday
// 09:00 UTC.
func TestDeferredJobsMetric(t *testing.T) {
	const classes = `
jobs: {adapter: slurm}
policy:
  schedules:
    - {name: night, start: '22:00', end: '06:00'}
    - {name: morning, start: '08:00', end: '10:00'}
classes:
  - {name: batch, partitions: [batch], defer: {until: night, max: 12h}}
  - {name: early, partitions: [early], defer: {until: morning, max: 12h}}
  - {name: light}
pools:
  - {name: cpu, profile: {cpu_cores: 32}, boot_timeout: 10m, nodes: [{name: x1}]}
`
	withClasses := func(c *config.Config) {
		other, err := config.ParseFor([]byte(classes), config.Replay)
		if err != nil {
			t.Fatal(err)
		}
		c.Policy.Schedules, c.Classes = other.Policy.Schedules, other.Classes
	}
	job := func(class string, waited time.Duration) fleet.Demand {
		return fleet.Demand{Class: class, Count: 3, Nodes: 1, Shape: config.Shape{CPUs: 4}, Since: t0.Add(-waited)}
	}
	cases := []struct {
		name            string
		demand          fleet.Demand
		pending, defers float64
	}{
		{"a deferrable class outside its window", job("batch", time.Hour), 3, 3},
		{"waited its defer.max", job("batch", 12*time.Hour), 3, 0},
		{"submitted when, unknown", fleet.Demand{Class: "batch", Count: 3, Nodes: 1, Shape: config.Shape{CPUs: 4}}, 3, 0},
		{"a deferrable class inside its window", job("early", time.Hour), 3, 0},
		{"a class that is not deferrable", job("light", time.Hour), 3, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t, withClasses, nil)
			f.world.SetDemand([]fleet.Demand{c.demand})
			f.pass()
			m := f.loop.metrics
			if got := testutil.ToFloat64(m.pending.WithLabelValues("cpu", c.demand.Class)); got != c.pending {
				t.Errorf("pending = %v, want %v", got, c.pending)
			}
			if n := testutil.CollectAndCount(m.deferred); n != 1 {
				t.Errorf("%d deferred series, want 1", n)
			}
			if got := testutil.ToFloat64(m.deferred.WithLabelValues("cpu", c.demand.Class)); got != c.defers {
				t.Errorf("deferred = %v, want %v", got, c.defers)
			}
		})
	}
}

// Maintenance is durable with its note, shows in Status, and once cleared the node is rota's
// again: the next pass's repair gives back the drain rota left on it.
func TestMaintenanceSetAndCleared(t *testing.T) {
	f := newFx(t, nil, nil)
	ctx := context.Background()
	if err := f.loop.SetMaintenance(ctx, "nope", true, ""); !errors.Is(err, api.ErrUnknownNode) {
		t.Errorf("unknown node: %v, want ErrUnknownNode", err)
	}
	err := f.st.UpdateNode("cpu01", func(n *store.Node) error {
		n.State, n.Since, n.DrainedByRota = fleet.StateOn, t0, true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.loop.SetMaintenance(ctx, "cpu01", true, "carol: new disks"); err != nil {
		t.Fatal(err)
	}
	f.pass()
	if n, _ := f.st.Node("cpu01"); !n.Maintenance || n.MaintenanceNote != "carol: new disks" || !n.DrainedByRota {
		t.Errorf("in maintenance: %+v", n)
	}
	st, err := f.loop.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(st.Nodes, func(n api.NodeStatus) bool { return n.Name == "cpu01" }); i < 0 || !st.Nodes[i].Maintenance {
		t.Errorf("status does not show cpu01 in maintenance: %+v", st.Nodes)
	}
	if err := f.loop.SetMaintenance(ctx, "cpu01", false, "carol: done"); err != nil {
		t.Fatal(err)
	}
	f.pass()
	if n, _ := f.st.Node("cpu01"); n.Maintenance || n.MaintenanceNote != "" || n.DrainedByRota {
		t.Errorf("out of maintenance: %+v, want no note and the drain given back", n)
	}
}

// Unpinning and leaving maintenance clear the stored note, but who did it and why (rotactl's
// --note, with the user's name) is logged, as a resume's note is: found by `rotactl unpin n1
// --note=...`, whose note went nowhere.
func TestClearingAFlagLogsItsNote(t *testing.T) {
	f := newFx(t, nil, nil)
	ctx := context.Background()
	steps := []struct {
		flag string
		set  func(on bool, note string) error
	}{
		{"pin", func(on bool, note string) error { return f.loop.SetPinned(ctx, "cpu01", on, note) }},
		{"maintenance", func(on bool, note string) error { return f.loop.SetMaintenance(ctx, "cpu01", on, note) }},
	}
	for _, s := range steps {
		if err := s.set(true, "bob: firmware"); err != nil {
			t.Fatal(err)
		}
		f.logs.Reset()
		if err := s.set(false, "bob: firmware done"); err != nil {
			t.Fatal(err)
		}
		var notes []any
		for _, e := range f.logs.AllEntries() {
			if e.Message == s.flag+" changed" {
				notes = append(notes, e.Data["note"])
			}
		}
		if len(notes) != 1 || notes[0] != "bob: firmware done" {
			t.Errorf("%s cleared: logged notes %q, want [\"bob: firmware done\"]", s.flag, notes)
		}
	}
	if n, _ := f.st.Node("cpu01"); n.Pinned || n.PinNote != "" || n.Maintenance || n.MaintenanceNote != "" {
		t.Errorf("after clearing: %+v, want no flag and no stored note", n)
	}
}

// A server powered off by hand in maintenance is taken as off once it leaves, with no change
// outside rota in its history; one powered off by hand with no such spell is one, audited.
func TestPowerChangedOutsideRota(t *testing.T) {
	f := newFx(t, nil, nil)
	ctx := context.Background()
	f.pass() // adopt the fleet: all on
	if err := f.loop.SetMaintenance(ctx, "cpu01", true, "carol: new disks"); err != nil {
		t.Fatal(err)
	}
	f.world.Set("cpu01", func(s *executortest.Server) { s.Power = bmc.StateOff })
	f.pass()
	if err := f.loop.SetMaintenance(ctx, "cpu01", false, "carol: done"); err != nil {
		t.Fatal(err)
	}
	f.world.Set("cpu02", func(s *executortest.Server) { s.Power = bmc.StateOff })
	f.pass()
	outside := func(node string) int {
		recs, err := f.st.Audit(node, 0)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range recs {
			if r.Reason == fleet.ReasonOutside {
				n++
			}
		}
		return n
	}
	for node, want := range map[string]int{"cpu01": 0, "cpu02": 1} {
		if n, _ := f.st.Node(node); n.State != fleet.StateOff || n.HandsOffEnded {
			t.Errorf("%s: %+v, want off with the hands-off spell forgotten", node, n)
		}
		if got := outside(node); got != want {
			t.Errorf("%s: %d changes outside rota in its history, want %d", node, got, want)
		}
	}
}

// A power change seen while the job manager cannot be read is judged once it can, after a
// restart too: a server the job manager's power saving has was its change; one it does not
// have was changed outside rota, counted, audited and alerted on then. Nothing is commanded
// because of it.
func TestPowerChangedWhileTheJobManagerWasUnread(t *testing.T) {
	f := newFx(t, nil, nil)
	f.pass() // adopt the fleet: all on
	f.world.SetJobsErr(errors.New("slurmctld down"))
	for _, n := range []string{"cpu01", "cpu02"} {
		f.world.Set(n, func(s *executortest.Server) { s.Power = bmc.StateOff })
	}
	f.pass()
	f.restart(nil)
	f.world.SetJobsErr(nil)
	// Slurm's power saving has cpu02 (its SuspendProgram powered it down); cpu01 it does not.
	f.world.Set("cpu02", func(s *executortest.Server) { s.PowerSaving = true })
	sent := len(f.world.Commands())
	f.pass()
	f.pass()
	if got := metricValue(t, f.reg, "rota_scaler_power_changes_outside_total", map[string]string{"pool": "cpu", "to": "off"}); got != 1 {
		t.Errorf("changes outside rota to off counted %v, want 1 (cpu01's)", got)
	}
	for node, want := range map[string]int{"cpu01": 1, "cpu02": 0} {
		recs, err := f.st.Audit(node, 0)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range recs {
			if r.Reason == fleet.ReasonOutside && strings.Contains(r.Detail, "while the job manager could not be read") {
				n++
			}
		}
		if n != want {
			t.Errorf("%s: %d changes outside rota seen while the job manager was unread in its history, want %d", node, n, want)
		}
		if rec, _ := f.st.Node(node); rec.State != fleet.StateOff || rec.Unread != nil {
			t.Errorf("%s: %+v, want off with nothing left to judge", node, rec)
		}
	}
	if cmds := f.world.Commands()[sent:]; len(cmds) > 0 {
		t.Errorf("judging the changes sent %v", cmds)
	}
}

// The backup is a store with the same records, taken while the loop runs.
func TestBackupOpensWithTheSameRecords(t *testing.T) {
	f := newFx(t, nil, nil)
	f.pass()
	if err := f.loop.SetPinned(context.Background(), "gpu01", true, "dave: burn-in"); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := f.loop.Backup(context.Background(), &buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("Backup = %d, %v; %d bytes written", n, err, buf.Len())
	}
	path := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	copied, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer copied.Close()
	want, err := f.st.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	got, err := copied.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(executortest.NodeNames(f.cfg)) || !reflect.DeepEqual(got, want) {
		t.Errorf("backup's nodes %+v, want %+v", got, want)
	}
}

// The gate holds a one-step power-off (an On server, drained on the way) to what a drain for
// idleness and a power-off each need: whole telemetry, and nothing allocated now.
func TestGateHoldsOneStepPowerOff(t *testing.T) {
	f := newFx(t, nil, nil)
	f.pass() // adopt the fleet
	f.tele.views["gpu01"] = fleet.TelemetryView{LastSample: f.clock.Now(), CPUMax: 0.01, Missing: "no GPU readings"}
	f.world.Set("gpu02", func(s *executortest.Server) { s.Jobs = 1 })
	// A person drained cpu02 (empty, On in the store): theirs to power, not rota's to drain
	// over and power off.
	f.world.Set("cpu02", func(s *executortest.Server) { s.Drained = true })
	f.propose = []fleet.Action{act(fleet.PowerOff, "gpu01", "gpu", fleet.ReasonIdle),
		act(fleet.PowerOff, "gpu02", "gpu", fleet.ReasonIdle), act(fleet.PowerOff, "cpu01", "cpu", fleet.ReasonIdle),
		act(fleet.PowerOff, "cpu02", "cpu", fleet.ReasonIdle)}
	f.pass()
	dec := f.loop.lastPass().dec
	if got := skipFor(dec, "cpu02"); got != fleet.SkipDrainedByPerson {
		t.Errorf("cpu02 drained by a person: %q, want %q", got, fleet.SkipDrainedByPerson)
	}
	if got := skipFor(dec, "gpu01"); got != fleet.SkipNoTelemetry {
		t.Errorf("gpu01 without whole telemetry: %q, want %q", got, fleet.SkipNoTelemetry)
	}
	if got := skipFor(dec, "gpu02"); got != fleet.SkipAllocated {
		t.Errorf("gpu02 with a job: %q, want %q", got, fleet.SkipAllocated)
	}
	if got := f.state("cpu01"); got != fleet.StateOff {
		t.Errorf("cpu01, idle and whole, is %s, want off (drained and powered off in one pass)", got)
	}
	for _, c := range f.world.Commands() {
		if c.Node != "cpu01" && (c.Op == "off" || c.Op == "drain") {
			t.Errorf("%s sent to %s", c.Op, c.Node)
		}
	}
}

// TestTimesAheadOfTheClockAreTakenAsNow: cpu01 was left draining by rota with its drain's start
// stamped a year ahead, and gpu01 failed with its retry a year ahead, by a clock that had
// jumped (since put right). The pass writes both back as now: cpu01's drain times out
// drain.timeout from now and is given back (never drained for a year), and gpu01 may be tried
// again after the longest backoff.
func TestTimesAheadOfTheClockAreTakenAsNow(t *testing.T) {
	f := newFx(t, nil, nil)
	f.pass()
	now, year := f.clock.Now(), 365*24*time.Hour
	set := func(node string, fn func(n *store.Node)) {
		if err := f.st.UpdateNode(node, func(n *store.Node) error { fn(n); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	set("cpu01", func(n *store.Node) {
		n.State, n.Since, n.DrainedByRota = fleet.StateDraining, now.Add(year), true
	})
	f.world.Set("cpu01", func(s *executortest.Server) { s.Drained, s.DrainedByRota = true, true })
	f.world.Set("gpu01", func(s *executortest.Server) { s.Power = bmc.StateOff })
	set("gpu01", func(n *store.Node) {
		n.State, n.Since, n.Failures, n.FailedKind, n.RetryAfter = fleet.StateFailed, now, 1, fleet.PowerOn, now.Add(year)
	})
	f.pass()
	cpu, err := f.st.Node("cpu01")
	if err != nil {
		t.Fatal(err)
	}
	gpu, err := f.st.Node("gpu01")
	if err != nil {
		t.Fatal(err)
	}
	maxBackoff := time.Duration(f.cfg.Policy.Failure.MaxBackoff)
	if !cpu.Since.Equal(now) || !gpu.RetryAfter.Equal(now.Add(maxBackoff)) {
		t.Errorf("cpu01 draining since %v, gpu01 retried after %v; want %v and %v", cpu.Since, gpu.RetryAfter, now, now.Add(maxBackoff))
	}
	if got := f.state("cpu01"); got != fleet.StateDraining {
		t.Fatalf("cpu01 is %s, want still draining until its timeout", got)
	}
	f.clock.Advance(time.Duration(f.cfg.Policy.Drain.Timeout) + time.Minute)
	f.pass()
	if got := f.state("cpu01"); got != fleet.StateOn {
		t.Errorf("cpu01 is %s past its drain timeout, want given back (on)", got)
	}
}

// TestGateHoldsWhatRepairJustMoved: the pass read the world before its repair; a server repair
// moved (here a boot found ready, so On) has an observation older than its state, and gets no
// action until the next pass reads it again.
func TestGateHoldsWhatRepairJustMoved(t *testing.T) {
	f := newFx(t, nil, nil)
	f.pass() // adopt the fleet
	err := f.st.UpdateNode("cpu01", func(n *store.Node) error {
		n.State, n.Since = fleet.StateBooting, f.clock.Now()
		n.Intent = &store.Intent{Kind: fleet.PowerOn, Reason: fleet.ReasonBacklog, Started: f.clock.Now(), Attempt: 1}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f.propose = []fleet.Action{act(fleet.PowerOff, "cpu01", "cpu", fleet.ReasonIdle)}
	f.pass()
	if got := skipFor(f.loop.lastPass().dec, "cpu01"); got != fleet.SkipInFlight {
		t.Errorf("cpu01, brought On by this pass's repair: %q, want %q", got, fleet.SkipInFlight)
	}
	if got := f.state("cpu01"); got != fleet.StateOn {
		t.Errorf("cpu01 is %s, want on", got)
	}
	for _, c := range f.world.Commands() {
		if c.Op == "off" || c.Op == "drain" {
			t.Errorf("%s sent to %s", c.Op, c.Node)
		}
	}
}

// TestStatusShowsTheNotes: the notes given with a pin, a maintenance and a pause (who and why)
// are in the status while they hold, from the store before the first pass and after it; they
// were stored and logged but shown nowhere.
func TestStatusShowsTheNotes(t *testing.T) {
	f := newFx(t, nil, nil)
	ctx := context.Background()
	set := func(on bool, pin, maint, pause string) {
		t.Helper()
		for _, err := range []error{
			f.loop.SetPinned(ctx, "cpu01", on, pin),
			f.loop.SetMaintenance(ctx, "cpu02", on, maint),
			f.loop.SetPaused(ctx, on, pause),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	set(true, "bob: benchmark", "carol: new disks", "dave: incident 42")
	check := func(when string, pin, maint, pause string) {
		t.Helper()
		st, err := f.loop.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		notes := map[string][2]string{}
		for _, n := range st.Nodes {
			notes[n.Name] = [2]string{n.PinNote, n.MaintenanceNote}
		}
		if notes["cpu01"] != [2]string{pin, ""} || notes["cpu02"] != [2]string{"", maint} || st.PauseNote != pause {
			t.Errorf("%s: cpu01 %q, cpu02 %q, pause %q; want pin %q, maintenance %q, pause %q",
				when, notes["cpu01"], notes["cpu02"], st.PauseNote, pin, maint, pause)
		}
	}
	check("before the first pass", "bob: benchmark", "carol: new disks", "dave: incident 42")
	f.pass()
	check("after a pass", "bob: benchmark", "carol: new disks", "dave: incident 42")
	set(false, "bob: done", "carol: done", "dave: resolved")
	f.pass()
	check("once cleared", "", "", "")
}

// TestGateHoldsAMoveLeftUnfinished: a move whose jobs a failed release left held keeps its
// intent, and no action starts on its server until repair has finished it: a power-off of the
// emptied server would take the intent, and the held jobs would never be let go.
func TestGateHoldsAMoveLeftUnfinished(t *testing.T) {
	f := newFx(t, nil, nil)
	f.pass() // adopt the fleet
	f.world.Set("cpu01", func(s *executortest.Server) { s.Jobs, s.Requeueable, s.MoveUnfinished = 1, []string{"7"}, 2 })
	mv := act(fleet.Move, "cpu01", "cpu", fleet.ReasonIdle)
	mv.Move = &fleet.MovePlan{Jobs: []string{"7"}, Exclude: []string{"cpu01"}, Drain: true}
	f.propose = []fleet.Action{mv}
	f.pass()
	off := act(fleet.PowerOff, "cpu01", "cpu", fleet.ReasonDrained)
	f.propose = []fleet.Action{off}
	f.pass() // repair's second call leaves the jobs held too
	if got := skipFor(f.loop.lastPass().dec, "cpu01"); got != fleet.SkipInFlight {
		t.Errorf("power-off of cpu01 with its move unfinished: %q, want %q", got, fleet.SkipInFlight)
	}
	if s := f.world.Get("cpu01"); s.Power != bmc.StateOn || len(s.Held) != 1 {
		t.Fatalf("cpu01 %+v, want on with job 7 still held", s)
	}
	f.pass() // repair finishes the move; the planner may power the server off next
	if s := f.world.Get("cpu01"); len(s.Held) != 0 {
		t.Fatalf("job 7 held for good: %+v", s)
	}
	if n, _ := f.st.Node("cpu01"); n.Intent != nil && n.Intent.Kind == fleet.Move {
		t.Errorf("the move still in flight: %+v", n.Intent)
	}
}
