package executor

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotahq/rota/alerts"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// The result label's values are one list (fleet.Results) that the executor emits, the alert
// rules match and the docs name: the docs once said succeeded/failed where the code emits
// success/failure, and a rule or dashboard written from the docs matched nothing.
func TestActionResultsAgreeWithTheDocs(t *testing.T) {
	var want []string
	for _, r := range fleet.Results() {
		want = append(want, string(r))
	}
	root := testutil.RepoRoot(t)
	row := "`" + alerts.ScalerActions + "{action,pool,result}`"
	word := regexp.MustCompile("`([a-z_]+)`")
	for _, doc := range []string{"docs/loop.md", "docs/prometheus.md"} {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		_, rest, ok := strings.Cut(string(b), row)
		if !ok {
			t.Fatalf("%s does not list %s", doc, row)
		}
		// The values run to the end of the table cell or the parenthesis' first clause.
		rest = strings.TrimLeft(rest, " |(")
		if i := strings.IndexAny(rest, "|;\n"); i >= 0 {
			rest = rest[:i]
		}
		var got []string
		for _, m := range word.FindAllStringSubmatch(rest, -1) {
			got = append(got, m[1])
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s names results %v; the executor emits %v", doc, got, want)
		}
	}
	// Every matcher on the label in the shipped rules and dashboards names a value emitted.
	use := regexp.MustCompile(alerts.ScalerActions + `\{[^}]*result=~?\\?"([^"\\]+)`)
	files, _ := filepath.Glob(filepath.Join(root, "deploy", "grafana", "*.json"))
	files = append(files, filepath.Join(root, "alerts", "rota-rules.yml"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range use.FindAllStringSubmatch(string(b), -1) {
			for _, v := range strings.Split(m[1], "|") {
				if !slices.Contains(want, v) {
					t.Errorf("%s matches result %q, which the executor never emits", filepath.Base(f), v)
				}
			}
		}
	}
}

// RotaPowerActionsFailing counts failures with increase(), which sees a counter's first
// increment only from a sample before it: every result the rule matches must exist at 0, for
// every action in every pool, before the first one happens (state_unknown once did not, and
// three unknown states in a row counted as about two).
func TestCountedResultsStartAtZero(t *testing.T) {
	var rule string
	for _, r := range alerts.Rules(config.Default()).Groups[0].Rules {
		if r.Alert == alerts.AlertPowerActionsFails {
			rule = r.Expr
		}
	}
	m := regexp.MustCompile(`result=~"([^"]+)"`).FindStringSubmatch(rule)
	if m == nil {
		t.Fatalf("no result matcher in %s's expression %q", alerts.AlertPowerActionsFails, rule)
	}
	reg := prometheus.NewRegistry()
	if _, err := newMetrics(reg, []config.Pool{{Name: "cpu"}, {Name: "gpu"}}); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]float64{}
	for _, mf := range families {
		if mf.GetName() != alerts.ScalerActions {
			continue
		}
		for _, s := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range s.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			exported[l["action"]+"/"+l["pool"]+"/"+l["result"]] = s.GetCounter().GetValue()
		}
	}
	for _, pool := range []string{"cpu", "gpu"} {
		for _, k := range fleet.Kinds() {
			for _, result := range strings.Split(m[1], "|") {
				key := string(k) + "/" + pool + "/" + result
				if v, ok := exported[key]; !ok || v != 0 {
					t.Errorf("%s{%s}: exported %v (%v), want 0 from the start", alerts.ScalerActions, key, v, ok)
				}
			}
		}
	}
}
