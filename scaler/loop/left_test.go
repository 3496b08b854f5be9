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
// it is pinned, or this rota does not lead; a restart does not bring it back.
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
		{"old01", "pinned or in maintenance"},
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
		if _, err := f.loop.Explain(ctx, "cpu01"); !errors.Is(err, api.ErrUnknownNode) {
			t.Errorf("%s: explain cpu01: %v, want ErrUnknownNode", when, err)
		}
	}
	listed("after the forget")
	f.restart(nil)
	f.pass()
	listed("after a restart and a pass")
}
