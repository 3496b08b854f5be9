package executor

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rotahq/rota/alerts"
	"github.com/rotahq/rota/internal/testutil"
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
	for _, doc := range []string{"docs/core.md", "docs/prometheus.md"} {
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
