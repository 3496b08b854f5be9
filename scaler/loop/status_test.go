package loop

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	bolt "go.etcd.io/bbolt"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

// Dry run: the plan is made, exported and audited, and nothing is sent.
func TestDryRunPassIsVisibleAndInert(t *testing.T) {
	f := newFx(t, func(c *config.Config) { c.Policy.DryRun = true }, nil)
	f.propose = []fleet.Action{act(fleet.Drain, "gpu01", "gpu", fleet.ReasonIdle), act(fleet.Drain, "cpu01", "cpu", fleet.ReasonIdle)}
	f.pass()
	if cmds := f.world.Commands(); len(cmds) != 0 {
		t.Errorf("dry run sent %v", cmds)
	}
	m := f.loop.metrics
	if testutil.ToFloat64(m.dryRun) != 1 || testutil.ToFloat64(m.wouldSave) != 24+1.5 {
		t.Errorf("dry_run %v, would save %v; want 1, 25.5", testutil.ToFloat64(m.dryRun), testutil.ToFloat64(m.wouldSave))
	}
	if got := testutil.ToFloat64(m.decisions.WithLabelValues("drain", "idle", "gpu")); got != 1 {
		t.Errorf("dry-run decision counted %v, want 1", got)
	}
	ex, err := f.loop.Explain(context.Background(), "gpu01")
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.History) != 1 || ex.History[0].Result != "dry_run" {
		t.Errorf("history %+v, want one dry_run record", ex.History)
	}
	if st, _ := f.loop.Status(context.Background()); !st.DryRun {
		t.Error("status does not say dry run")
	}
}

// A store that cannot be read fails the pass, visibly, and nothing is done.
func TestUnreadableStoreFailsThePass(t *testing.T) {
	f := newFx(t, nil, nil)
	f.pass()
	if err := f.st.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(f.path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("nodes")).Put([]byte("cpu01"), []byte("{garbage")) })
	if cerr := db.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	f.build(nil)
	f.propose = []fleet.Action{act(fleet.Drain, "gpu01", "gpu", fleet.ReasonIdle)}
	if err := f.loop.runPass(context.Background()); err == nil {
		t.Fatal("a pass over a corrupt store succeeded")
	}
	f.ex.Wait()
	if cmds := f.world.Commands(); len(cmds) != 0 {
		t.Errorf("commands sent: %v", cmds)
	}
	st, _ := f.loop.Status(context.Background())
	if st.LastPassOK || !strings.Contains(st.LastError, `bucket "nodes" key "cpu01"`) {
		t.Errorf("status %+v, want the failure naming the bad record", st)
	}
	if got := testutil.ToFloat64(f.loop.metrics.passes.WithLabelValues("error")); got != 1 {
		t.Errorf("failed passes counted %v, want 1", got)
	}
}

// The API shows the store's audit record field for field, in the same JSON (its own type, so
// the store's format and the API's can change apart), and no history as none.
func TestHistoryAsTheAPIShowsIt(t *testing.T) {
	r := store.AuditRecord{Time: t0, Node: "gpu01", Pool: "gpu", Action: fleet.PowerOff, Reason: fleet.ReasonDrained,
		Detail: "drained", Result: "failed", Error: "bmc refused"}
	want, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(history([]store.AuditRecord{r})[0])
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("API record %s, want the store's %s", got, want)
	}
	if h := history(nil); h != nil {
		t.Errorf("no history shown as %#v, want nil", h)
	}
}
