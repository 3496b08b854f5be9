package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rotahq/rota/scaler/fleet"
)

// pagesInUse returns, for a whole store file, the first page in use of each type bbolt names
// ("branch", "leaf", "freelist"), the last leaf ("last leaf"), and a page in the freelist.
func pagesInUse(t *testing.T, whole []byte) map[string]int {
	t.Helper()
	path := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(path, whole, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, nil) // read-write: loads the freelist, which Page needs
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]int{}
	err = db.View(func(tx *bolt.Tx) error {
		for id := 2; ; id++ {
			p, err := tx.Page(id)
			if err != nil || p == nil {
				return err
			}
			if _, ok := out[p.Type]; !ok {
				out[p.Type] = id
			}
			if p.Type == "leaf" {
				out["last leaf"] = id
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"branch", "leaf", "freelist", "free"} {
		if _, ok := out[typ]; !ok {
			t.Fatalf("the store has no %s page (%v): the cases below need one", typ, out)
		}
	}
	return out
}

// A page in use that is damaged (the probe's kinds: zeroed, flags or item count overwritten,
// garbage, a flipped bit) is a *DamagedError at Open, in either mode, never a panic (bbolt
// asserted, or sliced out of range: exit 2, and a restart policy looping), and the file is left
// byte for byte as it was: nothing is written before every page in use has been read.
func TestOpenRefusesDamagedPages(t *testing.T) {
	_, whole := fullStore(t)
	ps := int(metaPages(t, whole)[0].pageSize)
	pages := pagesInUse(t, whole)
	order := binary.NativeEndian
	kinds := []struct {
		name   string
		damage func(page []byte)
	}{
		{"zeroed", func(p []byte) { clear(p) }},
		{"flags flipped", func(p []byte) { p[8] ^= 0xff }},
		{"item count 0xffff", func(p []byte) { p[10], p[11] = 0xff, 0xff }},
		{"garbage after the header", func(p []byte) {
			for i := pageHeaderSize; i < 200; i++ {
				p[i] ^= 0x5a
			}
		}},
		{"a flipped bit in the page id", func(p []byte) { p[0] ^= 0x01 }},
	}
	type damaged struct {
		name string
		data []byte
	}
	var cases []damaged
	for _, typ := range []string{"branch", "leaf", "last leaf", "freelist"} {
		for _, k := range kinds {
			b := bytes.Clone(whole)
			k.damage(b[pages[typ]*ps : (pages[typ]+1)*ps])
			cases = append(cases, damaged{fmt.Sprintf("%s page %d %s", typ, pages[typ], k.name), b})
		}
	}
	// Only bbolt's check sees this one: every page reads, but a page in use is also listed as
	// free, and the next commit would write over it.
	b := bytes.Clone(whole)
	fl := b[pages["freelist"]*ps:]
	if order.Uint16(fl[10:]) == 0 {
		t.Fatal("the freelist is empty: the case below needs a free page")
	}
	order.PutUint64(fl[pageHeaderSize:], uint64(pages["leaf"]))
	cases = append(cases, damaged{"a leaf in use listed as free", b})

	for _, tc := range cases {
		refusedAsDamaged(t, tc.name, tc.data, "")
	}
	// A page out of use (free) is never read: damage there is no damage.
	b = bytes.Clone(whole)
	clear(b[pages["free"]*ps : (pages["free"]+1)*ps])
	path := filepath.Join(t.TempDir(), "rota.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("a zeroed free page: %v", err)
	}
	if n, err := s.Nodes(); err != nil || len(n) != 300 {
		t.Errorf("a zeroed free page: %d nodes, %v; want 300", len(n), err)
	}
	s.Close()
}

// Opening a whole store and closing it writes nothing: a bbolt commit rewrites the freelist and
// a meta page even when nothing changed, overwriting the older meta page bbolt can fall back on.
func TestOpeningAWholeStoreWritesNothing(t *testing.T) {
	path, before := fullStore(t)
	for range 2 {
		s, err := Open(path, Options{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Nodes(); err != nil {
			t.Fatal(err)
		}
		if after := closedBytes(t, s, path); !bytes.Equal(before, after) {
			t.Fatal("opening a store, reading it and closing it changed the file")
		}
	}
}

// A page damaged after Open (the file changed under rota) is a *DamagedError naming the file
// at the read, not a panic; a panic in the caller's own function is its own and goes on.
func TestDamageAfterOpenIsAnError(t *testing.T) {
	path, whole := fullStore(t)
	ps := int(metaPages(t, whole)[0].pageSize)
	leaf := pagesInUse(t, whole)["leaf"]
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, ps), int64(leaf*ps)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var de *DamagedError
	if _, err := s.Nodes(); !errors.As(err, &de) || de.Path != path {
		t.Errorf("Nodes() over a zeroed leaf: %v; want a *DamagedError naming %s", err, path)
	}
	err = s.UpdateNode("node000", func(n *Node) error { n.Pinned = true; return nil })
	if !errors.As(err, &de) {
		t.Errorf("UpdateNode over a zeroed leaf: %v; want a *DamagedError", err)
	}

	defer func() {
		if r := recover(); r != "a bug" {
			t.Errorf("a panic in the caller's function: recovered %v; want it to go on", r)
		}
	}()
	_ = s.View(func(*Tx) error { panic("a bug") })
}

// Anything at the path but a regular file is a *DamagedError at once: a named pipe made Open
// wait for a writer forever.
func TestOpenRefusesWhatIsNotAFile(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "rota.db")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	cases := []struct {
		name, path, want string
		opts             Options
	}{
		{"a named pipe", fifo, "named pipe", Options{Create: true}},
		{"a named pipe, read-only", fifo, "named pipe", Options{ReadOnly: true}},
		{"a character device", os.DevNull, "character device", Options{ReadOnly: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				s, err := Open(tc.path, tc.opts)
				if err == nil {
					s.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				var de *DamagedError
				if !errors.As(err, &de) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("err = %v; want a *DamagedError saying %q", err, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Open still waiting after 5s")
			}
		})
	}
	if st, err := os.Stat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the named pipe was replaced: %v, %v", st, err)
	}
}

// BenchmarkOpen opens a large store read-write (every page read first, then nothing written):
// 5,000 nodes with 100 audit records each, a 224 MB file. ROTA_BENCH_AUDIT sets the records
// per node (1000, the retention's cap: 2.2 GB).
func BenchmarkOpen(b *testing.B) {
	per := 100
	if v, err := strconv.Atoi(os.Getenv("ROTA_BENCH_AUDIT")); err == nil {
		per = v
	}
	path := filepath.Join(b.TempDir(), "rota.db")
	s, err := Open(path, Options{Create: true})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 5000; i += 50 {
		err := s.Update(func(tx *Tx) error {
			for j := i; j < i+50; j++ {
				name := fmt.Sprintf("gpu%04d", j)
				if err := tx.PutNode(name, Node{State: fleet.StateOn, Since: t0, PowerOffs: []time.Time{t0}}); err != nil {
					return err
				}
				for k := range per {
					if err := tx.AppendAudit(AuditRecord{Time: t0.Add(time.Duration(k) * time.Minute), Node: name, Pool: "gpu",
						Action: fleet.PowerOff, Reason: fleet.ReasonDrained, Result: "succeeded", Detail: "idle 30m; BMC confirmed off"}); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	// The peer, timed in the same loop: one read of the whole file, what any check of every
	// page costs at least.
	var open, read time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		s, err := Open(path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		open += time.Since(start)
		start = time.Now()
		if err := readAhead(path); err != nil {
			b.Fatal(err)
		}
		read += time.Since(start)
	}
	b.ReportMetric(open.Seconds()/float64(b.N), "s-open")
	b.ReportMetric(open.Seconds()/read.Seconds(), "open/read")
	if st, err := os.Stat(path); err == nil {
		b.ReportMetric(float64(st.Size())/(1<<20), "MB")
	}
}
