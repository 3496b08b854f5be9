package executor

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

// Nodes with nothing in flight: repair takes resting states from the BMC and gives back what
// rota left drained.
func TestRepairSettles(t *testing.T) {
	cases := []struct {
		name        string
		setup       func(f *fx)
		passes      int
		want        fleet.State
		wantDrained bool // in the job manager, afterwards
		// outside is the state a change outside rota was counted and audited to, if any.
		outside fleet.State
	}{
		{name: "new node on is adopted", passes: 1, want: fleet.StateOn, setup: func(*fx) {}},
		{name: "new node off is adopted", passes: 1, want: fleet.StateOff, setup: func(f *fx) {
			f.world.Set("cpu01", func(s *executortest.Server) { s.Power = bmc.StateOff })
		}},
		{name: "new node with an unreadable BMC is unknown", passes: 1, want: fleet.StateUnknown, setup: func(f *fx) {
			f.world.Set("cpu01", func(s *executortest.Server) { s.PowerUnknown = true })
		}},
		{name: "failed drain is given back", passes: 1, want: fleet.StateOn, setup: func(f *fx) {
			f.put("cpu01", nodeOn())
			f.world.Set("cpu01", func(s *executortest.Server) { s.DrainFails = true })
			if err := f.ex.run(context.Background(), act(fleet.Drain, "cpu01")); err == nil {
				t.Fatal("refused drain succeeded")
			}
			f.world.Set("cpu01", func(s *executortest.Server) { s.DrainFails = false; s.Drained, s.DrainedByRota = true, true })
		}},
		{name: "off node powered on by a person is taken back and resumed", passes: 2, want: fleet.StateOn, outside: fleet.StateOn, setup: func(f *fx) {
			f.off("cpu01")
			f.world.Set("cpu01", func(s *executortest.Server) { s.Power = bmc.StateOn })
		}},
		{name: "on node powered off by a person is off", passes: 1, want: fleet.StateOff, outside: fleet.StateOff, setup: func(f *fx) {
			f.put("cpu01", nodeOn())
			f.world.Set("cpu01", func(s *executortest.Server) { s.Power = bmc.StateOff })
		}},
		{name: "on node powered off while pinned is off, no change outside rota", passes: 1, want: fleet.StateOff, setup: func(f *fx) {
			f.put("cpu01", store.Node{State: fleet.StateOn, Since: t0, HandsOffEnded: true})
			f.world.Set("cpu01", func(s *executortest.Server) { s.Power = bmc.StateOff })
		}},
		{name: "on node powered off by the job manager's power saving is off, no change outside rota", passes: 1, want: fleet.StateOff, setup: func(f *fx) {
			f.put("cpu01", nodeOn())
			f.world.Set("cpu01", func(s *executortest.Server) { s.Power, s.PowerSaving = bmc.StateOff, true })
		}},
		{name: "on node seen off while the job manager cannot be read is off, no change outside rota", passes: 1, want: fleet.StateOff, setup: func(f *fx) {
			f.put("cpu01", nodeOn())
			f.world.Set("cpu01", func(s *executortest.Server) { s.Power = bmc.StateOff })
			f.world.SetJobsErr(errors.New("slurmctld down"))
		}},
		{name: "a hands-off spell that changed nothing is forgotten", passes: 2, want: fleet.StateOff, outside: fleet.StateOff, setup: func(f *fx) {
			f.put("cpu01", store.Node{State: fleet.StateOn, Since: t0, HandsOffEnded: true})
			f.repair() // the BMC agrees: the mark is cleared
			if f.node("cpu01").HandsOffEnded {
				t.Error("the end of a hands-off spell outlived a repair that found the record right")
			}
			f.world.Set("cpu01", func(s *executortest.Server) { s.Power = bmc.StateOff })
		}},
		{name: "a node whose BMC could not say is on", passes: 1, want: fleet.StateOn, setup: func(f *fx) {
			f.put("cpu01", store.Node{State: fleet.StateUnknown, Since: t0})
		}},
		{name: "draining within its timeout is left to the planner", passes: 1, want: fleet.StateDraining, wantDrained: true, setup: func(f *fx) {
			f.draining("cpu01")
		}},
		{name: "failed and off waits for its retry", passes: 1, want: fleet.StateFailed, wantDrained: true, setup: func(f *fx) {
			f.off("cpu01")
			f.put("cpu01", store.Node{State: fleet.StateFailed, Since: t0, Failures: 1, RetryAfter: t0.Add(time.Hour), DrainedByRota: true})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t, true, nil)
			c.setup(f)
			for range c.passes {
				f.repair()
			}
			if n := f.node("cpu01"); n.State != c.want || n.Intent != nil {
				t.Errorf("repaired to %+v, want %s", n, c.want)
			}
			if got := f.world.Get("cpu01").Drained; got != c.wantDrained {
				t.Errorf("drained in the job manager: %v, want %v", got, c.wantDrained)
			}
			f.checkOutside("cpu01", c.outside)
		})
	}
}

// checkOutside: a change outside rota to state (none if empty) was counted once and audited
// once with reason outside, and no other was.
func (f *fx) checkOutside(node string, state fleet.State) {
	f.t.Helper()
	for _, to := range []fleet.State{fleet.StateOn, fleet.StateOff} {
		want := 0.0
		if to == state {
			want = 1
		}
		if got := testutil.ToFloat64(f.ex.metrics.outside.WithLabelValues("cpu", string(to))); got != want {
			f.t.Errorf("changes outside rota to %s counted %v, want %v", to, got, want)
		}
	}
	recs, err := f.st.Audit(node, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	var seen []store.AuditRecord
	for _, r := range recs {
		if r.Reason == fleet.ReasonOutside {
			seen = append(seen, r)
		}
	}
	switch {
	case state == "" && len(seen) > 0:
		f.t.Errorf("audited as a change outside rota: %+v", seen)
	case state != "" && (len(seen) != 1 || seen[0].Result != auditObserved || !strings.Contains(seen[0].Detail, "the BMC says "+string(state))):
		f.t.Errorf("audit of the change outside rota to %s: %+v", state, seen)
	}
}

// A change at rest seen while the job manager could not be read is kept in the store, through
// a restart, and judged once the job manager answers: its power saving has the server, so the
// change was its own; otherwise each change is one outside rota, its audit saying when and how
// it was seen.
func TestRepairJudgesChangesSeenWhileTheJobManagerWasUnread(t *testing.T) {
	slurmDown := errors.New("slurmctld down")
	cases := []struct {
		name string
		// unread is what the BMC says, pass by pass, while the job manager cannot be read.
		unread []bmc.State
		// powerSaving: the job manager, read again, says its power saving has the server.
		powerSaving bool
		want        fleet.State
		outside     map[fleet.State]int
	}{
		{name: "off by hand", unread: []bmc.State{bmc.StateOff}, want: fleet.StateOff, outside: map[fleet.State]int{fleet.StateOff: 1}},
		{name: "off by the job manager's power saving", unread: []bmc.State{bmc.StateOff}, powerSaving: true, want: fleet.StateOff},
		{name: "off and on again by hand", unread: []bmc.State{bmc.StateOff, bmc.StateOff, bmc.StateOn}, want: fleet.StateOn,
			outside: map[fleet.State]int{fleet.StateOff: 1, fleet.StateOn: 1}},
		{name: "no change", unread: []bmc.State{bmc.StateOn}, want: fleet.StateOn},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t, true, nil)
			f.put("cpu01", nodeOn())
			f.world.SetJobsErr(slurmDown)
			for _, p := range c.unread {
				f.world.Set("cpu01", func(s *executortest.Server) { s.Power = p })
				f.repair()
				f.clock.Advance(time.Minute)
			}
			f.checkOutside("cpu01", "") // not judged yet
			if c.outside != nil && f.node("cpu01").Unread == nil {
				t.Error("the change seen while the job manager could not be read was not kept in the record")
			}
			f.restart(nil)
			f.world.SetJobsErr(nil)
			f.world.Set("cpu01", func(s *executortest.Server) { s.PowerSaving = c.powerSaving })
			f.repair()
			f.repair() // judged once
			if n := f.node("cpu01"); n.State != c.want || n.Unread != nil {
				t.Errorf("record %+v, want %s with nothing left to judge", n, c.want)
			}
			for _, to := range []fleet.State{fleet.StateOn, fleet.StateOff} {
				if got := testutil.ToFloat64(f.ex.metrics.outside.WithLabelValues("cpu", string(to))); got != float64(c.outside[to]) {
					t.Errorf("changes outside rota to %s counted %v, want %d", to, got, c.outside[to])
				}
			}
			recs, err := f.st.Audit("cpu01", 0)
			if err != nil {
				t.Fatal(err)
			}
			audited := map[fleet.State]int{}
			for _, r := range recs {
				if r.Reason != fleet.ReasonOutside {
					continue
				}
				to := fleet.StateOn
				if r.Action == fleet.PowerOff {
					to = fleet.StateOff
				}
				audited[to]++
				want := "the BMC says " + string(to)
				if r.Result != auditObserved || !strings.Contains(r.Detail, want) || !strings.Contains(r.Detail, "seen 1 time(s) while the job manager could not be read, from 2026-11-30T09:00:00Z") {
					t.Errorf("audit %+v, want result %s and a detail saying %q and how it was seen", r, auditObserved, want)
				}
			}
			if !maps.Equal(audited, c.outside) && len(audited)+len(c.outside) > 0 {
				t.Errorf("audited changes outside rota %v, want %v", audited, c.outside)
			}
		})
	}
}

// A store lost or restored from an old backup forgets what rota drained; the job manager's
// marker still tells, and the node is given back.
func TestRepairTrustsRotasMarkerWhenTheStoreForgot(t *testing.T) {
	f := newFx(t, true, nil)
	f.world.Set("cpu01", func(s *executortest.Server) { s.Drained, s.DrainedByRota = true, true })
	f.world.Set("cpu02", func(s *executortest.Server) { s.Drained = true }) // a person's drain
	f.repair()                                                              // adopts both as On
	f.repair()                                                              // gives cpu01 back
	if f.world.Get("cpu01").Drained {
		t.Error("node drained by rota left drained")
	}
	if !f.world.Get("cpu02").Drained {
		t.Error("a person's drain was undone")
	}
}

// Dry run and repair: a fleet rota never touched gets no command at all, and what an earlier
// live run left in flight is rolled back towards serving, never forward: no drain, no power
// command; only rota's own drains are given back (a server is never left drained by rota).
func TestDryRunRepairOnlyGivesBack(t *testing.T) {
	intent := func(kind fleet.Kind) *store.Intent {
		return &store.Intent{Kind: kind, Reason: fleet.ReasonIdle, Started: t0, Attempt: 1}
	}
	drainedByRota := func(s *executortest.Server) { s.Drained, s.DrainedByRota = true, true }
	cases := []struct {
		name  string
		setup func(f *fx)
		want  fleet.State
		sent  []executortest.Command
	}{
		{name: "untouched fleet", want: fleet.StateOn, setup: func(f *fx) {
			f.world.Set("gpu01", func(s *executortest.Server) { s.Power = bmc.StateOff })
		}},
		{name: "drain in flight is rolled back", want: fleet.StateOn, sent: []executortest.Command{{Node: "cpu01", Op: "resume"}}, setup: func(f *fx) {
			f.put("cpu01", store.Node{State: fleet.StateDraining, Since: t0, Intent: intent(fleet.Drain), DrainedByRota: true})
			f.world.Set("cpu01", drainedByRota)
		}},
		{name: "draining is given back before its timeout", want: fleet.StateOn, sent: []executortest.Command{{Node: "cpu01", Op: "resume"}}, setup: func(f *fx) {
			f.draining("cpu01")
		}},
		{name: "power-off in flight, still on, is rolled back", want: fleet.StateOn, sent: []executortest.Command{{Node: "cpu01", Op: "resume"}}, setup: func(f *fx) {
			f.put("cpu01", store.Node{State: fleet.StatePoweringOff, Since: t0, Intent: intent(fleet.PowerOff), DrainedByRota: true})
			f.world.Set("cpu01", drainedByRota)
		}},
		{name: "power-off that landed is recorded", want: fleet.StateOff, setup: func(f *fx) {
			f.off("cpu01")
			f.put("cpu01", store.Node{State: fleet.StatePoweringOff, Since: t0, Intent: intent(fleet.PowerOff), DrainedByRota: true})
		}},
		{name: "power-on that never landed is left off", want: fleet.StateOff, setup: func(f *fx) {
			f.off("cpu01")
			f.put("cpu01", store.Node{State: fleet.StatePoweringOn, Since: t0, Intent: intent(fleet.PowerOn), DrainedByRota: true})
		}},
		{name: "move in flight is rolled back", want: fleet.StateOn, sent: []executortest.Command{{Node: "cpu01", Op: "resume"}}, setup: func(f *fx) {
			mv := intent(fleet.Move)
			mv.Move = &fleet.MovePlan{Jobs: []string{"7"}, Exclude: []string{"cpu01"}, Drain: true}
			f.put("cpu01", store.Node{State: fleet.StateDraining, Since: t0, Intent: mv, DrainedByRota: true})
			f.world.Set("cpu01", drainedByRota)
		}},
		{name: "booted server is given back", want: fleet.StateOn, sent: []executortest.Command{{Node: "cpu01", Op: "resume"}}, setup: func(f *fx) {
			f.put("cpu01", store.Node{State: fleet.StateBooting, Since: t0, Intent: intent(fleet.PowerOn), DrainedByRota: true})
			f.world.Set("cpu01", drainedByRota)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t, true, func(cfg *config.Config) { cfg.Policy.DryRun = true })
			c.setup(f)
			f.repair()
			f.repair()
			if n := f.node("cpu01"); n.State != c.want || n.Intent != nil {
				t.Errorf("repaired to %+v, want %s", n, c.want)
			}
			if got := f.world.Commands(); !slices.Equal(got, c.sent) {
				t.Errorf("sent %v, want %v", got, c.sent)
			}
			if s := f.world.Get("cpu01"); s.Power == bmc.StateOn && s.Drained {
				t.Error("cpu01 left drained")
			}
		})
	}
}

// A power-on whose command never landed (PoweringOn, BMC off) is sent again; a server the BMC
// confirmed on and that is off again while it boots was switched off by hand (or shut itself
// down): it is Failed at once, its power left off and retried after the backoff, never powered
// straight back on, and no boot_timeout is waited out (it used to wait, then fail).
func TestRepairOfAPowerOnFoundOff(t *testing.T) {
	cases := []struct {
		name     string
		booting  bool // the BMC confirmed the power-on before the server went off
		want     fleet.State
		wantOn   bool // a power-on command was sent by the repair
		failures int
	}{
		{name: "command never landed", want: fleet.StateBooting, wantOn: true},
		{name: "switched off while booting", booting: true, want: fleet.StateFailed, failures: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t, false, nil)
			f.off("cpu01")
			if c.booting {
				if err := f.ex.run(context.Background(), act(fleet.PowerOn, "cpu01")); err != nil {
					t.Fatal(err)
				}
				f.repair()
				if n := f.node("cpu01"); n.State != fleet.StateBooting {
					t.Fatalf("before the switch-off: %s, want booting", n.State)
				}
			} else {
				f.put("cpu01", store.Node{State: fleet.StatePoweringOn, Since: t0, DrainedByRota: true,
					Intent: &store.Intent{Kind: fleet.PowerOn, Reason: fleet.ReasonBacklog, Started: t0, Attempt: 1}})
			}
			f.world.Set("cpu01", func(s *executortest.Server) { s.Power = bmc.StateOff })
			sent := len(f.world.Commands())
			f.clock.Advance(time.Minute) // far inside the pool's 10m boot_timeout
			f.repair()
			n := f.node("cpu01")
			if n.State != c.want || n.Failures != c.failures {
				t.Errorf("repaired to %+v, want %s with %d failures", n, c.want, c.failures)
			}
			if gotOn := len(f.world.Commands()) > sent; gotOn != c.wantOn {
				t.Errorf("power-on sent: %v, want %v (%v)", gotOn, c.wantOn, f.world.Commands()[sent:])
			}
			if c.failures > 0 && (n.Intent != nil || !n.RetryAfter.After(f.clock.Now()) || f.world.Get("cpu01").Power != bmc.StateOff) {
				t.Errorf("failed node %+v: want no intent, a retry time ahead, power left off", n)
			}
		})
	}
}

// Invariant 5 in repair: a pinned server, or one in maintenance, is never touched, not even to
// finish what a crash left in flight or to give back a drain past its timeout. Whoever pinned
// it owns it now: no command, and its record stays as it was.
func TestRepairLeavesPinnedAndMaintenanceAlone(t *testing.T) {
	kept := map[string]func(*store.Node){
		"pinned":         func(n *store.Node) { n.Pinned = true },
		"in maintenance": func(n *store.Node) { n.Maintenance = true },
	}
	inFlight := map[string]store.Node{
		"power-off in flight, drained and empty": {State: fleet.StatePoweringOff, Since: t0, DrainedByRota: true,
			Intent: &store.Intent{Kind: fleet.PowerOff, Reason: fleet.ReasonIdle, Started: t0, Attempt: 1}},
		"drain past its timeout": {State: fleet.StateDraining, Since: t0.Add(-48 * time.Hour), DrainedByRota: true},
	}
	for why, keep := range kept {
		for what, rec := range inFlight {
			t.Run(why+"/"+what, func(t *testing.T) {
				f := newFx(t, true, nil)
				keep(&rec)
				f.put("cpu01", rec)
				f.world.Set("cpu01", func(s *executortest.Server) { s.Drained, s.DrainedByRota = true, true })
				f.repair()
				if got := f.world.Commands(); len(got) != 0 {
					t.Errorf("commands %v, want none", got)
				}
				if got := f.node("cpu01"); got.State != rec.State || (got.Intent == nil) != (rec.Intent == nil) {
					t.Errorf("record %+v, want it left as %+v", got, rec)
				}
			})
		}
	}
}

// A server rota drained and that has left the config since (taken out of its pool, or its pool
// removed, then rota restarted) was planned for by no pass and repaired by none: it stayed
// drained in the job manager forever. Repair gives it back; one powering off or off is left
// as it is (rota reads no BMC of a server outside the config), and so is a pinned one.
func TestRepairGivesBackServersThatLeftTheConfig(t *testing.T) {
	intent := func(kind fleet.Kind) *store.Intent {
		return &store.Intent{Kind: kind, Reason: fleet.ReasonIdle, Started: t0, Attempt: 1}
	}
	resumed := []executortest.Command{{Node: "cpu02", Op: "resume"}}
	cases := []struct {
		name  string
		rec   store.Node
		want  fleet.State
		sent  []executortest.Command
		stays bool // still drained in the job manager
		world func(*executortest.Server)
	}{
		{name: "draining", rec: store.Node{State: fleet.StateDraining, Since: t0, DrainedByRota: true}, want: fleet.StateOn, sent: resumed},
		{name: "drain in flight", rec: store.Node{State: fleet.StateDraining, Since: t0, Intent: intent(fleet.Drain), DrainedByRota: true}, want: fleet.StateOn, sent: resumed},
		{name: "a failed drain's mark", rec: store.Node{State: fleet.StateOn, Since: t0, DrainedByRota: true}, want: fleet.StateOn, sent: resumed},
		{name: "off", rec: store.Node{State: fleet.StateOff, Since: t0, DrainedByRota: true}, want: fleet.StateOff, stays: true},
		{name: "powering off", rec: store.Node{State: fleet.StatePoweringOff, Since: t0, Intent: intent(fleet.PowerOff), DrainedByRota: true}, want: fleet.StatePoweringOff, stays: true},
		{name: "pinned", rec: store.Node{State: fleet.StateDraining, Since: t0, DrainedByRota: true, Pinned: true}, want: fleet.StateDraining, stays: true},
		// Powering on or booting when it left: rota reads its BMC no more, so it lets the
		// power-on finish and waits for the job manager to see it respond; then it is up with
		// no work and rota no longer powers it off: left on, its drain given back, and said.
		// It stayed PoweringOn or Booting, and drained, for good.
		{name: "booting, up", rec: store.Node{State: fleet.StateBooting, Since: t0, Intent: intent(fleet.PowerOn), DrainedByRota: true}, want: fleet.StateOn, sent: resumed},
		{name: "powering on, up", rec: store.Node{State: fleet.StatePoweringOn, Since: t0, Intent: intent(fleet.PowerOn), DrainedByRota: true}, want: fleet.StateOn, sent: resumed},
		{name: "booting, up, drained by someone else", rec: store.Node{State: fleet.StateBooting, Since: t0, Intent: intent(fleet.PowerOn)}, want: fleet.StateOn, stays: true,
			world: func(s *executortest.Server) { s.DrainedByRota = false }},
		// Not seen up (the command may never have landed): it may be off, and must not be
		// offered work.
		{name: "powering on, not up", rec: store.Node{State: fleet.StatePoweringOn, Since: t0, Intent: intent(fleet.PowerOn), DrainedByRota: true}, want: fleet.StatePoweringOn, stays: true,
			world: func(s *executortest.Server) { s.Power, s.Responding = bmc.StateOff, false }},
		{name: "booting, unknown to the job manager", rec: store.Node{State: fleet.StateBooting, Since: t0, Intent: intent(fleet.PowerOn), DrainedByRota: true}, want: fleet.StateBooting, stays: true,
			world: func(s *executortest.Server) { s.Unmanaged = true }},
		// A boot past its timeout (Failed) that came up after all, as repair takes one in the
		// config back to On.
		{name: "failed, up", rec: store.Node{State: fleet.StateFailed, Since: t0, DrainedByRota: true, Failures: 1, FailedKind: fleet.PowerOn}, want: fleet.StateOn, sent: resumed},
		{name: "failed, not up", rec: store.Node{State: fleet.StateFailed, Since: t0, DrainedByRota: true, Failures: 1, FailedKind: fleet.PowerOn}, want: fleet.StateFailed, stays: true,
			world: func(s *executortest.Server) { s.Power, s.Responding = bmc.StateOff, false }},
		{name: "booting, pinned", rec: store.Node{State: fleet.StateBooting, Since: t0, Intent: intent(fleet.PowerOn), DrainedByRota: true, Pinned: true}, want: fleet.StateBooting, stays: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t, true, func(cfg *config.Config) { cfg.Pools[0].Nodes = cfg.Pools[0].Nodes[:1] })
			f.world.Add("cpu02", executortest.Server{Power: bmc.StateOn, Responding: true, Drained: true, DrainedByRota: true})
			if c.world != nil {
				f.world.Set("cpu02", c.world)
			}
			f.put("cpu02", c.rec)
			f.repair()
			f.repair()
			if n := f.node("cpu02"); n.State != c.want {
				t.Errorf("record %+v, want %s", n, c.want)
			}
			if got := f.world.Commands(); !slices.Equal(got, c.sent) {
				t.Errorf("sent %v, want %v", got, c.sent)
			}
			if drained := f.world.Get("cpu02").Drained; drained != c.stays {
				t.Errorf("drained in the job manager: %t, want %t", drained, c.stays)
			}
		})
	}
}

// A move left unfinished (a crash between Slurm's requeuehold and release, or a release that
// failed: the work it took off the server waits, held) on a server that has left the config
// since is finished before rota's drain is given back: repair gave the drain back and dropped
// the move, and the work stayed held for good.
func TestRepairFinishesAMoveOnAServerThatLeftTheConfig(t *testing.T) {
	f := newFx(t, true, func(cfg *config.Config) { cfg.Pools[0].Nodes = cfg.Pools[0].Nodes[:1] })
	f.world.Add("cpu02", executortest.Server{Power: bmc.StateOn, Responding: true, Drained: true, DrainedByRota: true, Held: []string{"7"}, MoveUnfinished: 1})
	plan := &fleet.MovePlan{Jobs: []string{"7"}, Exclude: []string{"cpu02"}, Drain: true}
	f.put("cpu02", store.Node{State: fleet.StateDraining, Since: t0, DrainedByRota: true,
		Intent: &store.Intent{Kind: fleet.Move, Reason: fleet.ReasonRebalance, Started: t0, Attempt: 1, Move: plan}})
	f.repair() // the release fails again: the move stays in flight, the drain with it
	if s, n := f.world.Get("cpu02"), f.node("cpu02"); len(s.Held) != 1 || !s.Drained || n.Intent == nil {
		t.Fatalf("after a release that failed: world %+v, store %+v; want the job held, the move in flight", s, n)
	}
	f.repair() // the move finishes
	f.repair() // the drain is given back
	if s := f.world.Get("cpu02"); len(s.Held) != 0 || s.Drained {
		t.Errorf("world %+v: want the job let go and the drain given back", s)
	}
	if n := f.node("cpu02"); n.State != fleet.StateOn || n.Intent != nil || n.DrainedByRota {
		t.Errorf("record %+v, want On, nothing in flight", n)
	}
}
