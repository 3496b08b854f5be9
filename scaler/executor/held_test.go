package executor

import (
	"context"
	"testing"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
)

// The last check before a power-off asks the planner's own rule (fleet.PowerOffBlock) of a
// fresh read: a server the job manager no longer lists, or whose drain was lifted since the
// plan, is not known to be empty and is not powered off; nor is one a person took over since
// (their drain, down or cordon over rota's). With no job manager (adapter none)
// nothing in the job manager's view holds it.
func TestPowerOffHeldUnlessTheJobManagerShowsItEmpty(t *testing.T) {
	cases := []struct {
		name    string
		adapter string
		change  func(*executortest.Server)
		off     bool
	}{
		{name: "drained and empty", adapter: "exec", change: func(*executortest.Server) {}, off: true},
		{name: "no longer listed", adapter: "exec", change: func(s *executortest.Server) { s.Unmanaged = true }},
		{name: "drain lifted", adapter: "exec", change: func(s *executortest.Server) { s.Drained, s.DrainedByRota = false, false }},
		{name: "drain taken over by a person", adapter: "exec", change: func(s *executortest.Server) { s.DrainedByRota = false }},
		{name: "no job manager", adapter: "none", change: func(s *executortest.Server) { s.Unmanaged = true }, off: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFx(t, true, func(c *config.Config) { c.Jobs.Adapter = tc.adapter })
			f.draining("cpu01")
			f.world.Set("cpu01", tc.change)
			err := f.ex.run(context.Background(), act(fleet.PowerOff, "cpu01"))
			sent := len(f.world.Commands()) > 0
			if sent != tc.off || (err == nil) != tc.off {
				t.Fatalf("power-off sent %v (err %v), want sent %v", sent, err, tc.off)
			}
			if tc.off {
				return
			}
			if n := f.node("cpu01"); n.State != fleet.StateDraining || n.Intent != nil {
				t.Errorf("held node recorded as %+v, want Draining without intent", n)
			}
			if r := f.lastAudit("cpu01"); r != auditFailed {
				t.Errorf("audit result %q, want %q", r, auditFailed)
			}
		})
	}
}
