package loop

import (
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// A refused move reaches the audit history once, when it first appears or its rule changes,
// not every pass.
func TestMoveRefusalsAudited(t *testing.T) {
	var reason fleet.Reason = fleet.SkipNotRequeueable
	f := newFx(t, nil, func(fleet.Snapshot, *config.Config, time.Time) fleet.Decision {
		return fleet.Decision{Skips: []fleet.Skip{{Node: "gpu01", Pool: "gpu", Reason: reason, Detail: "job 7 is not requeueable"}}}
	})
	count := func() int {
		recs, err := f.st.Audit("gpu01", 10)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range recs {
			if r.Action == fleet.Move && r.Result == auditRefused {
				n++
			}
		}
		return n
	}
	f.pass()
	f.pass()
	if n := count(); n != 1 {
		t.Fatalf("%d refusals audited after two passes, want 1", n)
	}
	reason = fleet.SkipMoveSaving
	f.pass()
	if n := count(); n != 2 {
		t.Fatalf("%d refusals audited after the rule changed, want 2", n)
	}
}
