package etcdstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/etcdtest"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/cost"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/learn"
	"github.com/rotahq/rota/scaler/store"
	"github.com/rotahq/rota/scaler/store/storetest"
)

// open is a guard that lets every write through, unconditioned (the store's own checks
// under test, not leadership).
type open struct{}

func (open) Conditions() ([]clientv3.Cmp, time.Time, error) { return nil, time.Time{}, nil }

var prefixes atomic.Int64

// fixture is one etcd member and a client of it.
type fixture struct {
	t   *testing.T
	cli *clientv3.Client
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	cli, err := Connect(context.Background(), Options{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return &fixture{t: t, cli: cli}
}

// store opens a new prefix with guard.
func (f *fixture) store(t *testing.T, guard Guard, ret store.Retention) (*store.Store, string) {
	t.Helper()
	prefix := fmt.Sprintf("/rota-test/%d", prefixes.Add(1))
	s, created, err := Open(context.Background(), f.cli, OpenOptions{Prefix: prefix, Fleet: "lab", By: "test", Guard: guard,
		RequestTimeout: 5 * time.Second, Clock: clock.Real{}, Retention: ret, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if !created {
		t.Fatalf("a new prefix %s was not created", prefix)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, prefix
}

func (f *fixture) count(prefix string) int64 {
	f.t.Helper()
	resp, err := f.cli.Get(context.Background(), prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		f.t.Fatal(err)
	}
	return resp.Count
}

// etcd keeps what a bbolt file keeps, the same way.
func TestEtcdBackend(t *testing.T) {
	f := newFixture(t)
	storetest.Run(t, func(t *testing.T, ret store.Retention) *store.Store {
		s, _ := f.store(t, open{}, ret)
		return s
	})
}

// keyGuard conditions writes on a key's create revision, as the elector does on its
// election key; until bounds them.
type keyGuard struct {
	key   string
	rev   int64
	until time.Time
}

func (g keyGuard) Conditions() ([]clientv3.Cmp, time.Time, error) {
	return []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(g.key), "=", g.rev)}, g.until, nil
}

// Every write, and the fence, holds only while the guard's condition does: once the key it
// names is gone (another rota leads), or its bound has passed (the lease may have ended), a
// write is refused with ErrNotLeader and nothing of it is written.
func TestWritesAndFenceHoldOnlyUnderTheGuard(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	put, err := f.cli.Put(ctx, "/leader-key", "me")
	if err != nil {
		t.Fatal(err)
	}
	g := &keyGuard{key: "/leader-key", rev: put.Header.Revision, until: time.Now().Add(time.Hour)}
	s, prefix := f.store(t, guardFunc(func() ([]clientv3.Cmp, time.Time, error) { return g.Conditions() }), store.Retention{})
	write := func(n string) error {
		return s.UpdateNode(n, func(r *store.Node) error { r.State = fleet.StateOn; return nil })
	}
	if err := write("n1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Fence(ctx); err != nil {
		t.Fatalf("fence while leading: %v", err)
	}
	before := f.count(prefix)

	// Another rota's key: the revision no longer matches.
	if _, err := f.cli.Delete(ctx, "/leader-key"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.cli.Put(ctx, "/leader-key", "other"); err != nil {
		t.Fatal(err)
	}
	if err := write("n2"); !errors.Is(err, store.ErrNotLeader) {
		t.Errorf("write after the key changed hands: %v, want ErrNotLeader", err)
	}
	if err := s.Update(func(tx *store.Tx) error { return tx.DeleteNode("n1") }); !errors.Is(err, store.ErrNotLeader) {
		t.Errorf("delete after the key changed hands: %v, want ErrNotLeader", err)
	}
	if n, err := s.Node("n1"); err != nil || n.State != fleet.StateOn {
		t.Errorf("n1 after a refused delete: %+v, %v; want its record", n, err)
	}
	if err := s.Fence(ctx); !errors.Is(err, store.ErrNotLeader) {
		t.Errorf("fence after the key changed hands: %v, want ErrNotLeader", err)
	}
	if after := f.count(prefix); after != before {
		t.Errorf("a refused write changed the prefix: %d keys, then %d", before, after)
	}

	// The bound passed: refused before etcd is asked.
	g.rev, g.until = 0, time.Now().Add(-time.Second)
	start := time.Now()
	if err := s.Fence(ctx); !errors.Is(err, store.ErrNotLeader) {
		t.Errorf("fence past its bound: %v, want ErrNotLeader", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("a fence past its bound took %s", took)
	}
}

type guardFunc func() ([]clientv3.Cmp, time.Time, error)

func (g guardFunc) Conditions() ([]clientv3.Cmp, time.Time, error) { return g() }

// The fleet marker: a new prefix gets it, a rota of the same fleet opens it again, and a
// rota of another fleet, a prefix of other keys, a marker this rota does not read, or an empty
// prefix without Create is
// refused with a FleetError naming the problem, writing nothing.
func TestFleetMarker(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, prefix := f.store(t, open{}, store.Retention{})
	opts := OpenOptions{Prefix: prefix, Fleet: "lab", By: "b", Guard: open{}, RequestTimeout: 5 * time.Second, Clock: clock.Real{}, Create: true}
	s, created, err := Open(ctx, f.cli, opts)
	if err != nil || created {
		t.Fatalf("second open of the fleet: created %v, %v", created, err)
	}
	_ = s.Close()
	if _, err := f.cli.Put(ctx, "/foreign/config", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.cli.Put(ctx, "/damaged/fleet", `{"v":1,"fleet":"lab","state":"half"}`); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		prefix string
		fleet  string
		create bool
		want   string
	}{
		{"another fleet", prefix, "site-b", true, `holds the state of fleet "lab", and store.etcd.fleet is "site-b"`},
		{"foreign keys", "/foreign", "lab", true, "holds 1 keys but no rota fleet marker"},
		{"empty without create", "/nothing-here", "lab", false, "no rota fleet's state"},
		{"a damaged marker", "/damaged", "lab", true, `its fleet marker /damaged/fleet is not one this rota reads: state "half" is not ready or migrating`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := f.count(c.prefix)
			o := opts
			o.Prefix, o.Fleet, o.Create = c.prefix, c.fleet, c.create
			s, _, err := Open(ctx, f.cli, o)
			var fe *FleetError
			if !errors.As(err, &fe) {
				if s != nil {
					_ = s.Close()
				}
				t.Fatalf("err = %v, want a FleetError", err)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.prefix) {
				t.Errorf("err = %q, want the prefix and %q", err, c.want)
			}
			if after := f.count(c.prefix); after != before {
				t.Errorf("a refused open wrote: %d keys, then %d", before, after)
			}
		})
	}
}

// Import moves a bbolt store into an empty prefix only while no rota runs there; a rota opens
// the prefix only once the import finished; an import cut short is done again.
func TestImport(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	src, err := store.Open(filepath.Join(t.TempDir(), "rota.db"), store.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := src.UpdateNode("n1", func(n *store.Node) error { n.State, n.Pinned = fleet.StateOff, true; return nil }); err != nil {
		t.Fatal(err)
	}
	o := OpenOptions{Prefix: "/import", Fleet: "lab", By: "rotactl", RequestTimeout: 5 * time.Second, Clock: clock.Real{}}

	// A rota waits in the election: no import.
	if _, err := f.cli.Put(ctx, ElectionPrefix(o.Prefix)+"abc", "{}"); err != nil {
		t.Fatal(err)
	}
	if _, err := Import(ctx, f.cli, o, src); err == nil || !strings.Contains(err.Error(), "stop every rota") {
		t.Fatalf("import beside a rota: %v", err)
	}
	if _, err := f.cli.Delete(ctx, ElectionPrefix(o.Prefix), clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}

	// An import cut short: marker migrating, some records.
	if _, err := f.cli.Put(ctx, o.Prefix+"/fleet", `{"v":1,"fleet":"lab","state":"migrating","by":"rotactl"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.cli.Put(ctx, o.Prefix+"/data/nodes/stale", `{"v":1,"state":"on"}`); err != nil {
		t.Fatal(err)
	}
	ro := o
	ro.Guard = ReadOnly{}
	if _, _, err := Open(ctx, f.cli, ro); err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Fatalf("open of a prefix mid-migration: %v", err)
	}
	n, err := Import(ctx, f.cli, o, src)
	if err != nil || n != 1 {
		t.Fatalf("import again: %d, %v", n, err)
	}
	s, _, err := Open(ctx, f.cli, ro)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	nodes, err := s.Nodes()
	if err != nil || len(nodes) != 1 || !nodes["n1"].Pinned {
		t.Errorf("imported nodes %+v, %v; want n1 pinned, the stale record gone", nodes, err)
	}
	if err := s.UpdateNode("n1", func(*store.Node) error { return nil }); !errors.Is(err, store.ErrNotLeader) {
		t.Errorf("a read-only store wrote: %v", err)
	}
	if _, err := Import(ctx, f.cli, o, src); err == nil {
		t.Error("an import into a prefix holding a fleet succeeded")
	}
}

// OpenStopped (rotactl alone) writes only while no rota takes part in the fleet's election
// and the fleet marker is the one it opened: a write after a rota joined is refused with
// ErrNotLeader and writes nothing.
func TestOpenStoppedWritesOnlyWhileNoRotaRuns(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, prefix := f.store(t, open{}, store.Retention{})
	s, err := OpenStopped(ctx, f.cli, OpenOptions{Prefix: prefix, Fleet: "lab", By: "rotactl", Guard: open{}, RequestTimeout: 5 * time.Second, Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	write := func(n string) error {
		return s.UpdateNode(n, func(r *store.Node) error { r.State = fleet.StatePoweringOn; return nil })
	}
	if err := write("n1"); err != nil {
		t.Fatalf("write with no rota running: %v", err)
	}
	if _, err := f.cli.Put(ctx, ElectionPrefix(prefix)+"abc", "{}"); err != nil {
		t.Fatal(err)
	}
	before := f.count(prefix)
	if err := write("n2"); !errors.Is(err, store.ErrNotLeader) {
		t.Errorf("write with a rota in the election: %v, want ErrNotLeader", err)
	}
	if after := f.count(prefix); after != before {
		t.Errorf("a refused write changed the prefix: %d keys, then %d", before, after)
	}
	if _, err := OpenStopped(ctx, f.cli, OpenOptions{Prefix: prefix, Fleet: "other", RequestTimeout: 5 * time.Second, Clock: clock.Real{}}); err == nil {
		t.Error("OpenStopped opened another fleet's store")
	}
}

// Connect names what is wrong with an endpoint it cannot use: nothing listens there, or its
// TLS certificate is not trusted.
func TestConnectSaysWhy(t *testing.T) {
	dir := t.TempDir()
	cert, key := testutil.SelfSigned(t)
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, cert, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	c := etcdtest.Start(t, 1, etcdtest.Options{CertFile: certFile, KeyFile: keyFile})
	// A member that asks every client for a certificate refuses one without, after the TLS
	// handshake: the diagnosis waits for the refusal, not a fixed while (a loaded host said
	// "TLS works" when the refusal came later than half a second).
	mtls := etcdtest.Start(t, 1, etcdtest.Options{CertFile: certFile, KeyFile: keyFile, ClientCertAuth: true})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cert)
	closed := fmt.Sprintf("http://127.0.0.1:%d", testutil.FreePort(t))
	cases := []struct {
		name string
		o    Options
		want string
	}{
		{"nothing listens", Options{Endpoints: []string{closed}}, closed + ": unreachable"},
		{"untrusted certificate", Options{Endpoints: c.Endpoints(), TLS: &tls.Config{}}, "TLS handshake failed: tls: failed to verify certificate"},
		{"plain HTTP to TLS", Options{Endpoints: []string{strings.Replace(c.Endpoints()[0], "https", "http", 1)}}, "does not answer etcd requests"},
		{"client certificate required", Options{Endpoints: mtls.Endpoints(), TLS: &tls.Config{RootCAs: pool}},
			"TLS refused: remote error: tls: certificate required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.DialTimeout, tc.o.RequestTimeout = 5*time.Second, 5*time.Second
			cli, err := Connect(context.Background(), tc.o)
			if err == nil {
				_ = cli.Close()
				t.Fatal("connected")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %q, want %q", err, tc.want)
			}
		})
	}
	clientCert, err := tls.X509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]Options{
		"with the CA":                          {Endpoints: c.Endpoints(), TLS: &tls.Config{RootCAs: pool}},
		"with the CA and a client certificate": {Endpoints: mtls.Endpoints(), TLS: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{clientCert}}},
	} {
		o.DialTimeout, o.RequestTimeout = 10*time.Second, 10*time.Second
		cli, err := Connect(context.Background(), o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_ = cli.Close()
	}
}

// FuzzParseMarker: a fleet marker read from etcd (anything a program with access to the prefix
// wrote there) is refused with an error or is version 1 of a fleet in a known state, and reads
// back the same once written again; nothing panics.
func FuzzParseMarker(f *testing.F) {
	for _, seed := range []string{
		`{"v":1,"fleet":"lab","state":"ready","created":"2026-12-01T09:00:00Z","by":"rota-a"}`,
		`{"v":1,"fleet":"lab","state":"migrating","created":"2026-12-01T09:00:00Z","by":"rotactl"}`,
		`{"v":2,"fleet":"lab","state":"ready"}`, `{"v":1,"state":"ready"}`, `{"v":1,"fleet":"lab","state":"half"}`,
		`{"v":1,"fleet":"lab","state":"ready","created":"yesterday"}`, `null`, `[]`, ``, `{"v":1e400}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseMarker(b)
		if err != nil {
			if m != nil {
				t.Fatalf("an error and a marker: %v, %+v", err, m)
			}
			return
		}
		if m.V != 1 || m.Fleet == "" || (m.State != stateReady && m.State != stateMigrating) {
			t.Fatalf("accepted %q as %+v", b, m)
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if m2, err := parseMarker(again); err != nil || m2.Fleet != m.Fleet || m2.State != m.State || !m2.Created.Equal(m.Created) || m2.By != m.By {
			t.Fatalf("written again, %s reads as %+v, %v (was %+v)", again, m2, err, m)
		}
	})
}

// A View's reads are bounded each by the request timeout, not all together: a backup (or
// rotactl store migrate --to bbolt) walks the whole store in one View, and on a fleet of a
// few hundred servers at the audit log's retention that takes longer than one request may.
func TestViewBoundsEachReadNotTheWhole(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// Each read has the whole timeout (300 ms timed the backup's reads out on the loaded 2-core
	// CI machine); the View's three pauses of 0.6 of it add up to more than one timeout.
	const timeout = 2 * time.Second
	const pause = timeout * 6 / 10
	s, prefix := f.store(t, open{}, store.Retention{})
	for _, n := range []string{"n1", "n2", "n3"} {
		if err := s.UpdateNode(n, func(r *store.Node) error { r.State = fleet.StateOn; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	r, _, err := Open(ctx, f.cli, OpenOptions{Prefix: prefix, Fleet: "lab", By: "t", Guard: ReadOnly{}, RequestTimeout: timeout, Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	err = r.View(func(tx *store.Tx) error {
		for _, n := range []string{"n1", "n2", "n3"} {
			if _, err := tx.Node(n); err != nil {
				return err
			}
			time.Sleep(pause)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("a View of reads each quick, %s apart: %v", pause, err)
	}
	var buf strings.Builder
	if _, err := r.Backup(&buf); err != nil {
		t.Fatalf("backup: %v", err)
	}
}

// A fleet's prefix never lies under another's, nor above it: /nest/election under a fleet at
// /nest would be read as that fleet's election (its candidates, its leader), and its keys
// cleared by that fleet's migration. A prefix that only begins with the same characters
// (/nest2) is a prefix of its own.
func TestFleetMarkerRefusesANestedPrefix(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	opts := OpenOptions{Prefix: "/nest", Fleet: "site-a", By: "a", Guard: open{}, RequestTimeout: 5 * time.Second, Clock: clock.Real{}, Create: true}
	s, created, err := Open(ctx, f.cli, opts)
	if err != nil || !created {
		t.Fatalf("the first fleet: %v, %v", created, err)
	}
	_ = s.Close()
	for _, p := range []string{"/nest/election", "/nest/data/nodes", "/nest/x/y"} {
		o := opts
		o.Prefix, o.Fleet = p, "election"
		s, _, err := Open(ctx, f.cli, o)
		var fe *FleetError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), `it lies under "/nest", the prefix of fleet "site-a"`) {
			if s != nil {
				_ = s.Close()
			}
			t.Errorf("a fleet at %s: %v, want a FleetError naming /nest", p, err)
		}
		if n := f.count(p); n != 0 {
			t.Errorf("a refused open wrote %d keys under %s", n, p)
		}
	}
	if n, err := Candidates(ctx, f.cli, "/nest"); err != nil || n != 0 {
		t.Errorf("site-a's election holds %d keys (%v), with no rota", n, err)
	}
	src, err := store.Open(filepath.Join(t.TempDir(), "rota.db"), store.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	imp := opts
	imp.Prefix, imp.Fleet = "/nest/imported", "lab"
	if _, err := Import(ctx, f.cli, imp, src); err == nil || !strings.Contains(err.Error(), "lies under") {
		t.Errorf("import under another fleet: %v", err)
	}
	o := opts
	o.Prefix, o.Fleet = "/nest2", "site-b"
	if s, created, err := Open(ctx, f.cli, o); err != nil || !created {
		t.Errorf("/nest2 beside /nest: %v, %v", created, err)
	} else {
		_ = s.Close()
	}
}

// What rota learned is saved on a fleet of many pools: each pool's statistics are some 50 KB
// once mature, so 40 pools' in one etcd transaction were more than etcd takes (1.5 MiB) and
// were refused at every save, losing the learning at every failover.
func TestLearnedOfManyPoolsIsSaved(t *testing.T) {
	f := newFixture(t)
	s, _ := f.store(t, open{}, store.Retention{})
	st := learn.Stats{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewSource(1))
	const pools = 40
	need := map[string]int{}
	var names []string
	for p := range pools {
		names = append(names, fmt.Sprintf("pool-%02d", p))
	}
	for m := 0; m < 10*7*24*60; m++ { // ten weeks of a noisy need, a sample a minute
		for _, n := range names {
			need[n] = max(0, min(400, need[n]+r.Intn(21)-10))
		}
		st.Observe(t0.Add(time.Duration(m)*time.Minute), need)
	}
	if err := s.PutLearned(st, nil); err != nil {
		t.Fatalf("the statistics of %d pools not saved: %v", pools, err)
	}
	got, bad, err := s.Learned(names)
	if err != nil || len(bad) > 0 || len(got.Pools) != pools {
		t.Fatalf("read back: %d pools, bad %v, %v", len(got.Pools), bad, err)
	}
}

// The books of 10,000 servers (three series each, some 2.1 MB) are saved once etcd's
// --max-request-bytes is raised above them, as install.md says to: the client sent no request
// above 2 MiB (its own default), whatever etcd took. A transaction above etcd's limit is
// refused naming the limit, and the books stored stay as they were.
func TestBooksAboveTwoMiBAreSavedWhereEtcdTakesThem(t *testing.T) {
	c := etcdtest.Start(t, 1, etcdtest.Options{MaxRequestBytes: 4 << 20})
	cli, err := Connect(context.Background(), Options{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	s, _ := (&fixture{t: t, cli: cli}).store(t, open{}, store.Retention{})
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	books := func(servers int) store.Books {
		b := store.Books{At: at}
		for i := range servers {
			node := fmt.Sprintf("gpu-node-%05d", i)
			b.Counters = append(b.Counters,
				cost.Counter{Family: "node_idle", Labels: []string{node, "gpu-h100", "EUR"}, Value: 12345.678901},
				cost.Counter{Family: "node_energy", Labels: []string{node, "gpu-h100", "bmc"}, Value: 98765432.1},
				cost.Counter{Family: "node_energy", Labels: []string{node, "gpu-h100", "profile"}, Value: 1234567.8})
		}
		return b
	}
	if err := s.PutBooks(books(10_000)); err != nil {
		t.Fatalf("the books of 10,000 servers, etcd taking 4 MiB: %v", err)
	}
	// etcd refuses 16,000 servers' itself, and its gRPC server 20,000 servers' (above the
	// limit by more than 512 KiB).
	for _, servers := range []int{16_000, 20_000} {
		err := s.PutBooks(books(servers))
		if err == nil || !strings.Contains(err.Error(), "bytes is more than etcd takes (its --max-request-bytes") {
			t.Errorf("the books of %d servers, above etcd's 4 MiB: %v, want an error naming --max-request-bytes", servers, err)
		}
	}
	got, err := s.Books()
	if err != nil || len(got.Counters) != 30_000 {
		t.Errorf("the stored books: %d counters, %v; want the 10,000 servers' 30,000", len(got.Counters), err)
	}
}

// steppingClock moves on by step at each reading: the process stood still (a long pause, a
// frozen VM, SIGSTOP) between one reading and the next.
type steppingClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func (c *steppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now
	c.now = c.now.Add(c.step)
	return now
}

// etcd's answer to the fence says the lease held when etcd gave it. A rota that stood still
// past the guard's bound while the answer waited (read after the bound, though etcd said yes
// before it) sends no command: another rota may lead by then.
func TestFenceAnsweredPastItsBoundRefuses(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	put, err := f.cli.Put(ctx, "/leader-key", "me")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clk := &steppingClock{now: t0, step: time.Minute}
	g := keyGuard{key: "/leader-key", rev: put.Header.Revision, until: t0.Add(30 * time.Second)}
	s, _, err := Open(ctx, f.cli, OpenOptions{Prefix: "/fence-late", Fleet: "lab", By: "test", Guard: g,
		RequestTimeout: 5 * time.Second, Clock: clk, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	clk.mu.Lock()
	clk.now = t0 // asked within the bound, answered a minute later
	clk.mu.Unlock()
	if err := s.Fence(ctx); !errors.Is(err, store.ErrNotLeader) || !strings.Contains(err.Error(), "after the lease's sure time") {
		t.Errorf("a fence answered past its bound: %v, want ErrNotLeader naming the lease's sure time", err)
	}
}

// The client connects again within a few seconds of etcd's return, however long etcd was away:
// gRPC's own backoff between attempts grows by 1.6 each (1, 2.6, 5.2, 9.3, 15.8, 26.3 s... after
// the loss, up to two minutes apart), so a client whose etcd came back just after an attempt 15 s
// into an outage answered 8 to over 15 s later (after a few minutes' outage, up to two minutes),
// its rota neither leading nor following meanwhile.
func TestClientConnectsAgainSoonAfterEtcdReturns(t *testing.T) {
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	m := c.Members[0]
	cli, err := Connect(context.Background(), Options{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, RequestTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	c.Kill(m)
	lost := time.Now()
	// Stand in for etcd on its port, closing each connection the client opens (an attempt
	// failed), and bring etcd back right after an attempt 15 s into the outage.
	l, err := net.Listen("tcp", strings.TrimPrefix(m.ClientURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	_ = l.(*net.TCPListener).SetDeadline(lost.Add(25 * time.Second)) // no attempt: Accept fails
	for {
		conn, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.Close()
		if time.Since(lost) > 15*time.Second {
			break
		}
	}
	_ = l.Close()
	c.Restart(m)
	// gRPC's longest wait between attempts, its jitter (a fifth) and some.
	answersAfterItsReturn(t, cli, reconnectMaxDelay+1500*time.Millisecond)
}

// answersAfterItsReturn fails the test unless cli answers within want of etcd's return, now.
func answersAfterItsReturn(t *testing.T, cli *clientv3.Client, want time.Duration) {
	t.Helper()
	back := time.Now()
	testutil.Eventually(t, want, "the client answers after etcd's return", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := cli.Get(ctx, "rota-reconnect-check", clientv3.WithCountOnly())
		return err
	})
	t.Logf("the client answered %s after etcd was back", time.Since(back).Round(10*time.Millisecond))
}

// An attempt to connect that gets no answer (the member's host gone, its packets dropped) is
// given up after the dial timeout, so the client is back within seconds of the member's return;
// with gRPC's own bound (20 s) it waited out an attempt made just before the return. Here the
// member's port is held by a listener that takes each connection and never answers, and etcd
// returns as soon as the client's attempt is hanging on it. The request timeout (the keepalive's
// period) is long enough that the keepalive does not end the attempt first: with gRPC's 20 s
// the client is not back within the bound.
func TestAnAttemptWithNoAnswerEndsAtTheDialTimeout(t *testing.T) {
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	m := c.Members[0]
	const dial = 3 * time.Second
	cli, err := Connect(context.Background(), Options{Endpoints: c.Endpoints(), DialTimeout: dial, RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	c.Kill(m)
	l, err := net.Listen("tcp", strings.TrimPrefix(m.ClientURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	// The client tries again at once; wait for its attempt, then keep the connection open and
	// silent for the rest of the test.
	go func() { _, _ = cli.Get(context.Background(), "rota-reconnect-check", clientv3.WithCountOnly()) }()
	_ = l.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Second))
	conn, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = l.Close()
	c.Restart(m)
	// The attempt, the longest wait between attempts with its jitter, and some.
	answersAfterItsReturn(t, cli, dial+reconnectMaxDelay*6/5+1500*time.Millisecond)
}

// store.etcd.password_file is read by the rule the token and BMC password files follow: one
// every user may read or write is refused, naming the key, the file and the chmod (it was
// used: an etcd password anyone on the host could read guarded the fleet's store).
func TestOptionsFromRefusesAPasswordFileOpenToEveryUser(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		mode os.FileMode
		want string // "" when the password is read
	}{
		{"owner and group", 0o640, ""},
		{"every user reads", 0o644, "store.etcd.password_file: password_file " + filepath.Join(dir, "every-user-reads") + " is open to every user (mode 0644): chmod o-rw"},
		{"every user writes", 0o602, "(mode 0602)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
			if err := os.WriteFile(path, []byte("pa55\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, c.mode); err != nil {
				t.Fatal(err)
			}
			o, err := OptionsFrom(config.EtcdStore{Endpoints: []string{"http://127.0.0.1:2379"}, Username: "rota", PasswordFile: path})
			switch {
			case c.want == "" && (err != nil || o.Password != "pa55"):
				t.Fatalf("OptionsFrom = %q, %v; want the password read", o.Password, err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "pa55")):
				t.Fatalf("OptionsFrom error %v; want one with %q and no password", err, c.want)
			}
		})
	}
}
