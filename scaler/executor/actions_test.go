package executor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs"
	"github.com/rotahq/rota/scaler/store"
)

func TestActionsHappyPath(t *testing.T) {
	cases := []struct {
		name     string
		setup    func(f *fx)
		kind     fleet.Kind
		repairs  int // passes after the action (power-on waits for ready there)
		want     fleet.State
		commands []executortest.Command
		check    func(t *testing.T, f *fx)
	}{
		{name: "drain", kind: fleet.Drain, want: fleet.StateDraining,
			setup:    func(f *fx) { f.put("cpu01", nodeOn()) },
			commands: []executortest.Command{{Node: "cpu01", Op: "drain"}},
			check: func(t *testing.T, f *fx) {
				if s := f.world.Get("cpu01"); !s.DrainedByRota || !f.node("cpu01").DrainedByRota {
					t.Error("drain not marked as rota's in the job manager and the store")
				}
				// The adapter adds jobs.Marker; the executor gives the bare reason, so Slurm
				// shows "rota: idle", never "rota: rota:idle".
				if got := f.world.Get("cpu01").DrainReason; got != string(fleet.ReasonIdle) {
					t.Errorf("drain reason given to the job manager = %q, want %q", got, fleet.ReasonIdle)
				}
				if g, _ := f.st.Global(); !g.LastScaleDown["cpu"].Equal(t0) {
					t.Errorf("last scale-down of cpu = %v, want %v", g.LastScaleDown["cpu"], t0)
				}
			}},
		{name: "power off", kind: fleet.PowerOff, want: fleet.StateOff,
			setup:    func(f *fx) { f.draining("cpu01") },
			commands: []executortest.Command{{Node: "cpu01", Op: "off"}},
			check: func(t *testing.T, f *fx) {
				n := f.node("cpu01")
				if n.CyclesToday(t0) != 1 || !n.LastOff.Equal(t0) {
					t.Errorf("power-off not recorded: %+v", n)
				}
				if g, _ := f.st.Global(); len(g.PowerOffs) != 1 {
					t.Errorf("fleet power-offs %v, want one", g.PowerOffs)
				}
			}},
		{name: "power on, ready, resumed", kind: fleet.PowerOn, repairs: 1, want: fleet.StateOn,
			setup:    func(f *fx) { f.off("cpu01") },
			commands: []executortest.Command{{Node: "cpu01", Op: "on"}, {Node: "cpu01", Op: "resume"}},
			check: func(t *testing.T, f *fx) {
				if n := f.node("cpu01"); !n.LastOn.Equal(t0) || n.DrainedByRota || n.Intent != nil {
					t.Errorf("ready node recorded as %+v", n)
				}
				if f.world.Get("cpu01").Drained {
					t.Error("booted node still drained")
				}
				// The scale-up cooldown runs from the power-on: no scale-down of the pool
				// while the work that asked for it may still be arriving.
				if g, _ := f.st.Global(); !g.LastScaleUp["cpu"].Equal(t0) {
					t.Errorf("last scale-up of cpu = %v, want %v", g.LastScaleUp["cpu"], t0)
				}
			}},
		{name: "power on, not ready yet", kind: fleet.PowerOn, want: fleet.StateBooting,
			setup:    func(f *fx) { f.off("cpu01") },
			commands: []executortest.Command{{Node: "cpu01", Op: "on"}},
			check: func(t *testing.T, f *fx) {
				if n := f.node("cpu01"); n.Intent == nil || n.Intent.Kind != fleet.PowerOn {
					t.Errorf("booting node lost its intent: %+v", n)
				}
			}},
		{name: "resume", kind: fleet.Resume, want: fleet.StateOn,
			setup:    func(f *fx) { f.draining("cpu01") },
			commands: []executortest.Command{{Node: "cpu01", Op: "resume"}},
			check: func(t *testing.T, f *fx) {
				if f.world.Get("cpu01").Drained || f.node("cpu01").DrainedByRota {
					t.Error("resumed node still drained")
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t, true, nil)
			c.setup(f)
			if err := f.ex.run(context.Background(), act(c.kind, "cpu01")); err != nil {
				t.Fatal(err)
			}
			for range c.repairs {
				f.repair()
			}
			if n := f.node("cpu01"); n.State != c.want {
				t.Errorf("state %s, want %s", n.State, c.want)
			}
			if got := f.world.Commands(); !slices.Equal(got, c.commands) {
				t.Errorf("commands %v, want %v", got, c.commands)
			}
			if got := f.actions(c.kind, "cpu", fleet.ResultSuccess); got != 1 {
				t.Errorf("rota_scaler_actions_total{result=success} = %v, want 1", got)
			}
			c.check(t, f)
		})
	}
}

func nodeOn() store.Node { return store.Node{State: fleet.StateOn, Since: t0.Add(-time.Hour)} }

// Invariant 1: a job that lands between the plan and the power-off calls the power-off off.
func TestPowerOffAbortsWhenAJobLands(t *testing.T) {
	// Anything allocated calls the power-off off, a counted job or not: CPUs or GPUs held
	// with no job listed (a reservation, an allocation the adapter cannot name) count too.
	cases := []struct {
		name  string
		alloc func(s *executortest.Server)
	}{
		{"a job", func(s *executortest.Server) { s.Jobs = 1 }},
		{"CPUs with no counted job", func(s *executortest.Server) { s.CPUs = 4 }},
		{"GPUs with no counted job", func(s *executortest.Server) { s.GPUs = 1 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFx(t, true, nil)
			f.draining("gpu01")
			f.world.Set("gpu01", tc.alloc) // landed after the plan
			err := f.ex.run(context.Background(), act(fleet.PowerOff, "gpu01"))
			if !errors.Is(err, ErrAborted) {
				t.Fatalf("err = %v, want ErrAborted", err)
			}
			for _, c := range f.world.Commands() {
				if c.Op == "off" {
					t.Fatalf("power-off sent to a node with work allocated: %v", f.world.Commands())
				}
			}
			if n := f.node("gpu01"); n.State != fleet.StateOn || n.Intent != nil || n.DrainedByRota {
				t.Errorf("aborted node recorded as %+v, want On, resumed", n)
			}
			if f.world.Get("gpu01").Drained {
				t.Error("aborted node left drained")
			}
			if r := f.lastAudit("gpu01"); r != auditAborted {
				t.Errorf("audit result %q, want %q", r, auditAborted)
			}
			if got := f.actions(fleet.PowerOff, "gpu", fleet.ResultAborted); got != 1 {
				t.Errorf("aborted power-offs counted %v, want 1", got)
			}
		})
	}
}

// An idle On node is powered off in one action: drained with rota's marker first, allocation
// read again, then the BMC command; the scale-down and the cycle are recorded.
func TestPowerOffInOneStep(t *testing.T) {
	f := newFx(t, true, nil)
	f.put("cpu01", nodeOn())
	if err := f.ex.run(context.Background(), act(fleet.PowerOff, "cpu01")); err != nil {
		t.Fatal(err)
	}
	if w := f.world.Get("cpu01"); w.Power != bmc.StateOff || !w.Drained || !w.DrainedByRota {
		t.Errorf("world %+v, want off and drained by rota", w)
	}
	n := f.node("cpu01")
	if n.State != fleet.StateOff || n.Intent != nil || len(n.PowerOffs) != 1 || !n.DrainedByRota {
		t.Errorf("node recorded as %+v, want Off with one cycle, drained by rota", n)
	}
	g, err := f.st.Global()
	if err != nil || g.LastScaleDown["cpu"].IsZero() || len(g.PowerOffs) != 1 {
		t.Errorf("global %+v (%v): want a scale-down and a power-off", g, err)
	}
	// A job that lands on it between the plan and the command calls it off, and the node
	// is given back.
	f.put("cpu02", nodeOn())
	f.world.Set("cpu02", func(s *executortest.Server) { s.Jobs = 1 })
	if err := f.ex.run(context.Background(), act(fleet.PowerOff, "cpu02")); !errors.Is(err, ErrAborted) {
		t.Fatalf("err = %v, want ErrAborted", err)
	}
	if w := f.world.Get("cpu02"); w.Power != bmc.StateOn || w.Drained {
		t.Errorf("aborted node %+v, want on and not drained", w)
	}
	// A drain the job manager refuses leaves the node On, marked, for repair to give back.
	f.put("cpu03", nodeOn())
	f.world.SetJobsErr(errors.New("slurmctld down"))
	if err := f.ex.run(context.Background(), act(fleet.PowerOff, "cpu03")); err == nil {
		t.Fatal("power-off without a drain succeeded")
	}
	if n := f.node("cpu03"); n.State != fleet.StateOn || !n.DrainedByRota || n.Intent != nil {
		t.Errorf("node recorded as %+v, want On, marked drained by rota", n)
	}
	for _, c := range f.world.Commands() {
		if c.Op == "off" && c.Node != "cpu01" {
			t.Errorf("power-off sent to %s", c.Node)
		}
	}
}

// Unknown allocation is not empty: a job manager that cannot answer stops the power-off.
func TestPowerOffNeedsAnAllocationAnswer(t *testing.T) {
	f := newFx(t, true, nil)
	f.draining("cpu01")
	f.world.SetJobsErr(errors.New("slurmctld down"))
	if err := f.ex.run(context.Background(), act(fleet.PowerOff, "cpu01")); err == nil {
		t.Fatal("power-off without an allocation answer succeeded")
	}
	if len(f.world.Commands()) != 0 {
		t.Errorf("commands sent: %v", f.world.Commands())
	}
	if n := f.node("cpu01"); n.State != fleet.StateDraining || n.Intent != nil {
		t.Errorf("node recorded as %+v, want Draining without intent", n)
	}
}

// Invariant 3: no power command while the power state is unknown; the intent waits for the BMC.
func TestUnknownPowerSendsNothing(t *testing.T) {
	cases := []struct {
		name   string
		kind   fleet.Kind
		setup  func(f *fx)
		after  fleet.State // once the BMC answers again and repair runs...
		passes int         // ...this many times
	}{
		{"power off", fleet.PowerOff, func(f *fx) { f.draining("cpu01") }, fleet.StateOff, 1},
		{"power on", fleet.PowerOn, func(f *fx) { f.off("cpu01") }, fleet.StateOn, 2}, // on, then ready
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t, true, nil)
			c.setup(f)
			f.world.Set("cpu01", func(s *executortest.Server) { s.PowerUnknown = true })
			err := f.ex.run(context.Background(), act(c.kind, "cpu01"))
			if !errors.Is(err, bmc.ErrStateUnknown) {
				t.Fatalf("err = %v, want ErrStateUnknown", err)
			}
			f.repair() // still unknown: left as is
			if cmds := f.world.Commands(); len(cmds) != 0 {
				t.Fatalf("commands sent while the power state was unknown: %v", cmds)
			}
			n := f.node("cpu01")
			if n.State != fleet.StateUnknown || n.Intent == nil || n.Intent.Kind != c.kind {
				t.Errorf("recorded %+v, want Unknown with the %s intent kept", n, c.kind)
			}
			if got := f.actions(c.kind, "cpu", fleet.ResultStateUnknown); got != 1 {
				t.Errorf("state_unknown counted %v, want 1", got)
			}
			f.world.Set("cpu01", func(s *executortest.Server) { s.PowerUnknown = false })
			for range c.passes {
				f.repair()
			}
			if n := f.node("cpu01"); n.State != c.after || n.Intent != nil {
				t.Errorf("after the BMC answered: %+v, want %s", n, c.after)
			}
		})
	}
}

// A power command that waited out bmc.operation_timeout for a slot under bmc.concurrency was
// never sent: rota's queue, not the server, so no failure and no backoff (it Failed the server
// and backed off its retry, a power-on for waiting work included); the intent waits as for a
// state the BMC could not say, and the next pass takes it up.
func TestNoSlotIsNoFailure(t *testing.T) {
	f := newFx(t, true, nil)
	f.off("cpu01")
	f.world.Set("cpu01", func(s *executortest.Server) { s.NoSlot = true })
	err := f.ex.run(context.Background(), act(fleet.PowerOn, "cpu01"))
	if !errors.Is(err, bmc.ErrNoSlot) {
		t.Fatalf("err = %v, want ErrNoSlot", err)
	}
	n := f.node("cpu01")
	if n.State != fleet.StateUnknown || n.Failures != 0 || !n.RetryAfter.IsZero() || n.Intent == nil || n.Intent.Kind != fleet.PowerOn {
		t.Errorf("recorded %+v, want Unknown with the power_on intent kept, no failure, no backoff", n)
	}
	f.world.Set("cpu01", func(s *executortest.Server) { s.NoSlot = false })
	f.repair()
	f.repair()
	if n := f.node("cpu01"); n.State != fleet.StateOn || n.Intent != nil {
		t.Errorf("after a slot was free: %+v, want On", n)
	}
	if cmds := f.world.Commands(); len(cmds) != 2 || cmds[0].Op != "on" || cmds[1].Op != "resume" {
		t.Errorf("commands %v, want the one power-on, then the job manager's resume", cmds)
	}
}

func TestBootTimeoutFailsWithBackoff(t *testing.T) {
	f := newFx(t, false, nil) // servers never come up
	f.off("gpu01")
	for i, wantBackoff := range []time.Duration{10 * time.Minute, 20 * time.Minute, 40 * time.Minute, time.Hour} {
		a := act(fleet.PowerOn, "gpu01")
		a.Reason = fleet.ReasonRetry
		if err := f.ex.run(context.Background(), a); err != nil {
			t.Fatalf("attempt %d: %v", i+1, err)
		}
		f.clock.Advance(9 * time.Minute)
		f.repair()
		if n := f.node("gpu01"); n.State != fleet.StateBooting {
			t.Fatalf("attempt %d: %s before the boot timeout, want booting", i+1, n.State)
		}
		f.clock.Advance(2 * time.Minute)
		f.repair()
		n := f.node("gpu01")
		if n.State != fleet.StateFailed || n.Failures != i+1 {
			t.Fatalf("attempt %d: %+v, want Failed with %d failures", i+1, n, i+1)
		}
		if want := f.clock.Now().Add(wantBackoff); !n.RetryAfter.Equal(want) {
			t.Errorf("attempt %d: retry after %v, want %v", i+1, n.RetryAfter, want)
		}
		if f.world.Get("gpu01").Power != bmc.StateOn {
			t.Errorf("attempt %d: power not left as is", i+1)
		}
	}
	// It comes up late after all: taken back, failures forgotten.
	f.world.Set("gpu01", func(s *executortest.Server) { s.Responding = true })
	f.repair()
	if n := f.node("gpu01"); n.State != fleet.StateOn || n.Failures != 0 || n.DrainedByRota {
		t.Errorf("late boot recorded as %+v, want On", n)
	}
}

func TestAuthErrorFailsWithTheReason(t *testing.T) {
	f := newFx(t, true, nil)
	f.off("cpu02")
	f.world.Set("cpu02", func(s *executortest.Server) { s.AuthFails = true })
	err := f.ex.run(context.Background(), act(fleet.PowerOn, "cpu02"))
	if !errors.Is(err, bmc.ErrAuth) {
		t.Fatalf("err = %v, want ErrAuth", err)
	}
	if n := f.node("cpu02"); n.State != fleet.StateFailed || n.Failures != 1 {
		t.Errorf("recorded %+v, want Failed", n)
	}
	recs, _ := f.st.Audit("cpu02", 1)
	if len(recs) != 1 || recs[0].Result != auditFailed || recs[0].Error == "" {
		t.Errorf("audit %+v, want a failure with its reason", recs)
	}
}

// Invariant 5 (dry run): the same actions, audited and counted, and nothing sent or changed.
func TestDryRunSendsNothing(t *testing.T) {
	f := newFx(t, true, func(c *config.Config) { c.Policy.DryRun = true })
	f.put("cpu01", nodeOn())
	f.draining("cpu02")
	f.off("gpu01")
	before, _ := f.st.Nodes()
	f.busyWith("gpu02")
	actions := []fleet.Action{act(fleet.Drain, "cpu01"), act(fleet.PowerOff, "cpu02"), act(fleet.PowerOn, "gpu01"), act(fleet.Resume, "cpu02"), act(fleet.Move, "gpu02")}
	if skips := f.ex.Start(context.Background(), actions); len(skips) != 0 {
		t.Errorf("skips %v", skips)
	}
	f.ex.Wait()
	if cmds := f.world.Commands(); len(cmds) != 0 {
		t.Fatalf("dry run sent %v", cmds)
	}
	after, _ := f.st.Nodes()
	for name, n := range before {
		if after[name].State != n.State || after[name].Intent != nil {
			t.Errorf("dry run changed %s: %+v -> %+v", name, n, after[name])
		}
	}
	for _, a := range actions {
		if r := f.lastAudit(a.Node); r != auditDryRun {
			t.Errorf("%s audited %q, want dry_run", a.Node, r)
		}
		if got := f.actions(a.Kind, a.Pool, fleet.ResultDryRun); got != 1 {
			t.Errorf("%s %s dry_run counted %v, want 1", a.Kind, a.Node, got)
		}
	}
	if got, want := WouldSavePerHour(f.cfg, actions), 1.5+1.5+24.0; got != want {
		t.Errorf("would save %v per hour, want %v", got, want)
	}
}

func TestStartCapsConcurrencyAndSkipsInFlight(t *testing.T) {
	cases := []struct {
		name          string
		maxConcurrent int
		nodes         []string
		wantStarted   int
	}{
		{"cap of one", 1, []string{"cpu01", "cpu02", "gpu01"}, 1},
		{"cap of three", 3, []string{"cpu01", "cpu02", "gpu01", "gpu02"}, 3},
		{"under the cap", 8, []string{"cpu01", "gpu02"}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t, true, func(cfg *config.Config) { cfg.Policy.Disruption.MaxConcurrent = c.maxConcurrent })
			hold := make(chan struct{})
			f.restart(func(string, fleet.Kind, Step) error { <-hold; return nil })
			var actions []fleet.Action
			for _, n := range c.nodes {
				f.put(n, nodeOn())
				actions = append(actions, act(fleet.Drain, n))
			}
			skips := f.ex.Start(context.Background(), actions)
			if got := len(c.nodes) - len(skips); got != c.wantStarted {
				t.Errorf("started %d, want %d (skips %v)", got, c.wantStarted, skips)
			}
			for _, s := range skips {
				if s.Reason != fleet.SkipConcurrency {
					t.Errorf("skip %+v, want concurrency", s)
				}
			}
			again := f.ex.Start(context.Background(), actions[:1])
			if len(again) != 1 || again[0].Reason != fleet.SkipInFlight {
				t.Errorf("second start of a node under way: %v, want in_flight", again)
			}
			close(hold)
			f.ex.Wait()
			if again := f.ex.Start(context.Background(), actions[:1]); len(again) != 0 {
				t.Errorf("node still busy after its action ended: %v", again)
			}
			f.ex.Wait()
		})
	}
}

// Property: the backoff starts at base, never shrinks and never passes the limit.
func TestBackoffDoublesUpToTheLimit(t *testing.T) {
	for _, c := range []struct{ base, limit time.Duration }{{time.Minute, time.Hour}, {10 * time.Minute, 4 * time.Hour}, {time.Hour, time.Hour},
		// A limit near time.Duration's largest (the config holds max_backoff to 1w; Backoff
		// takes any): the doubling overflowed to a negative wait.
		{time.Hour, time.Duration(math.MaxInt64) - time.Hour}} {
		prev := time.Duration(0)
		for n := 1; n <= 40; n++ {
			d := Backoff(c.base, c.limit, n)
			if n == 1 && d != c.base || d < prev || d > c.limit {
				t.Fatalf("Backoff(%v, %v, %d) = %v after %v", c.base, c.limit, n, d, prev)
			}
			prev = d
		}
		if prev != c.limit {
			t.Errorf("Backoff(%v, %v) never reached the limit: %v", c.base, c.limit, prev)
		}
	}
}

// Shutting down mid-command is no failure: the intent stays and the next start finishes it.
func TestShutdownLeavesTheIntentForRepair(t *testing.T) {
	f := newFx(t, true, nil)
	f.off("gpu02")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.ex.run(ctx, act(fleet.PowerOn, "gpu02")); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	n := f.node("gpu02")
	if n.State != fleet.StatePoweringOn || n.Intent == nil || n.Failures != 0 {
		t.Fatalf("after shutdown: %+v, want PoweringOn with its intent, no failure", n)
	}
	f.restart(nil)
	f.repair() // powers on
	f.repair() // ready
	if n := f.node("gpu02"); n.State != fleet.StateOn {
		t.Errorf("after restart: %s, want on", n.State)
	}
}

// cutWorld is the world with one call cut short by a shutdown arriving while it runs: the call
// ends rota's context, then fails as the real pieces do when theirs ends (the BMC controller's
// state read as an unknown state, the job manager's command as an error).
type cutWorld struct {
	*executortest.World
	cancel context.CancelFunc
	op     string // on, off, drain, nodes
}

func (w cutWorld) On(ctx context.Context, node string) error {
	if w.op == "on" {
		return w.cut(node)
	}
	return w.World.On(ctx, node)
}

func (w cutWorld) Off(ctx context.Context, node string, graceful bool) error {
	if w.op == "off" {
		return w.cut(node)
	}
	return w.World.Off(ctx, node, graceful)
}

func (w cutWorld) Drain(ctx context.Context, node, reason string) error {
	if w.op == "drain" {
		w.cancel()
		return fmt.Errorf("scontrol: %w", context.Canceled)
	}
	return w.World.Drain(ctx, node, reason)
}

func (w cutWorld) Nodes(ctx context.Context) (map[string]fleet.JobsView, error) {
	if w.op == "nodes" {
		w.cancel()
		return nil, fmt.Errorf("sinfo: %w", context.Canceled)
	}
	return w.World.Nodes(ctx)
}

func (w cutWorld) cut(node string) error {
	w.cancel()
	return &bmc.StateUnknownError{Node: node, Err: context.Canceled}
}

// A SIGTERM that cuts a step short, whatever error the cut makes (a BMC read that could not
// finish looks like an unknown state), is no failure and no Unknown: the node keeps the state
// and intent its action wrote, nothing is counted against it, and the next start's repair
// finishes the action. The unknown-state path lacked fail's shutdown guard.
func TestShutdownMidStepIsNoFailure(t *testing.T) {
	cases := []struct {
		name  string
		kind  fleet.Kind
		op    string
		prep  func(f *fx, node string)
		state fleet.State // kept from the intent
		rest  fleet.State // after the next start's repair
	}{
		{"power-on, BMC read cut", fleet.PowerOn, "on", (*fx).off, fleet.StatePoweringOn, fleet.StateOn},
		{"power-off, BMC read cut", fleet.PowerOff, "off", (*fx).draining, fleet.StatePoweringOff, fleet.StateOff},
		{"power-off, allocation check cut", fleet.PowerOff, "nodes", (*fx).draining, fleet.StatePoweringOff, fleet.StateOff},
		{"drain cut", fleet.Drain, "drain", func(*fx, string) {}, fleet.StateDraining, fleet.StateDraining},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t, true, nil)
			c.prep(f, "cpu01")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w := cutWorld{World: f.world, cancel: cancel, op: c.op}
			f.ex.o.Power, f.ex.o.Jobs = w, w
			if err := f.ex.run(ctx, act(c.kind, "cpu01")); err == nil {
				t.Fatal("a step cut short reported success")
			}
			n := f.node("cpu01")
			if n.State != c.state || n.Intent == nil || n.Intent.Kind != c.kind || n.Failures != 0 || !n.RetryAfter.IsZero() {
				t.Errorf("after the cut: %+v; want %s with its %s intent and no failure", n, c.state, c.kind)
			}
			if got := f.lastAudit("cpu01"); got != auditStarted {
				t.Errorf("last audit record %q, want %q (nothing failed)", got, auditStarted)
			}
			if got := f.actions(c.kind, "cpu", fleet.ResultInterrupted); got != 1 {
				t.Errorf("interrupted = %v, want 1", got)
			}
			for _, r := range []fleet.Result{fleet.ResultFailure, fleet.ResultStateUnknown} {
				if got := f.actions(c.kind, "cpu", r); got != 0 {
					t.Errorf("%s = %v, want 0", r, got)
				}
			}
			f.restart(nil)
			f.repair()
			f.repair()
			if n := f.node("cpu01"); n.State != c.rest || n.Failures != 0 {
				t.Errorf("after the next start: %+v, want %s", n, c.rest)
			}
		})
	}
}

// The readiness hook gates Booting -> On; a check that cannot answer (Prometheus down) is not
// ready, and the pool's boot timeout (10m) then fails the boot instead of leaving it Booting.
func TestReadinessHookGatesBoot(t *testing.T) {
	cases := []struct {
		name  string
		ready bool
		err   error
		after time.Duration // clock advanced before the repair
		want  fleet.State
	}{
		{"exporter up", true, nil, 0, fleet.StateOn},
		{"exporter not up yet", false, nil, 0, fleet.StateBooting},
		{"exporter check failed", false, errors.New("connection refused"), 0, fleet.StateBooting},
		{"exporter not up past the boot timeout", false, nil, 11 * time.Minute, fleet.StateFailed},
		{"exporter check failing past the boot timeout", false, errors.New("connection refused"), 11 * time.Minute, fleet.StateFailed},
		{"exporter check answering a wrong true with an error", true, errors.New("partial answer"), 0, fleet.StateBooting},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t, true, nil)
			f.off("cpu01")
			f.ex.o.Ready = func(context.Context, string) (bool, error) { return c.ready, c.err }
			if err := f.ex.run(context.Background(), act(fleet.PowerOn, "cpu01")); err != nil {
				t.Fatal(err)
			}
			f.clock.Advance(c.after)
			f.repair()
			if got := f.node("cpu01").State; got != c.want {
				t.Errorf("state %s, want %s", got, c.want)
			}
		})
	}
}

// A server rota drained whose job manager does not know it yet once booted (a Kubernetes Node
// deleted while the server was off: its kubelet registers a new one as it boots) is not ready:
// Booting, quietly, within the pool's boot timeout (10m), Failed past it, saying why; once
// known, it is resumed and On.
func TestBootWaitsForTheJobManagerToKnowTheServer(t *testing.T) {
	cases := []struct {
		name       string
		registered bool
		after      time.Duration // clock advanced before the repair
		want       fleet.State
	}{
		{"registered", true, 0, fleet.StateOn},
		{"not registered yet", false, 0, fleet.StateBooting},
		{"not registered past the boot timeout", false, 11 * time.Minute, fleet.StateFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t, true, nil)
			f.off("cpu01")
			f.world.Set("cpu01", func(s *executortest.Server) { s.Unmanaged, s.Unregistered = !c.registered, !c.registered })
			if err := f.ex.run(context.Background(), act(fleet.PowerOn, "cpu01")); err != nil {
				t.Fatal(err)
			}
			f.clock.Advance(c.after)
			f.repair()
			if got := f.node("cpu01").State; got != c.want {
				t.Errorf("state %s, want %s", got, c.want)
			}
			resumed := slices.Contains(f.world.Commands(), executortest.Command{Node: "cpu01", Op: "resume"})
			if resumed != c.registered {
				t.Errorf("resumed %v, want %v", resumed, c.registered)
			}
		})
	}
}

// A server rota drained that came on outside rota (rotactl power on, its Kubernetes Node
// deleted while it was off) and that the job manager does not know yet is given back quietly
// while on for less than its pool's boot timeout (10m), the give-back kept for a later repair;
// past it, the give-back fails, saying why.
func TestGiveBackWaitsForTheJobManagerToKnowTheServer(t *testing.T) {
	for _, c := range []struct {
		name    string
		on      time.Duration
		wantErr bool
	}{
		{"on a moment ago", time.Minute, false},
		{"on past the boot timeout", 11 * time.Minute, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t, true, nil)
			f.put("cpu01", store.Node{State: fleet.StateOn, Since: f.clock.Now().Add(-c.on), DrainedByRota: true})
			f.world.Set("cpu01", func(s *executortest.Server) { s.Unmanaged, s.Unregistered = true, true })
			err := f.ex.giveBack(context.Background(), act(fleet.Resume, "cpu01"), "left drained")
			if (err != nil) != c.wantErr || err != nil && !errors.Is(err, jobs.ErrNotRegistered) {
				t.Errorf("err %v, want one %v", err, c.wantErr)
			}
			if n := f.node("cpu01"); n.Intent == nil || !n.DrainedByRota {
				t.Errorf("record %+v, want the give-back kept", n)
			}
		})
	}
}

// A BMC that never answers holds the node no longer than bmc.operation_timeout: the step fails.
func TestHungBMCFailsTheStep(t *testing.T) {
	f := newFx(t, true, func(c *config.Config) { c.BMC.OperationTimeout = model.Duration(time.Millisecond) })
	f.off("gpu01")
	f.world.Set("gpu01", func(s *executortest.Server) { s.Hangs = true })
	if err := f.ex.run(context.Background(), act(fleet.PowerOn, "gpu01")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the deadline", err)
	}
	if n := f.node("gpu01"); n.State != fleet.StateFailed || n.Failures != 1 {
		t.Errorf("recorded %+v, want Failed", n)
	}
}

// Every side effect follows its intent in the store: with a store that takes no write (here
// opened read-only: every Update fails), no action sends anything, so a crash can never leave
// a drain or a power command the next start's repair does not know of.
func TestNoSideEffectWithoutItsIntent(t *testing.T) {
	cases := []struct {
		name  string
		kind  fleet.Kind
		setup func(f *fx)
	}{
		{"drain", fleet.Drain, func(f *fx) { f.put("cpu01", nodeOn()) }},
		{"power off of a drained server", fleet.PowerOff, func(f *fx) { f.draining("cpu01") }},
		{"power off in one step", fleet.PowerOff, func(f *fx) { f.put("cpu01", nodeOn()) }},
		{"power on", fleet.PowerOn, func(f *fx) { f.off("cpu01") }},
		{"move", fleet.Move, func(f *fx) { f.busyWith("cpu01") }},
		{"resume", fleet.Resume, func(f *fx) { f.draining("cpu01") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t, true, nil)
			c.setup(f)
			f.readOnly()
			if err := f.ex.run(context.Background(), act(c.kind, "cpu01")); err == nil {
				t.Error("action succeeded without writing its intent")
			}
			if got := f.world.Commands(); len(got) != 0 {
				t.Errorf("commands %v sent without their intent in the store", got)
			}
		})
	}
}
