package alerts

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/rotahq/rota/internal/testutil"
)

// readmeQueries returns the PromQL code blocks of docs/cost.md, the cost cookbook among them.
func readmeQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "docs", "cost.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, block := range strings.Split(string(b), "```promql\n")[1:] {
		q, _, ok := strings.Cut(block, "```")
		if !ok {
			t.Fatalf("unclosed promql block: %q", block)
		}
		out = append(out, strings.TrimSpace(q))
	}
	return out
}

// testedExprs returns the expressions of every promql_expr_test in a promtool test file.
func testedExprs(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Tests []struct {
			ExprTests []struct {
				Expr string `yaml:"expr"`
			} `yaml:"promql_expr_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, tc := range f.Tests {
		for _, e := range tc.ExprTests {
			out[strings.TrimSpace(e.Expr)] = true
		}
	}
	return out
}

// TestCookbookQueriesAreTested: every query of docs/cost.md's cost cookbook has expected values in
// a rule test of testdata (which TestPromtoolTestRules runs): recording.test.yml for the hourly
// rates, cost.test.yml and books.test.yml for the books' counters.
func TestCookbookQueriesAreTested(t *testing.T) {
	queries := readmeQueries(t)
	if len(queries) == 0 {
		t.Fatal("docs/cost.md has no promql blocks")
	}
	files, err := filepath.Glob("testdata/*.test.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no rule tests in testdata: %v", err)
	}
	tested := map[string]bool{}
	for _, f := range files {
		maps.Copy(tested, testedExprs(t, f))
	}
	for _, q := range queries {
		if !tested[q] {
			t.Errorf("docs/cost.md query has no test in testdata/*.test.yml:\n  %s", q)
		}
	}
}
