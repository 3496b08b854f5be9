// Package storetest holds the checks every store.Backend must pass, run by each backend's
// tests (the bbolt file in package store, etcd in package etcdstore): what one keeps, the
// other keeps the same way.
package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/cost"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/learn"
	"github.com/rotahq/rota/scaler/store"
)

// Open returns a new, empty store over the backend under test, closed at cleanup.
type Open func(t *testing.T, ret store.Retention) *store.Store

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// Run runs every check against open's backend.
func Run(t *testing.T, open Open) {
	t.Run("records round trip", func(t *testing.T) { roundTrip(t, open) })
	t.Run("a transaction reads its own writes", func(t *testing.T) { ownWrites(t, open) })
	t.Run("a failed update writes nothing", func(t *testing.T) { failedUpdate(t, open) })
	t.Run("audit newest first with retention", func(t *testing.T) { auditRetention(t, open) })
	t.Run("updates are serialised", func(t *testing.T) { serialised(t, open) })
	t.Run("copy both ways and backup", func(t *testing.T) { copies(t, open) })
	t.Run("an empty record is damaged, not missing", func(t *testing.T) { emptyRecord(t, open) })
	t.Run("a deleted record is gone, its audit kept", func(t *testing.T) { deleted(t, open) })
}

// names are node names a key layout must keep apart.
var names = []string{"cpu01", "gpu/01", "a b", "a", "a0", "a-b", "nœud%2F"}

func fill(t *testing.T, s *store.Store) map[string]store.Node {
	t.Helper()
	want := map[string]store.Node{}
	for i, n := range names {
		rec := store.Node{State: fleet.StateOn, Since: t0.Add(time.Duration(i) * time.Minute), PinNote: n}
		if i%2 == 1 {
			rec = store.Node{State: fleet.StatePoweringOff, Since: t0, DrainedByRota: true,
				Intent: &store.Intent{Kind: fleet.PowerOff, Reason: fleet.ReasonDrained, Started: t0, Attempt: i}}
		}
		if err := s.UpdateNode(n, func(r *store.Node) error { *r = rec; return nil }); err != nil {
			t.Fatal(err)
		}
		want[n] = rec
		for j := range i + 1 {
			if err := s.AppendAudit(record(n, t0.Add(time.Duration(j)*time.Second), "started")); err != nil {
				t.Fatal(err)
			}
		}
	}
	g := store.Global{Paused: true, PauseNote: "bob", LastScaleUp: map[string]time.Time{"gpu": t0}, PowerOffs: []time.Time{t0}}
	if err := s.UpdateGlobal(func(r *store.Global) error { *r = g; return nil }); err != nil {
		t.Fatal(err)
	}
	var stats learn.Stats
	for m := range 90 {
		stats.Observe(t0.Add(time.Duration(m)*time.Minute), map[string]int{"gpu": m % 5})
	}
	stats.ObserveBoot("gpu", 4*time.Minute)
	if err := s.PutLearned(stats, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutBooks(store.Books{At: t0, Counters: []cost.Counter{{Family: "x", Labels: []string{"cpu"}, Value: 1.5}}}); err != nil {
		t.Fatal(err)
	}
	return want
}

func record(node string, at time.Time, result string) store.AuditRecord {
	return store.AuditRecord{Time: at, Node: node, Pool: "gpu", Action: fleet.PowerOff, Reason: fleet.ReasonDrained, Result: result}
}

// same fails unless b holds what fill wrote to a.
func same(t *testing.T, a, b *store.Store) {
	t.Helper()
	na, err := a.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	nb, err := b.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(na, nb) {
		t.Errorf("nodes differ:\n%+v\n%+v", na, nb)
	}
	ga, _ := a.Global()
	gb, err := b.Global()
	if err != nil || !reflect.DeepEqual(ga, gb) {
		t.Errorf("global differs: %+v, %+v (%v)", ga, gb, err)
	}
	la, _, _ := a.Learned([]string{"gpu"})
	lb, bad, err := b.Learned([]string{"gpu"})
	if err != nil || bad != nil || la.Pools["gpu"] == nil || !reflect.DeepEqual(la, lb) {
		t.Errorf("what was learned differs (%v, %v)", bad, err)
	}
	ba, _ := a.Books()
	bb, err := b.Books()
	if err != nil || len(bb.Counters) != 1 || !reflect.DeepEqual(ba, bb) {
		t.Errorf("the books differ: %+v, %+v (%v)", ba, bb, err)
	}
	for _, n := range names {
		ha, _ := a.Audit(n, 0)
		hb, err := b.Audit(n, 0)
		if err != nil || !reflect.DeepEqual(ha, hb) || len(hb) == 0 {
			t.Errorf("audit of %q differs: %d and %d records (%v)", n, len(ha), len(hb), err)
		}
	}
}

func roundTrip(t *testing.T, open Open) {
	s := open(t, store.Retention{})
	want := fill(t, s)
	got, err := s.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Nodes() = %+v\nwant %+v", got, want)
	}
	for n, w := range want {
		if r, err := s.Node(n); err != nil || !reflect.DeepEqual(r, w) {
			t.Errorf("Node(%q) = %+v, %v; want %+v", n, r, err, w)
		}
		if h, err := s.Audit(n, 0); err != nil || len(h) != indexOf(n)+1 {
			t.Errorf("Audit(%q) has %d records, %v; want %d", n, len(h), err, indexOf(n)+1)
		}
	}
	if r, err := s.Node("nobody"); err != nil || r.State != "" {
		t.Errorf("Node(absent) = %+v, %v; want zero", r, err)
	}
	if h, err := s.Audit("nobody", 0); err != nil || len(h) != 0 {
		t.Errorf("Audit(absent) = %v, %v", h, err)
	}
}

func indexOf(n string) int {
	for i, m := range names {
		if m == n {
			return i
		}
	}
	return -1
}

func ownWrites(t *testing.T, open Open) {
	s := open(t, store.Retention{Keep: 2})
	err := s.Update(func(tx *store.Tx) error {
		if err := tx.PutNode("n1", store.Node{State: fleet.StateOff, Since: t0}); err != nil {
			return err
		}
		n, err := tx.Node("n1")
		if err != nil || n.State != fleet.StateOff {
			return fmt.Errorf("node after PutNode = %+v, %v", n, err)
		}
		all, err := tx.Nodes()
		if err != nil || len(all) != 1 {
			return fmt.Errorf("nodes after PutNode = %+v, %v", all, err)
		}
		for i := range 3 {
			if err := tx.AppendAudit(record("n1", t0.Add(time.Duration(i)), "started")); err != nil {
				return err
			}
		}
		h, err := tx.Audit("n1", 0)
		if err != nil || len(h) != 2 || !h[0].Time.Equal(t0.Add(2)) {
			return fmt.Errorf("audit after three appends, keeping 2 = %+v, %v", h, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if h, err := s.Audit("n1", 0); err != nil || len(h) != 2 {
		t.Errorf("committed audit = %+v, %v; want 2", h, err)
	}
}

func failedUpdate(t *testing.T, open Open) {
	s := open(t, store.Retention{})
	boom := errors.New("boom")
	err := s.Update(func(tx *store.Tx) error {
		if err := tx.PutNode("n1", store.Node{State: fleet.StateOn}); err != nil {
			return err
		}
		if err := tx.AppendAudit(record("n1", t0, "started")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if n, _ := s.Node("n1"); n.State != "" {
		t.Errorf("a failed update left %+v", n)
	}
	if h, _ := s.Audit("n1", 0); len(h) != 0 {
		t.Errorf("a failed update left audit %+v", h)
	}
}

func auditRetention(t *testing.T, open Open) {
	cases := []struct {
		name     string
		ret      store.Retention
		appended []store.AuditRecord
		want     []store.AuditRecord // newest first
	}{
		{"keeps newest N",
			store.Retention{Keep: 2},
			[]store.AuditRecord{record("a", t0, "started"), record("a", t0.Add(1), "succeeded"), record("a", t0.Add(2), "started")},
			[]store.AuditRecord{record("a", t0.Add(2), "started"), record("a", t0.Add(1), "succeeded")}},
		{"drops older than max age",
			store.Retention{Keep: 10, MaxAge: 24 * time.Hour},
			[]store.AuditRecord{record("a", t0, "started"), record("a", t0.Add(23*time.Hour), "started"), record("a", t0.Add(25*time.Hour), "failed")},
			[]store.AuditRecord{record("a", t0.Add(25*time.Hour), "failed"), record("a", t0.Add(23*time.Hour), "started")}},
		{"nodes are apart",
			store.Retention{Keep: 1},
			[]store.AuditRecord{record("a", t0, "started"), record("a0", t0.Add(1), "started"), record("a/b", t0.Add(2), "started")},
			[]store.AuditRecord{record("a", t0, "started")}},
	}
	// More records than one read of a walk fetches, some pruned.
	long := store.Retention{Keep: 150}
	var appended, want []store.AuditRecord
	for i := range 200 {
		appended = append(appended, record("a", t0.Add(time.Duration(i)*time.Second), "started"))
	}
	for i := 199; i >= 50; i-- {
		want = append(want, appended[i])
	}
	cases = append(cases, struct {
		name     string
		ret      store.Retention
		appended []store.AuditRecord
		want     []store.AuditRecord
	}{"a long log", long, appended, want})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := open(t, c.ret)
			for _, r := range c.appended {
				if err := s.AppendAudit(r); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.Audit("a", 0)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Audit(a) = %d records %+v\nwant %d", len(got), got, len(c.want))
			}
			if one, _ := s.Audit("a", 1); len(one) != 1 || !reflect.DeepEqual(one[0], c.want[0]) {
				t.Errorf("Audit(a, 1) = %+v, want the newest only", one)
			}
		})
	}
}

func serialised(t *testing.T, open Open) {
	s := open(t, store.Retention{})
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.UpdateGlobal(func(g *store.Global) error {
				g.PowerOffs = append(g.PowerOffs, t0)
				return nil
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if g, err := s.Global(); err != nil || len(g.PowerOffs) != n {
		t.Errorf("%d concurrent updates left %d power-offs (%v): an update was lost", n, len(g.PowerOffs), err)
	}
}

func bolt(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(filepath.Join(t.TempDir(), "rota.db"), store.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func copies(t *testing.T, open Open) {
	src := open(t, store.Retention{})
	fill(t, src)
	out := bolt(t)
	n, err := store.Copy(out, src)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(names) + 1 + 1 + 1 + len(names)*(len(names)+1)/2; n != want { // nodes, global, learned, books, audit
		t.Errorf("copied %d records and entries, want %d", n, want)
	}
	same(t, src, out)
	back := open(t, store.Retention{})
	if _, err := store.Copy(back, out); err != nil {
		t.Fatal(err)
	}
	same(t, out, back)
	if _, err := store.Copy(back, out); err == nil {
		t.Error("a copy into a store holding records succeeded")
	}

	var buf bytes.Buffer
	if _, err := src.Backup(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	same(t, src, b)
}

// emptyRecord: a record whose value is empty (a damaged write, a hand's etcdctl put) is a
// *store.RecordError where it is read, and UpdateNode does not write over it: read as a record
// never written, the update would replace it with a new one and lose what it held (here, the
// node's maintenance).
func emptyRecord(t *testing.T, open Open) {
	s := open(t, store.Retention{})
	if err := s.UpdateNode("gpu01", func(n *store.Node) error {
		n.State, n.Since, n.Maintenance, n.MaintenanceNote = fleet.StateOff, t0, true, "alice: PSU swap"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The store's bucket of node records, written under it as a backend's damage would be.
	const nodes = "nodes"
	if err := s.Backend().Update(func(kv store.KV) error { return kv.Put(nodes, "gpu01", []byte{}) }); err != nil {
		t.Fatal(err)
	}
	var re *store.RecordError
	if n, err := s.Node("gpu01"); !errors.As(err, &re) {
		t.Errorf("Node over an empty record = %+v, %v; want a *store.RecordError", n, err)
	}
	if _, err := s.Nodes(); !errors.As(err, &re) {
		t.Errorf("Nodes over an empty record: %v; want a *store.RecordError", err)
	}
	called := false
	err := s.UpdateNode("gpu01", func(n *store.Node) error { called, n.State = true, fleet.StateOn; return nil })
	if !errors.As(err, &re) || called {
		t.Errorf("UpdateNode over an empty record: %v (its function called: %v); want a *store.RecordError, not called", err, called)
	}
	err = s.View(func(tx *store.Tx) error {
		_, err := tx.Node("gpu01")
		return err
	})
	if !errors.As(err, &re) {
		t.Errorf("after the refused update: %v; want the record still empty", err)
	}
	if n, err := s.Node("nobody"); err != nil || n.State != "" {
		t.Errorf("Node(absent) = %+v, %v; want zero, no error", n, err)
	}
}

// deleted: a node's record deleted is gone from reads in the transaction and after it, the
// other records and its audit log as they were; a put after the delete in one transaction
// writes the record again; a failed transaction deletes nothing.
func deleted(t *testing.T, open Open) {
	s := open(t, store.Retention{})
	want := fill(t, s)
	gone, back := names[1], names[2]
	boom := errors.New("boom")
	if err := s.Update(func(tx *store.Tx) error {
		if err := tx.DeleteNode(gone); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if n, err := s.Node(gone); err != nil || !reflect.DeepEqual(n, want[gone]) {
		t.Fatalf("%s after a failed update that deleted it: %+v, %v; want %+v", gone, n, err, want[gone])
	}
	err := s.Update(func(tx *store.Tx) error {
		for _, n := range []string{gone, back, "never"} {
			if err := tx.DeleteNode(n); err != nil {
				return err
			}
		}
		if err := tx.PutNode(back, want[back]); err != nil {
			return err
		}
		if n, err := tx.Node(gone); err != nil || n.State != "" {
			return fmt.Errorf("%s read in the transaction that deleted it: %+v, %v", gone, n, err)
		}
		all, err := tx.Nodes()
		if _, ok := all[gone]; err != nil || ok || len(all) != len(names)-1 {
			return fmt.Errorf("nodes read in the transaction that deleted %s: %v, %v", gone, all, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	delete(want, gone)
	got, err := s.Nodes()
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("nodes after deleting %s = %+v, %v; want %+v", gone, got, err, want)
	}
	if h, err := s.Audit(gone, 0); err != nil || len(h) != indexOf(gone)+1 {
		t.Errorf("%s's audit after its record was deleted: %d records, %v; want %d", gone, len(h), err, indexOf(gone)+1)
	}
}
