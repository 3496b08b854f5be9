package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rotahq/rota/scaler/fleet"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func openTemp(t *testing.T, opts Options) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rota.db")
	opts.Create = true
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, path
}

func reopen(t *testing.T, s *Store, path string) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s2.Close() })
	return s2
}

func TestNodeRoundTripSurvivesReopen(t *testing.T) {
	cases := []struct {
		name string
		node Node
	}{
		{"resting on", Node{State: fleet.StateOn, Since: t0, LastOn: t0.Add(-time.Hour)}},
		{"power-off in flight", Node{
			State: fleet.StatePoweringOff, Since: t0, DrainedByRota: true,
			Intent: &Intent{Kind: fleet.PowerOff, Reason: fleet.ReasonDrained, Detail: "empty", Started: t0, Attempt: 2},
		}},
		{"failed with backoff", Node{State: fleet.StateFailed, Since: t0, Failures: 3, RetryAfter: t0.Add(40 * time.Minute)}},
		{"pinned in maintenance", Node{State: fleet.StateOff, Since: t0, Pinned: true, PinNote: "alice: disk swap", Maintenance: true,
			PowerOffs: []time.Time{t0.Add(-2 * time.Hour), t0}}},
	}
	s, path := openTemp(t, Options{})
	for _, c := range cases {
		if err := s.UpdateNode(c.name, func(n *Node) error { *n = c.node; return nil }); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	s = reopen(t, s, path)
	all, err := s.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.Node(c.name)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.node) {
				t.Errorf("got %+v, want %+v", got, c.node)
			}
			if !reflect.DeepEqual(all[c.name], c.node) {
				t.Errorf("Nodes()[%q] = %+v, want %+v", c.name, all[c.name], c.node)
			}
		})
	}
	if len(all) != len(cases) {
		t.Errorf("Nodes() has %d records, want %d", len(all), len(cases))
	}
}

func TestAbsentRecordsAreZero(t *testing.T) {
	s, _ := openTemp(t, Options{})
	n, err := s.Node("nobody")
	if err != nil || n.State != "" {
		t.Errorf("Node(absent) = %+v, %v; want zero, nil", n, err)
	}
	g, err := s.Global()
	if err != nil || g.Paused || g.LastScaleUp != nil {
		t.Errorf("Global() = %+v, %v; want zero, nil", g, err)
	}
}

func TestGlobalRoundTrip(t *testing.T) {
	want := Global{
		Paused: true, PauseNote: "bob: firmware rollout",
		LastScaleUp:   map[string]time.Time{"gpu": t0},
		LastScaleDown: map[string]time.Time{"cpu": t0.Add(-time.Minute)},
		PowerOffs:     []time.Time{t0.Add(-time.Hour), t0},
	}
	s, path := openTemp(t, Options{})
	if err := s.UpdateGlobal(func(g *Global) error { *g = want; return nil }); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s, path)
	got, err := s.Global()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestFailedUpdateWritesNothing(t *testing.T) {
	s, _ := openTemp(t, Options{})
	boom := errors.New("boom")
	err := s.UpdateNode("n1", func(n *Node) error { n.State = fleet.StateOn; return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if n, _ := s.Node("n1"); n.State != "" {
		t.Errorf("a failed update left %+v", n)
	}
	if err := s.UpdateNode("n1", func(*Node) error { return nil }); err == nil {
		t.Error("writing a node without a state succeeded")
	}
}

func TestCorruptRecordIsANamedError(t *testing.T) {
	cases := []struct {
		name, bucket, sub, key string
		value                  string
		read                   func(*Store) error
	}{
		{"node not json", bucketNodes, "", "gpu01", "{not json", func(s *Store) error { _, err := s.Nodes(); return err }},
		{"node from a newer rota", bucketNodes, "", "gpu01", `{"v":2,"state":"on"}`, func(s *Store) error { _, err := s.Node("gpu01"); return err }},
		{"node without version", bucketNodes, "", "gpu01", `{"state":"on"}`, func(s *Store) error { _, err := s.Node("gpu01"); return err }},
		{"node in a made-up state", bucketNodes, "", "gpu01", `{"v":1,"state":"dancing"}`, func(s *Store) error { _, err := s.Node("gpu01"); return err }},
		{"node failed at a made-up action", bucketNodes, "", "gpu01", `{"v":1,"state":"on","failures":1,"failed_kind":"reboot"}`, func(s *Store) error { _, err := s.Node("gpu01"); return err }},
		{"global truncated", bucketGlobal, "", keyGlobal, `{"v":1,"paused":tr`, func(s *Store) error { _, err := s.Global(); return err }},
		{"audit garbage", bucketAudit, "gpu01", string(seqKey(1)), "\x00\x01", func(s *Store) error { _, err := s.Audit("gpu01", 0); return err }},
		{"statistics not json", bucketLearned, "", "gpu", "[", learnedErr},
		{"statistics of a newer format", bucketLearned, "", "gpu", `{"v":1,"format":99,"pool":{}}`, learnedErr},
		{"statistics without tables", bucketLearned, "", "gpu", `{"v":1,"format":1,"pool":{"calm":[1,2]}}`, learnedErr},
		{"statistics missing", bucketLearned, "", "gpu", `{"v":1,"format":1}`, learnedErr},
		{"idle periods truncated", bucketIdle, "", "gpu", `{"v":1,"format":1,"counts":[[0,0,5`, idleErr},
		{"idle periods of a newer format", bucketIdle, "", "gpu", `{"v":1,"format":9,"counts":[]}`, idleErr},
		{"idle periods outside the table", bucketIdle, "", "gpu", `{"v":1,"format":1,"counts":[[7,0,5,1,0]]}`, idleErr},
		{"idle periods out of order", bucketIdle, "", "gpu", `{"v":1,"format":1,"counts":[[0,0,5,1,0],[0,0,5,1,0]]}`, idleErr},
		{"idle periods past the cap", bucketIdle, "", "gpu", `{"v":1,"format":1,"counts":[[0,0,5,4096,1]]}`, idleErr},
		{"idle periods of none", bucketIdle, "", "gpu", `{"v":1,"format":1,"counts":[[0,0,5,0,0]]}`, idleErr},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, path := openTemp(t, Options{})
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			writeRaw(t, path, c.bucket, c.sub, c.key, c.value)
			s, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			err = c.read(s)
			var re *RecordError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v, want a RecordError", err)
			}
			wantBucket := c.bucket
			if c.sub != "" {
				wantBucket += "/" + c.sub
			}
			if re.Bucket != wantBucket {
				t.Errorf("error names bucket %q, want %q (%v)", re.Bucket, wantBucket, err)
			}
		})
	}
}

// writeRaw puts bytes straight into the file, as a disk fault or a foreign writer would.
func writeRaw(t *testing.T, path, bucket, sub, key, value string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(bucket))
		if err != nil {
			return err
		}
		if sub != "" {
			if b, err = b.CreateBucketIfNotExists([]byte(sub)); err != nil {
				return err
			}
		}
		return b.Put([]byte(key), []byte(value))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSecondOpenFailsFastWithErrLocked(t *testing.T) {
	_, path := openTemp(t, Options{})
	s2, err := Open(path, Options{LockTimeout: 50 * time.Millisecond})
	if err == nil {
		s2.Close()
		t.Fatal("a second Open of a locked store succeeded")
	}
	if !errors.Is(err, ErrLocked) {
		t.Errorf("err = %v, want ErrLocked", err)
	}
}

func TestAuditNewestFirstWithRetention(t *testing.T) {
	rec := func(node string, at time.Time, res string) AuditRecord {
		return AuditRecord{Time: at, Node: node, Pool: "gpu", Action: fleet.PowerOff, Reason: fleet.ReasonDrained, Result: res}
	}
	cases := []struct {
		name     string
		ret      Retention
		appended []AuditRecord
		want     []AuditRecord // newest first
	}{
		{"keeps newest N",
			Retention{Keep: 2},
			[]AuditRecord{rec("a", t0, "started"), rec("a", t0.Add(1), "succeeded"), rec("a", t0.Add(2), "started")},
			[]AuditRecord{rec("a", t0.Add(2), "started"), rec("a", t0.Add(1), "succeeded")}},
		{"drops older than max age",
			Retention{Keep: 10, MaxAge: 24 * time.Hour},
			[]AuditRecord{rec("a", t0, "started"), rec("a", t0.Add(23*time.Hour), "started"), rec("a", t0.Add(25*time.Hour), "failed")},
			[]AuditRecord{rec("a", t0.Add(25*time.Hour), "failed"), rec("a", t0.Add(23*time.Hour), "started")}},
		{"nodes are apart",
			Retention{Keep: 1},
			[]AuditRecord{rec("a", t0, "started"), rec("b", t0.Add(1), "started")},
			[]AuditRecord{rec("a", t0, "started")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, path := openTemp(t, Options{Retention: c.ret})
			for _, r := range c.appended {
				if err := s.AppendAudit(r); err != nil {
					t.Fatal(err)
				}
			}
			s = reopen(t, s, path)
			got, err := s.Audit("a", 0)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Audit(a) = %+v\nwant %+v", got, c.want)
			}
			if one, _ := s.Audit("a", 1); len(one) != 1 || !reflect.DeepEqual(one[0], c.want[0]) {
				t.Errorf("Audit(a, 1) = %+v, want the newest only", one)
			}
		})
	}
}

func TestBackupOpensAsAStore(t *testing.T) {
	s, _ := openTemp(t, Options{})
	want := Node{State: fleet.StateOff, Since: t0}
	if err := s.UpdateNode("cpu01", func(n *Node) error { *n = want; return nil }); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := s.Backup(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got, err := b.Node("cpu01"); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("backup has %+v, %v; want %+v", got, err, want)
	}
}

// A read-only open (rotactl checking a backup) writes nothing, and refuses a bolt file that is
// not a rota store instead of creating the buckets.
func TestReadOnlyOpenWritesNothing(t *testing.T) {
	s, path := openTemp(t, Options{})
	if err := s.UpdateNode("cpu01", func(n *Node) error { n.State, n.Since = fleet.StateOn, t0; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := ro.Node("cpu01"); err != nil || n.State != fleet.StateOn {
		t.Errorf("read-only store has %+v, %v", n, err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("a read-only open changed the file")
	}

	foreign := filepath.Join(t.TempDir(), "foreign.db")
	db, err := bolt.Open(foreign, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(foreign, Options{ReadOnly: true}); err == nil {
		s.Close()
		t.Error("a bolt file without rota's buckets opened as a store")
	}
}
