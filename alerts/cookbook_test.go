package alerts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/rotahq/rota/internal/testutil"
)

// readmeQueries returns the PromQL code blocks of the README's alerts section.
func readmeQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	start, end := strings.Index(s, "<!-- section:alerts -->"), strings.Index(s, "<!-- /section:alerts -->")
	if start < 0 || end < start {
		t.Fatal("README.md has no alerts section")
	}
	var out []string
	for _, block := range strings.Split(s[start:end], "```promql\n")[1:] {
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

// TestCookbookQueriesAreTested: every query of the README's cost cookbook has expected values in
// testdata/recording.test.yml (which TestPromtoolTestRules runs).
func TestCookbookQueriesAreTested(t *testing.T) {
	queries := readmeQueries(t)
	if len(queries) == 0 {
		t.Fatal("the README's alerts section has no promql blocks")
	}
	tested := testedExprs(t, "testdata/recording.test.yml")
	for _, q := range queries {
		if !tested[q] {
			t.Errorf("README query has no test in testdata/recording.test.yml:\n  %s", q)
		}
	}
}
