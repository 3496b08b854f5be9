package loop

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
)

// Status shows an action under way as the executor records it, not as the pass that started it
// saw the server: a power-on waiting on its BMC reads powering on, with the action, and the
// pool counts the server powered.
func TestStatusShowsTheActionInFlight(t *testing.T) {
	f := newFx(t, nil, nil)
	f.world.Set("gpu01", func(s *executortest.Server) { s.Power, s.Responding = bmc.StateOff, false })
	f.pass()
	if got := f.state("gpu01"); got != fleet.StateOff {
		t.Fatalf("gpu01 recorded %s, want off", got)
	}
	f.world.Set("gpu01", func(s *executortest.Server) { s.Hangs = true })
	f.propose = []fleet.Action{act(fleet.PowerOn, "gpu01", "gpu", fleet.ReasonBacklog)}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); f.ex.Wait() }()
	if err := f.loop.runPass(ctx); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "gpu01's power-on recorded", func() error {
		n, err := f.st.Node("gpu01")
		if err != nil || n.Intent == nil {
			return errors.Join(err, errors.New("no intent yet"))
		}
		return nil
	})
	st, err := f.loop.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got api.NodeStatus
	for _, n := range st.Nodes {
		if n.Name == "gpu01" {
			got = n
		}
	}
	if got.State != fleet.StatePoweringOn || got.InFlight == nil || got.InFlight.Kind != fleet.PowerOn ||
		got.InFlight.Reason != fleet.ReasonBacklog || got.InFlight.Since.IsZero() {
		t.Errorf("gpu01 in status: %s, in flight %+v; want powering on, the backlog's power-on", got.State, got.InFlight)
	}
	for _, p := range st.Pools {
		if p.Name == "gpu" && p.Powered != p.Servers {
			t.Errorf("pool gpu: %d of %d powered; gpu01 powering on counts", p.Powered, p.Servers)
		}
	}
	ex, err := f.loop.Explain(context.Background(), "gpu01")
	if err != nil {
		t.Fatal(err)
	}
	if ex.Node.State != fleet.StatePoweringOn || ex.Node.InFlight == nil || ex.Node.InFlight.Kind != fleet.PowerOn {
		t.Errorf("gpu01 explained: %s, in flight %+v", ex.Node.State, ex.Node.InFlight)
	}
	for _, n := range st.Nodes {
		if n.Name != "gpu01" && n.InFlight != nil {
			t.Errorf("%s shows %+v in flight", n.Name, n.InFlight)
		}
	}
}
