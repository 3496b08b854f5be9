package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rotahq/rota/internal/testutil"
)

// mutant is one entry of scripts/mutants.txt, the one-line mutants make mutate runs.
type mutant struct {
	name, file, line, test string
}

// readMutants reads the list as scripts/mutate.sh does: blocks of "key: value" lines, each
// opened by "mutant:", comments and blank lines skipped.
func readMutants(t *testing.T, path string) []mutant {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ms []mutant
	for n, l := range strings.Split(string(b), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		key, value, _ := strings.Cut(l, ":")
		value = strings.TrimPrefix(value, " ")
		if key == "mutant" {
			ms = append(ms, mutant{name: value})
			continue
		}
		if len(ms) == 0 {
			t.Fatalf("%s:%d: %q before the first mutant:", path, n+1, l)
		}
		m := &ms[len(ms)-1]
		switch key {
		case "file":
			m.file = value
		case "line":
			m.line = value
		case "with":
		case "test":
			m.test = value
		default:
			t.Fatalf("%s:%d: cannot read %q", path, n+1, l)
		}
	}
	return ms
}

// TestMutantsNameWhatTheTreeHolds: every mutant of make mutate names a file that is there, a
// line that file holds (as mutate.sh matches it: once its indentation is taken off) and a test
// function its package declares. A refactor that moves the guarded line away fails here, in
// go test, rather than as LOST at the end of CI's mutation stage.
func TestMutantsNameWhatTheTreeHolds(t *testing.T) {
	root := testutil.RepoRoot(t)
	ms := readMutants(t, filepath.Join(root, "scripts", "mutants.txt"))
	if len(ms) == 0 {
		t.Fatal("scripts/mutants.txt names no mutant")
	}
	for _, m := range ms {
		if m.file == "" || m.line == "" || m.test == "" {
			t.Errorf("mutant %q: wants file:, line: and test:", m.name)
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, m.file))
		if err != nil {
			t.Errorf("mutant %q: %v", m.name, err)
			continue
		}
		found := false
		for _, l := range strings.Split(string(src), "\n") {
			if strings.TrimLeft(l, " \t") == m.line {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("mutant %q: no line %q in %s (update scripts/mutants.txt)", m.name, m.line, m.file)
		}
		dir, run, ok := strings.Cut(m.test, " ")
		if !ok || !strings.HasPrefix(dir, "./") {
			t.Errorf("mutant %q: test %q is not ./PACKAGE TestName", m.name, m.test)
			continue
		}
		fn, _, _ := strings.Cut(run, "/") // a subtest runs under its top-level test
		if !declares(t, filepath.Join(root, dir), fn) {
			t.Errorf("mutant %q: no func %s in %s's tests (update scripts/mutants.txt)", m.name, fn, dir)
		}
	}
}

// declares reports whether a _test.go file of dir declares the test function fn.
func declares(t *testing.T, dir, fn string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	decl := regexp.MustCompile(`(?m)^func ` + regexp.QuoteMeta(fn) + `\(\w+ \*testing\.T\)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if decl.Match(b) {
			return true
		}
	}
	return false
}
