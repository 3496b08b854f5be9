package loop

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

// A server taken out of the config while rota's drain held it is still in the store, and the
// executor gives the drain back; status and explain showed nothing of it (status listed the
// config's servers alone, explain answered "no such node"), so the operator could not see it.
// They show its record and what rota does with it, before a pass (from the store), after one,
// and once it is settled.
func TestServersThatLeftTheConfigAreShown(t *testing.T) {
	f := newFx(t, nil, nil)
	f.propose = []fleet.Action{act(fleet.Drain, "cpu01", "cpu", fleet.ReasonIdle)}
	f.pass()
	if s := f.state("cpu01"); s != fleet.StateDraining {
		t.Fatalf("cpu01 is %s after rota's drain, want draining", s)
	}
	// cpu01 leaves the inventory; rota restarts on the new config.
	f.cfg = executortest.Config(t, func(c *config.Config) {
		c.Pools[0].Nodes = slices.DeleteFunc(c.Pools[0].Nodes, func(n config.Node) bool { return n.Name == "cpu01" })
	})
	f.propose = nil
	f.restart(nil)
	ctx := context.Background()
	left := func(when, wantNote string, wantState fleet.State) {
		t.Helper()
		st, err := f.loop.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got *api.NodeStatus
		for i, n := range st.Nodes {
			if n.Name == "cpu01" {
				got = &st.Nodes[i]
			}
		}
		switch {
		case got == nil:
			t.Fatalf("%s: status does not list cpu01: %+v", when, st.Nodes)
		case got.State != wantState || got.Pool != "" || !strings.Contains(got.LeftConfig, "not in the config any more") || !strings.Contains(got.LeftConfig, wantNote):
			t.Errorf("%s: cpu01 %+v, want %s, in no pool, its note saying %q", when, *got, wantState, wantNote)
		}
		if p := st.Pools[0]; p.Name != "cpu" || p.Servers != 1 {
			t.Errorf("%s: pool %+v counts a server that left it", when, p)
		}
		ex, err := f.loop.Explain(ctx, "cpu01")
		if err != nil {
			t.Fatalf("%s: explain cpu01: %v", when, err)
		}
		if ex.Node.LeftConfig != got.LeftConfig || ex.Node.State != wantState || len(ex.History) == 0 || ex.History[0].Node != "cpu01" {
			t.Errorf("%s: explain cpu01 %+v, want its record, note and history", when, ex)
		}
	}
	left("before a pass", "gives its drain back", fleet.StateDraining)
	f.pass() // the executor gives the drain back (giveBackLeft)
	left("after the pass", "leaves it as it is (it no longer reads its BMC nor powers it off); rotactl forget drops this record", fleet.StateOn)
	if _, err := f.loop.Explain(ctx, "cpu99"); !errors.Is(err, api.ErrUnknownNode) {
		t.Errorf("explain of a server rota never had: %v, want ErrUnknownNode", err)
	}
}

// A server that left the config stayed in status for good: nothing deleted its record. Forget
// deletes it once rota has settled it, audited with who forgot it and its last state, and
// refuses, changing nothing, while it is in the config, rota's drain on it is not given back,
// it is pinned (saying to unpin it), or this rota does not lead; a restart does not bring it
// back, and explain shows its history with the forget.
func TestForgetASettledServerThatLeftTheConfig(t *testing.T) {
	f := newFx(t, nil, nil)
	f.propose = []fleet.Action{act(fleet.Drain, "cpu01", "cpu", fleet.ReasonIdle)}
	f.pass()
	f.cfg = executortest.Config(t, func(c *config.Config) {
		c.Pools[0].Nodes = slices.DeleteFunc(c.Pools[0].Nodes, func(n config.Node) bool { return n.Name == "cpu01" })
	})
	f.propose = nil
	f.restart(nil)
	if err := f.st.UpdateNode("old01", func(n *store.Node) error {
		*n = store.Node{State: fleet.StateOff, Since: t0, Pinned: true, PinNote: "bob"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	inConfig := f.cfg.Pools[0].Nodes[0].Name
	lead := &leadership{leading: false, leader: "rota-b"}
	f.loop.o.Leadership = lead
	var nl *api.NotLeaderError
	if _, err := f.loop.Forget(ctx, "cpu01", "alice"); !errors.As(err, &nl) {
		t.Errorf("forget on a follower: %v, want NotLeaderError", err)
	}
	lead.set(true, "rota-a")
	for _, tc := range []struct{ node, want string }{
		{"cpu01", "rota has not settled it: not in the config any more: rota gives its drain back"},
		{inConfig, "it is in the config"},
		{"old01", "it is pinned, which rota keeps as it is: unpin it first (rotactl unpin old01)"},
	} {
		var kept *api.KeptError
		if _, err := f.loop.Forget(ctx, tc.node, "alice"); !errors.As(err, &kept) || !strings.Contains(kept.Why, tc.want) {
			t.Errorf("forget %s: %v, want a record kept saying %q", tc.node, err, tc.want)
		}
	}
	if _, err := f.loop.Forget(ctx, "cpu99", "alice"); !errors.Is(err, api.ErrUnknownNode) {
		t.Errorf("forget of a server rota never had: %v, want ErrUnknownNode", err)
	}
	if s := f.state("cpu01"); s != fleet.StateDraining {
		t.Fatalf("cpu01 is %q after the refused forgets, want its record as it was (draining)", s)
	}
	f.pass() // rota's drain given back: settled
	got, err := f.loop.Forget(ctx, "cpu01", "alice: decommissioned")
	if err != nil || got.Name != "cpu01" || got.State != fleet.StateOn {
		t.Fatalf("forget cpu01 once settled: %+v, %v; want its last record (on)", got, err)
	}
	hist, err := f.st.Audit("cpu01", 1)
	if err != nil || len(hist) != 1 || hist[0].Action != store.Forgotten || !strings.Contains(hist[0].Detail, "alice: decommissioned") || !strings.Contains(hist[0].Detail, "it was on since") {
		t.Errorf("cpu01's last audit record %+v, %v; want the forget with who and its last state", hist, err)
	}
	listed := func(when string) {
		t.Helper()
		st, err := f.loop.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range st.Nodes {
			if n.Name == "cpu01" {
				t.Errorf("%s: status still lists cpu01: %+v", when, n)
			}
		}
		// Its history stays: explain shows it, and the forget, where it said "no such node".
		ex, err := f.loop.Explain(ctx, "cpu01")
		switch {
		case err != nil:
			t.Errorf("%s: explain cpu01: %v, want its history and forget", when, err)
		case ex.Forgotten == nil || len(ex.History) < 2 || ex.History[0] != *ex.Forgotten || ex.History[1].Action != fleet.Resume:
			t.Errorf("%s: explain cpu01 %+v, want the forget newest in its history, the drain given back before", when, ex)
		case ex.Node.Name != "cpu01" || ex.Node.State != "" || ex.Node.LeftConfig != "" || !strings.Contains(ex.Forgotten.Detail, "alice: decommissioned"):
			t.Errorf("%s: explain cpu01 %+v, forgotten %+v; want its name alone and the forget saying who", when, ex.Node, *ex.Forgotten)
		}
	}
	listed("after the forget")
	f.restart(nil)
	f.pass()
	listed("after a restart and a pass")
}

// A server pinned or in maintenance when it left the config could never be forgotten: unpin
// and maintenance off refused it (not in the config), and forget's refusal said to put it back
// in the config first. Both now clear the flag of a server the store holds a record of, as the
// leader alone; pin and maintenance on stay refused (rota manages it no longer), and a name
// without a record gets none. The next pass then settles each as any server that left the
// config (a drain of rota's given back, one booting left on once it responds, one off left as
// it is) without a power command, and each can be forgotten.
func TestEndTheHandsOffOfAServerThatLeftTheConfig(t *testing.T) {
	f := newFx(t, nil, nil)
	f.propose = []fleet.Action{act(fleet.Drain, "cpu01", "cpu", fleet.ReasonIdle)}
	f.pass()
	ctx := context.Background()
	if err := f.loop.SetPinned(ctx, "cpu01", true, "bob: bios"); err != nil {
		t.Fatal(err)
	}
	f.world.Set("gpu01", func(s *executortest.Server) { s.Drained, s.DrainedByRota = true, true })
	seed := map[string]store.Node{
		"gpu01": {State: fleet.StateBooting, Since: t0, DrainedByRota: true, Maintenance: true, MaintenanceNote: "carol: cabling"},
		"old01": {State: fleet.StateOff, Since: t0, Maintenance: true, MaintenanceNote: "carol: racks"},
	}
	for name, rec := range seed {
		if err := f.st.UpdateNode(name, func(n *store.Node) error { *n = rec; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	f.cfg = executortest.Config(t, func(c *config.Config) {
		for i := range c.Pools {
			c.Pools[i].Nodes = slices.DeleteFunc(c.Pools[i].Nodes, func(n config.Node) bool { return n.Name == "cpu01" || n.Name == "gpu01" })
		}
	})
	f.propose = nil
	f.restart(nil)
	f.pass()
	for name, want := range map[string]fleet.State{"cpu01": fleet.StateDraining, "gpu01": fleet.StateBooting, "old01": fleet.StateOff} {
		if s := f.state(name); s != want {
			t.Fatalf("%s is %s after a pass while held, want it left as it is (%s)", name, s, want)
		}
	}
	before := len(f.world.Commands())
	for _, tc := range []struct{ node, want string }{
		{"cpu01", "it is pinned, which rota keeps as it is: unpin it first (rotactl unpin cpu01)"},
		{"gpu01", "it is in maintenance, which rota keeps as it is: take it out of maintenance first (rotactl maintenance gpu01 off)"},
	} {
		var kept *api.KeptError
		if _, err := f.loop.Forget(ctx, tc.node, "alice"); !errors.As(err, &kept) || !strings.Contains(kept.Why, tc.want) {
			t.Errorf("forget %s: %v, want a record kept saying %q", tc.node, err, tc.want)
		}
	}
	// Rota manages them no longer: no new hands-off, and no record made for a name it never had.
	if err := f.loop.SetMaintenance(ctx, "cpu01", true, "alice"); !errors.Is(err, api.ErrUnknownNode) {
		t.Errorf("maintenance on of a server that left the config: %v, want ErrUnknownNode", err)
	}
	if err := f.loop.SetPinned(ctx, "old01", true, "alice"); !errors.Is(err, api.ErrUnknownNode) {
		t.Errorf("pin of a server that left the config: %v, want ErrUnknownNode", err)
	}
	for _, set := range []func(context.Context, string, bool, string) error{f.loop.SetPinned, f.loop.SetMaintenance} {
		if err := set(ctx, "cpu99", false, "alice"); !errors.Is(err, api.ErrUnknownNode) {
			t.Errorf("clearing a flag of a server rota never had: %v, want ErrUnknownNode", err)
		}
	}
	if recs, err := f.st.Nodes(); err != nil || recs["cpu99"].State != "" || recs["cpu01"].Maintenance || recs["old01"].Pinned {
		t.Fatalf("records after the refusals: %+v, %v; want them as they were, none for cpu99", recs, err)
	}
	lead := &leadership{leading: false, leader: "rota-b"}
	f.loop.o.Leadership = lead
	var nl *api.NotLeaderError
	if err := f.loop.SetPinned(ctx, "cpu01", false, "alice"); !errors.As(err, &nl) {
		t.Errorf("unpin on a follower: %v, want NotLeaderError", err)
	}
	if n, err := f.st.Node("cpu01"); err != nil || !n.Pinned {
		t.Fatalf("cpu01 after the follower's unpin: %+v, %v; want it pinned still", n, err)
	}
	lead.set(true, "rota-a")
	if err := f.loop.SetPinned(ctx, "cpu01", false, "alice"); err != nil {
		t.Fatalf("unpin cpu01: %v", err)
	}
	for _, name := range []string{"gpu01", "old01"} {
		if err := f.loop.SetMaintenance(ctx, name, false, "alice"); err != nil {
			t.Fatalf("maintenance %s off: %v", name, err)
		}
	}
	ex, err := f.loop.Explain(ctx, "cpu01")
	if err != nil || ex.Node.Pinned || ex.Node.PinNote != "" || !strings.Contains(ex.Node.LeftConfig, "gives its drain back") {
		t.Errorf("explain cpu01 once unpinned: %+v, %v; want unpinned, its drain given back next", ex.Node, err)
	}
	f.pass()
	for name, want := range map[string]fleet.State{"cpu01": fleet.StateOn, "gpu01": fleet.StateOn, "old01": fleet.StateOff} {
		if s := f.state(name); s != want {
			t.Errorf("%s is %s after the pass, want %s", name, s, want)
		}
	}
	for _, c := range f.world.Commands()[before:] {
		if c.Op != "resume" {
			t.Errorf("the pass after the hands-off ended sent %s to %s; want drains given back alone, no power command", c.Op, c.Node)
		}
	}
	for _, name := range []string{"cpu01", "gpu01"} {
		if s := f.world.Get(name); s.Drained {
			t.Errorf("%s still drained after the pass: %+v", name, s)
		}
	}
	for _, name := range []string{"cpu01", "gpu01", "old01"} {
		if _, err := f.loop.Forget(ctx, name, "alice: decommissioned"); err != nil {
			t.Errorf("forget %s once settled: %v", name, err)
		}
	}
}
