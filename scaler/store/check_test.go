package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rotahq/rota/scaler/fleet"
)

// fullStore writes a closed store with enough records to span many pages, and returns its path
// and bytes.
func fullStore(t testing.TB) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rota.db")
	s, err := Open(path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		name := fmt.Sprintf("node%03d", i)
		if err := s.UpdateNode(name, func(n *Node) error {
			n.State, n.Since, n.PinNote = fleet.StateOn, t0, strings.Repeat("x", 100)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return path, closedBytes(t, s, path)
}

// closedBytes closes s and returns its file's bytes.
func closedBytes(t testing.TB, s *Store, path string) []byte {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// metaPages returns the two meta pages' parsed form from a whole store file.
func metaPages(t *testing.T, b []byte) [2]boltMeta {
	t.Helper()
	m0, err := parseMeta(b)
	if err != nil {
		t.Fatal(err)
	}
	m1, err := parseMeta(b[m0.pageSize:])
	if err != nil {
		t.Fatal(err)
	}
	return [2]boltMeta{m0, m1}
}

// An existing file that is empty, cut short or overwritten is refused with what is wrong, before
// bbolt maps it (which, cut short mid-page, died with SIGBUS), and is left as it was.
func TestOpenRefusesDamagedFiles(t *testing.T) {
	_, whole := fullStore(t)
	metas := metaPages(t, whole)
	ps := int(metas[0].pageSize)
	if used := int(max(metas[0].hw, metas[1].hw)) * ps; used <= 16384 {
		t.Fatalf("the store uses %d bytes; the cuts below need more than 16384", used)
	}
	smash := func(offsets ...int) []byte {
		b := bytes.Clone(whole)
		for _, off := range offsets {
			b[off] ^= 0xff
		}
		return b
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty (0 bytes)"},
		{"cut mid-page at 10000 bytes", whole[:10000], "not a whole number of"},
		{"cut at a page boundary, 16384 bytes", whole[:16384], "cut short"},
		{"cut inside the first page", whole[:100], "not a whole number of"},
		{"not a bolt file", []byte(strings.Repeat("<html>proxy error</html>\n", 400)), "neither meta page is valid"},
		{"both meta checksums broken", smash(pageHeaderSize+20, ps+pageHeaderSize+20), "neither meta page is valid"},
	}
	for _, tc := range cases {
		refusedAsDamaged(t, tc.name, tc.data, tc.want)
	}
}

// refusedAsDamaged opens data as a store file, read-write and read-only, each in a subtest of
// t: each open must fail with a *DamagedError naming the file and saying want, and leave the
// file's bytes as they were.
func refusedAsDamaged(t *testing.T, name string, data []byte, want string) {
	t.Helper()
	for _, ro := range []bool{false, true} {
		t.Run(fmt.Sprintf("%s/read-only=%v", name, ro), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rota.db")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(path, Options{ReadOnly: ro, Create: true})
			if err == nil {
				s.Close()
				t.Fatal("a damaged file opened as a store")
			}
			var de *DamagedError
			if !errors.As(err, &de) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
				t.Errorf("err = %v; want a *DamagedError naming %s and saying %q", err, path, want)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
				t.Error("the damaged file was changed")
			}
		})
	}
}

// A store is made only when asked for and nothing is there; a folder is no store.
func TestOpenCreatesOnlyWhenAsked(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "rota.db")
	if s, err := Open(missing, Options{}); err == nil {
		s.Close()
		t.Fatal("Open without Create made a store")
	}
	if s, err := Open(missing, Options{ReadOnly: true, Create: true}); err == nil {
		s.Close()
		t.Fatal("a read-only Open made a store")
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused Open left a file: %v", err)
	}
	s, err := Open(missing, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Created() || s.Recovered() != "" {
		t.Errorf("new store: Created %v, Recovered %q; want true, none", s.Created(), s.Recovered())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(missing, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Created() {
		t.Error("reopening an existing store says it created one")
	}
	s.Close()

	var de *DamagedError
	if s, err := Open(dir, Options{Create: true}); !errors.As(err, &de) {
		if err == nil {
			s.Close()
		}
		t.Errorf("a folder: %v, want a *DamagedError", err)
	}
}

// A meta page torn by a crash during a commit is what bbolt recovers from: the store opens at
// the other page, the last complete commit, and says so.
func TestTornMetaPageOpensAtTheLastCompleteCommit(t *testing.T) {
	path, _ := fullStore(t)
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateNode("last", func(n *Node) error { n.State, n.Since = fleet.StateOff, t0; return nil }); err != nil {
		t.Fatal(err)
	}
	b := closedBytes(t, s, path)
	metas := metaPages(t, b)
	newest := 0
	if metas[1].txid > metas[0].txid {
		newest = 1
	}
	b[newest*int(metas[0].pageSize)+pageHeaderSize+30] ^= 0xff
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if want := fmt.Sprintf("meta page %d", newest); !strings.Contains(s.Recovered(), want) {
		t.Errorf("Recovered() = %q, want it to name %s", s.Recovered(), want)
	}
	if n, err := s.Node("last"); err != nil || n.State != "" {
		t.Errorf("the torn commit's record: %+v, %v; want none", n, err)
	}
	if n, err := s.Node("node299"); err != nil || n.State != fleet.StateOn {
		t.Errorf("a record of an earlier commit: %+v, %v; want it kept", n, err)
	}
}

// FuzzCheckFile: any file content is judged without a panic, and a file that passes holds
// every page its newest meta page counts, in whole pages (what keeps bbolt from faulting).
func FuzzCheckFile(f *testing.F) {
	_, whole := fullStore(f)
	for _, n := range []int{len(whole), 16384, 10000, 8192, 4096, 100, 0} {
		f.Add(whole[:n])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "rota.db")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		file, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		m, _, err := checkFile(path, file)
		if err != nil {
			return
		}
		if ps := int(m.pageSize); len(data)%ps != 0 || len(data) < int(m.hw)*ps {
			t.Errorf("passed %d bytes with %d-byte pages and %d pages in use", len(data), ps, m.hw)
		}
	})
}
