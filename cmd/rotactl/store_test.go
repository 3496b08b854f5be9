package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/rotahq/rota/internal/etcdtest"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
	"github.com/rotahq/rota/scaler/store/etcdstore"
)

// migratePool is the inventory of the migrate test's config.
const migratePool = `pools:
  - name: cpu
    profile: {cpu_cores: 8}
    cost: {hourly: 1}
    nodes:
      - name: n1
        bmc: {protocol: ipmi, host: 127.0.0.1, username: u, password_env: PW}
`

// rotactl store migrate moves a stopped fleet's store from a bbolt file into etcd and back,
// records and history whole; it refuses a prefix that holds a fleet, a fleet a rota runs on,
// a file that exists, and a config that is not on etcd.
func TestStoreMigrate(t *testing.T) {
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	dir := t.TempDir()
	src := filepath.Join(dir, "rota.db")
	s, err := store.Open(src, store.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if err := s.UpdateNode("n1", func(n *store.Node) error {
		n.State, n.Since, n.Pinned, n.PinNote = fleet.StateOff, at, true, "alice: disk"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := s.AppendAudit(store.AuditRecord{Time: at.Add(time.Duration(i) * time.Minute), Node: "n1", Pool: "cpu", Action: fleet.PowerOff, Reason: fleet.ReasonIdle, Result: "succeeded"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "rota.yml")
	// The etcd timeouts are budgets only (requests take milliseconds); a loaded 2-core CI
	// machine can outrun a few seconds.
	write := func(backend string) {
		t.Helper()
		y := fmt.Sprintf("store:\n  backend: %s\n  path: %s\n  etcd: {endpoints: [%q], fleet: lab, dial_timeout: 10s, request_timeout: 10s}\nserver: {webhook_auth_disabled: true}\n%s",
			backend, src, c.Endpoints()[0], migratePool)
		if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	migrate := func(args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"store", "migrate", "--config.file", cfg}, args...), env{stdout: &out, stderr: &errOut})
		return out.String(), errOut.String(), code
	}
	write("bbolt")
	if _, errOut, code := migrate("--to", "etcd"); code != 2 || !strings.Contains(errOut, "store.backend is bbolt") {
		t.Errorf("migrate with a bbolt config: %d %s", code, errOut)
	}
	write("etcd")
	out, errOut, code := migrate("--to", "etcd")
	if code != 0 || !strings.Contains(out, "moved 4 records and audit entries") || !strings.Contains(out, "/rota/lab") {
		t.Fatalf("migrate into etcd: %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := migrate("--to", "etcd"); code != 1 || !strings.Contains(errOut, `already holds the state of fleet "lab"`) {
		t.Errorf("a second migrate into etcd: %d %s", code, errOut)
	}

	cli, err := etcdstore.Connect(context.Background(), etcdstore.Options{Endpoints: c.Endpoints(), DialTimeout: 10 * time.Second, RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(context.Background(), etcdstore.ElectionPrefix("/rota/lab")+"1", `{"name":"rota-a"}`); err != nil {
		t.Fatal(err)
	}
	back := filepath.Join(dir, "back.db")
	if _, errOut, code := migrate("--to", "bbolt", "--output", back); code != 1 || !strings.Contains(errOut, "a rota runs") {
		t.Errorf("migrate out while a rota runs: %d %s", code, errOut)
	}
	if _, err := cli.Delete(context.Background(), etcdstore.ElectionPrefix("/rota/lab"), clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := migrate("--to", "bbolt", "--output", src); code != 1 || !strings.Contains(errOut, "exists") {
		t.Errorf("migrate over an existing file: %d %s", code, errOut)
	}
	if out, errOut, code := migrate("--to", "bbolt", "--output", back); code != 0 || !strings.Contains(out, "moved 4") {
		t.Fatalf("migrate out of etcd: %d\n%s%s", code, out, errOut)
	}
	b, err := store.Open(back, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	n, err := b.Node("n1")
	if err != nil || !n.Pinned || n.PinNote != "alice: disk" || !n.Since.Equal(at) {
		t.Errorf("n1 after the round trip: %+v, %v", n, err)
	}
	if h, err := b.Audit("n1", 0); err != nil || len(h) != 3 || !h[0].Time.Equal(at.Add(2*time.Minute)) {
		t.Errorf("history after the round trip: %+v, %v", h, err)
	}
}

// stalling is a store backend whose View waits, inside, until release is closed: a copy out
// of it is caught mid-way.
type stalling struct {
	store.Backend
	entered, release chan struct{}
}

func (s *stalling) View(fn func(store.KV) error) error {
	return s.Backend.View(func(kv store.KV) error {
		select {
		case s.entered <- struct{}{}:
		default:
		}
		<-s.release
		return fn(kv)
	})
}

// While migrate --to bbolt copies, nothing is at the output path: a migration killed mid-way
// leaves no partial store there for a rota to start on; the file appears whole at the end.
func TestStoreMigrateWritesTheFileWholeOrNot(t *testing.T) {
	dir := t.TempDir()
	s, err := store.Open(filepath.Join(dir, "src.db"), store.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, n := range []string{"n1", "n2"} {
		if err := s.UpdateNode(n, func(r *store.Node) error { r.State, r.Pinned = fleet.StateOff, true; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	be := &stalling{Backend: s.Backend(), entered: make(chan struct{}), release: make(chan struct{})}
	src := store.New(be, store.Options{}, false)
	out := filepath.Join(dir, "rota.db")
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := writeBolt(src, out)
		done <- result{n, err}
	}()
	select {
	case <-be.entered:
	case r := <-done:
		t.Fatalf("the copy ended before it read: %d, %v", r.n, r.err)
	case <-time.After(10 * time.Second):
		t.Fatal("the copy never read its source")
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("mid-copy, %s is there (stat: %v): a migration killed now leaves a partial store a rota starts on", out, err)
	}
	close(be.release)
	r := <-done
	if r.err != nil || r.n != 2 {
		t.Fatalf("the copy: %d, %v", r.n, r.err)
	}
	b, err := store.Open(out, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if m, err := b.Nodes(); err != nil || len(m) != 2 || !m["n2"].Pinned {
		t.Errorf("the file: %v, %v", m, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".rota.db.migrating-*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
