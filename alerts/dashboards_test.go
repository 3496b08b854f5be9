package alerts

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/config"
)

// dashboard is what the tests read of a Grafana dashboard.
type dashboard struct {
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Query      string `json:"query"`
			Multi      bool   `json:"multi"`
			IncludeAll bool   `json:"includeAll"`
			AllValue   string `json:"allValue"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Title       string  `json:"title"`
	Type        string  `json:"type"`
	Panels      []panel `json:"panels"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Targets []struct {
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
	} `json:"targets"`
}

func readDashboard(t *testing.T, path string) dashboard {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return d
}

// panels returns every panel of a dashboard but rows, rows' panels included.
func (d dashboard) panels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Type != "row" {
				out = append(out, p)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// grafanaValues stands in for what Grafana puts in place of its variables when the tests run
// the queries: every fleet, pool, department and server (the variables' "All"), the rate interval of a
// 15s scrape (four intervals) and the fleet dataset's 20 minutes as the time range.
var grafanaValues = strings.NewReplacer(
	"$__rate_interval", "1m", "$__range_s", "1200", "$__range", "20m",
	"$fleet", ".*", "$pool", ".*", "$department", ".*", "$node", ".*",
)

// dashboardExprs returns every PromQL expression of a Grafana dashboard, rows' panels included,
// with Grafana's variables replaced as grafanaValues says.
func dashboardExprs(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	for _, p := range readDashboard(t, path).panels() {
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("%s: panel %q has a target without an expression", path, p.Title)
			}
			out = append(out, grafanaValues.Replace(tg.Expr))
		}
	}
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

var (
	// rangeFunction finds each rate(), irate() and increase() and the range it is given.
	rangeFunction = regexp.MustCompile(`\b(rate|irate|increase)\((?:[^()\[]|\([^()]*\))*\[([^\]]+)\]`)
	byClause      = regexp.MustCompile(`\bby \(([^)]*)\)`)
	legendLabel   = regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`)
	moneySeries   = regexp.MustCompile(`spend|saving|would_save|cost_per_hour|rota_cost_node_idle_total|rota_cost_borrowed_total`)
	// aggregation finds each aggregation that adds series together and its by clause.
	aggregation = regexp.MustCompile(`\b(sum|avg|min|max|count|group|stddev|stdvar|quantile|count_values)\s*(?:by\s*\(([^)]*)\))?\s*\(`)
	matchers    = regexp.MustCompile(`\{[^}]*\}`)
	// bareSeries finds a series of rota's (or ALERTS) selected without matchers.
	bareSeries = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
)

// mergesFleets says how expr adds several fleets' series together or reads another fleet's,
// or "" when it does not: every aggregation keeps fleet (by (fleet, ...)), and every selector
// filters on the fleet variable.
func mergesFleets(expr string) string {
	for _, m := range aggregation.FindAllStringSubmatch(expr, -1) {
		keeps := false
		for _, l := range strings.Split(m[2], ",") {
			keeps = keeps || strings.TrimSpace(l) == FleetLabel
		}
		if !keeps {
			return fmt.Sprintf("%s by (%s) adds fleets together", m[1], m[2])
		}
	}
	filter := FleetLabel + `=~"$` + FleetLabel + `"`
	for _, m := range matchers.FindAllString(expr, -1) {
		if !strings.Contains(m, filter) {
			return fmt.Sprintf("selector %s does not filter on %s", m, filter)
		}
	}
	rest := matchers.ReplaceAllString(expr, "{}")
	for _, loc := range bareSeries.FindAllStringIndex(rest, -1) {
		name, next := rest[loc[0]:loc[1]], rest[loc[1]:]
		if (strings.Contains(name, "rota_") || name == "ALERTS") && !strings.HasPrefix(next, "{") {
			return fmt.Sprintf("series %s without %s", name, filter)
		}
	}
	return ""
}

// TestDashboardConventions: the fleet dashboard has fleet, pool, department and node variables
// and every panel that shows one of those labels honours its variable; no panel merges fleets
// (every aggregation keeps fleet, every selector filters on the fleet variable, whose All is
// .*, so an unlabelled fleet's series match too); rates use
// $__rate_interval, never a fixed window, and increase() that too or the panel's time range
// ($__range: what was spent in it); every panel has a unit, and money is in the currency of the
// example config's pools.
func TestDashboardConventions(t *testing.T) {
	root := testutil.RepoRoot(t)
	d := readDashboard(t, filepath.Join(root, "deploy", "grafana", "rota-fleet.json"))
	cfg, err := config.Load(filepath.Join(root, "deploy", "rota", "rota.yml"))
	if err != nil {
		t.Fatal(err)
	}
	currencies := map[string]bool{}
	for _, pl := range cfg.Pools {
		currencies["currency"+pl.Cost.Currency] = true
	}
	if len(currencies) != 1 {
		t.Fatalf("deploy/rota/rota.yml's pools cost in %v: the dashboard's money unit fits one", currencies)
	}

	variables := map[string]string{"fleet": "", "pool": "", "department": "", "node": ""}
	for _, v := range d.Templating.List {
		if _, ok := variables[v.Name]; !ok {
			continue
		}
		variables[v.Name] = v.Query
		if v.Type != "query" || v.Datasource.UID != "${datasource}" || !v.Multi || !v.IncludeAll || v.AllValue != ".*" ||
			!strings.Contains(v.Query, ", "+v.Name+")") {
			t.Errorf("variable %s: want a multi-value query of its label_values on ${datasource}, All being .*: %+v", v.Name, v)
		}
	}
	used := map[string]bool{}
	for _, p := range d.panels() {
		unit := p.FieldConfig.Defaults.Unit
		if unit == "" || unit == "none" {
			t.Errorf("panel %q has no unit", p.Title)
		}
		for _, tg := range p.Targets {
			if why := mergesFleets(tg.Expr); why != "" {
				t.Errorf("panel %q merges fleets: %s: %s", p.Title, why, tg.Expr)
			}
			for _, m := range rangeFunction.FindAllStringSubmatch(tg.Expr, -1) {
				if m[2] != "$__rate_interval" && (m[1] != "increase" || m[2] != "$__range") {
					t.Errorf("panel %q: %s() over [%s], want [$__rate_interval] (or, for increase(), [$__range])", p.Title, m[1], m[2])
				}
			}
			// Money in a currency; a share of money (percentunit) is no money.
			if moneySeries.MatchString(tg.Expr) && unit != "percentunit" && !currencies[unit] {
				t.Errorf("panel %q shows money in unit %q, want %v", p.Title, unit, currencies)
			}
			shown := map[string]bool{}
			for _, m := range byClause.FindAllStringSubmatch(tg.Expr, -1) {
				for _, l := range strings.Split(m[1], ",") {
					shown[strings.TrimSpace(l)] = true
				}
			}
			for _, m := range legendLabel.FindAllStringSubmatch(tg.LegendFormat, -1) {
				shown[m[1]] = true
			}
			for name := range variables {
				filter := name + `=~"$` + name + `"`
				if strings.Contains(tg.Expr, filter) {
					used[name] = true
				} else if shown[name] {
					t.Errorf("panel %q shows %s but does not filter on it (%s): %s", p.Title, name, filter, tg.Expr)
				}
			}
		}
	}
	for name, query := range variables {
		if query == "" {
			t.Errorf("the dashboard has no %s variable", name)
		}
		if !used[name] {
			t.Errorf("no panel uses the %s variable", name)
		}
	}
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

// TestMergesFleets: what mergesFleets catches and passes.
func TestMergesFleets(t *testing.T) {
	f := `fleet=~"$fleet"`
	for expr, merges := range map[string]bool{
		`sum by (pool) (rota_fleet_pool_powered_servers{` + f + `})`:                         true,
		`sum(rota_fleet_node_powered{` + f + `})`:                                            true,
		`sum by (fleet, pool) (rota_fleet_pool_powered_servers{pool=~"$pool"})`:              true,
		`time() - rota_scaler_last_pass_success_timestamp_seconds`:                           true,
		`count by (fleet, alertname) (ALERTS{alertstate="firing"})`:                          true,
		`sum by (fleet, pool) (rota_fleet_pool_powered_servers{` + f + `, pool=~"$pool"})`:   false,
		`pool:rota_node_cpus:sum{` + f + `} - pool:rota_node_cpus_busy:sum{` + f + `}`:       false,
		`sum_over_time(rota_scaler_paused{` + f + `}[5m]) / 3.6e6`:                           false,
		`topk(5, sum by (fleet, node) (increase(rota_cost_node_idle_total{` + f + `}[1h])))`: false,
	} {
		if got := mergesFleets(expr); (got != "") != merges {
			t.Errorf("mergesFleets(%s) = %q, want merging %v", expr, got, merges)
		}
	}
}
