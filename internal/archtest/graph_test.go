package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/rotahq/rota/internal/testutil"
)

// module is the import path every package of this repository starts with.
const module = "github.com/rotahq/rota"

// pkg is one package as `go list` sees it: its own imports (test files left out).
type pkg struct {
	ImportPath string
	Imports    []string
	Standard   bool
	DepOnly    bool
}

// graph is every package of the module and everything they import, by import path.
type graph map[string]pkg

// load runs `go list -deps` over the whole module once.
func load(t *testing.T) graph {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-deps", "-json=ImportPath,Imports,Standard,DepOnly", "./...")
	cmd.Dir = testutil.RepoRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	g := graph{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("reading go list: %v", err)
		}
		g[p.ImportPath] = p
	}
	if len(g.own()) == 0 {
		t.Fatal("go list found no package of the module")
	}
	return g
}

// own returns the module's packages, sorted.
func (g graph) own() []string {
	var out []string
	for path, p := range g {
		if !p.DepOnly && strings.HasPrefix(path, module) {
			out = append(out, path)
		}
	}
	slices.Sort(out)
	return out
}

// path returns the import chain from one package to another ("" when from does not reach to),
// shortest first, so a failure shows how the package got in.
func (g graph) path(from, to string) string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			chain := []string{short(p)}
			for q := prev[p]; q != ""; q = prev[q] {
				chain = append(chain, short(q))
			}
			slices.Reverse(chain)
			return strings.Join(chain, " -> ")
		}
		for _, imp := range g[p].Imports {
			if _, seen := prev[imp]; !seen {
				prev[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	return ""
}

// deps returns every package root links, root included, sorted, without looking past the
// packages stop names (they are listed, what they import is not).
func (g graph) deps(root string, stop func(string) bool) []string {
	seen := map[string]bool{root: true}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p != root && stop(p) {
			continue
		}
		for _, imp := range g[p].Imports {
			if !seen[imp] {
				seen[imp] = true
				queue = append(queue, imp)
			}
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// matches reports whether path is the package pattern names, or below it when pattern ends
// in "/..." (as go list reads patterns).
func matches(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

// short drops the module prefix of the module's own packages.
func short(path string) string {
	if s, ok := strings.CutPrefix(path, module+"/"); ok {
		return s
	}
	return path
}
