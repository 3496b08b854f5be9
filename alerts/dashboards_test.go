package alerts

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/rotahq/rota/internal/testutil"
)

// dashboardExprs returns every PromQL expression of a Grafana dashboard, rows' panels included.
func dashboardExprs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string  `json:"title"`
		Panels  []panel `json:"panels"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	}
	var d struct {
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("%s: panel %q has a target without an expression", path, p.Title)
				}
				out = append(out, tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// TestDashboardQueries runs every query of every dashboard under deploy/grafana, with rota's
// rules, on a small fleet (testdata/fleet-series.yml), and fails for a query that does not
// parse or returns nothing. Each query becomes an alert on absent(query) that must not fire.
func TestDashboardQueries(t *testing.T) {
	promtool := testutil.Tool(t, "promtool")
	files, err := filepath.Glob(filepath.Join(testutil.RepoRoot(t), "deploy", "grafana", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards: %v", err)
	}
	var exprs []string
	for _, f := range files {
		exprs = append(exprs, dashboardExprs(t, f)...)
	}
	if len(exprs) == 0 {
		t.Fatal("the dashboards hold no queries")
	}
	runQueriesOnFleet(t, promtool, exprs)
}

// runQueriesOnFleet checks that each expression parses and returns data on the fleet dataset.
func runQueriesOnFleet(t *testing.T, promtool string, exprs []string) {
	t.Helper()
	b, err := os.ReadFile("testdata/fleet-series.yml")
	if err != nil {
		t.Fatal(err)
	}
	var series []map[string]string
	if err := yaml.Unmarshal(b, &series); err != nil {
		t.Fatal(err)
	}
	var rules []Rule
	var checks []map[string]any
	for i, e := range exprs {
		name := fmt.Sprintf("QueryReturnsNothing%d", i)
		rules = append(rules, Rule{Alert: name, Expr: fmt.Sprintf("absent(%s)", e)})
		checks = append(checks, map[string]any{"eval_time": "20m", "alertname": name, "exp_alerts": []any{}})
		t.Logf("%s: %s", name, e)
	}
	dir := t.TempDir()
	rulesPath := filepath.Join(dir, "queries.yml")
	writeYAML(t, rulesPath, RuleFile{Groups: []Group{{Name: "queries", Rules: rules}}})
	abs, err := filepath.Abs(committed)
	if err != nil {
		t.Fatal(err)
	}
	testPath := filepath.Join(dir, "queries.test.yml")
	writeYAML(t, testPath, map[string]any{
		"rule_files":          []string{abs, rulesPath},
		"evaluation_interval": "1m",
		"tests": []any{map[string]any{
			"interval": "15s", "input_series": series, "alert_rule_test": checks,
		}},
	})
	runPromtoolTest(t, promtool, testPath)
}

func writeYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
