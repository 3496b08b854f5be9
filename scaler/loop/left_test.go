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
	left("after the pass", "leaves it as it is", fleet.StateOn)
	if _, err := f.loop.Explain(ctx, "cpu99"); !errors.Is(err, api.ErrUnknownNode) {
		t.Errorf("explain of a server rota never had: %v, want ErrUnknownNode", err)
	}
}
