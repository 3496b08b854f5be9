package alerts

import (
	"bytes"
	"flag"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/config"
)

var update = flag.Bool("update", false, "rewrite rota-rules.yml and other golden files")

// committed is the rule file generated from the defaults and kept in the repository.
const committed = "rota-rules.yml"

func TestCommittedRulesAreCurrent(t *testing.T) {
	checkGenerated(t, config.Default(), "defaults", committed,
		"go run ./cmd/rotactl rules generate --output=alerts/"+committed+"\n(or: go test ./alerts -run TestCommittedRulesAreCurrent -update)")
}

// sources is a config of two pools on two telemetry sources, and the rules generated from it,
// which sources.test.yml tests.
const sources, sourcesRules = "testdata/sources.yml", "testdata/sources-rules.yml"

func TestSourcesRulesAreCurrent(t *testing.T) {
	cfg, err := config.Load(sources)
	if err != nil {
		t.Fatal(err)
	}
	checkGenerated(t, cfg, "alerts/"+sources, sourcesRules, "go test ./alerts -run TestSourcesRulesAreCurrent -update")
}

// checkGenerated compares the rules generated from cfg (headed by source) with the file at
// path, which -update rewrites; regen is how to regenerate it.
func checkGenerated(t *testing.T, cfg *config.Config, source, path, regen string) {
	t.Helper()
	got, err := Generate(cfg, source)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("alerts/%s is out of date; regenerate it with:\n  %s", path, regen)
	}
}

// TestPolicyDrivesRules changes one threshold at a time and checks that the rule that uses it
// changes, and nothing else breaks.
func TestPolicyDrivesRules(t *testing.T) {
	base, err := Generate(config.Default(), "defaults")
	if err != nil {
		t.Fatal(err)
	}
	min := func(m int) model.Duration { return model.Duration(time.Duration(m) * time.Minute) }
	cases := []struct {
		name   string
		change func(c *config.Config)
		want   []string
	}{
		{"idle cpu threshold", func(c *config.Config) { c.Policy.Idle.CPUThreshold = 0.35 },
			[]string{"offset 15s\n            )[2m:15s]) < 0.35\n", "CPU under 35%"}},
		{"idle gpu threshold", func(c *config.Config) { c.Policy.Idle.GPUThreshold = 0.02 },
			[]string{"(max by (fleet, node, pool, gpu) (rota_gpu_sm_active_ratio >= 0)) or (max by (fleet, node, pool, gpu) (rota_gpu_utilization_ratio >= 0))))[2m:15s])\n            >= 0.02\n"}},
		{"gpu signal utilization", func(c *config.Config) { c.Policy.GPUSignal = config.SignalUtilization },
			[]string{"max by (fleet, node, pool) (max by (fleet, node, pool, gpu) (rota_gpu_utilization_ratio >= 0))\n      - record: node:rota_gpu_busy:avg", "every GPU under 5% (utilisation)"}},
		{"gpu signal sm_active", func(c *config.Config) { c.Policy.GPUSignal = config.SignalSMActive },
			[]string{"count by (fleet, node, pool) (max by (fleet, node, pool, gpu) (rota_gpu_sm_active_ratio >= 0))\n", "Mean GPU use (SM activity) under 10%"}},
		{"idle window", func(c *config.Config) { c.Policy.Idle.Window = min(20) },
			[]string{"offset 15s\n            )[20m:15s]) >= 80\n"}},
		{"scrape interval", func(c *config.Config) { c.Prometheus.ScrapeInterval = model.Duration(30 * time.Second) },
			[]string{"rota_node_cpu_seconds_total[2m]", "rota_node_cpu_seconds_total offset 30s\n", "[2m:30s]) >= 4\n"}},
		{"backlog", func(c *config.Config) { c.Policy.Backlog.QueuedJobs = 25; c.Policy.Backlog.For = min(7) },
			[]string{"or pool_class:rota_scaler_pending_jobs:sum\n          ) > 25\n        for: 7m"}},
		{"underuse", func(c *config.Config) { c.Policy.Underuse.GPUThreshold = 0.15; c.Policy.Underuse.Window = min(60) },
			[]string{"avg_over_time((avg by (fleet, node, pool) ((max by (fleet, node, pool, gpu) (rota_gpu_sm_active_ratio >= 0)) or (max by (fleet, node, pool, gpu) (rota_gpu_utilization_ratio >= 0))))[1h:15s])\n          < 0.15", ">= 240"}},
		{"telemetry max age", func(c *config.Config) { c.Policy.Telemetry.MaxAge = min(5) },
			[]string{"count_over_time(rota_node_cpus[5m])"}},
		{"failure alert", func(c *config.Config) { c.Policy.Failure.AlertAfter = 5; c.Policy.Failure.AlertWindow = min(60) },
			[]string{`increase(rota_scaler_actions_total{result=~"failure|state_unknown"}[1h])) >= 5`}},
		{"evaluation interval", func(c *config.Config) { c.Policy.EvaluationInterval = min(2) },
			[]string{"rota_scaler_last_pass_success_timestamp_seconds > 360", "for: 6m"}},
		{"pool boot timeouts", func(c *config.Config) {
			c.Pools = []config.Pool{{Name: "cpu-a", BootTimeout: min(8)}, {Name: "gpu.b", BootTimeout: min(15)}}
		}, []string{
			`max by (fleet, node, pool) (rota_fleet_node_state{state=~"powering_on|booting",pool="cpu-a"}) == 1` + "\n        for: 8m",
			`max by (fleet, node, pool) (rota_fleet_node_state{state=~"powering_on|booting",pool="gpu.b"}) == 1` + "\n        for: 15m",
			`max by (fleet, node, pool) (rota_fleet_node_state{state=~"powering_on|booting",pool!~"cpu-a|gpu\\.b"}) == 1` + "\n        for: 10m",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := config.Default()
			tc.change(c)
			got, err := Generate(c, "test")
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(got[bytes.IndexByte(got, '\n'):], base[bytes.IndexByte(base, '\n'):]) {
				t.Fatal("changing the policy did not change the rules")
			}
			for _, w := range tc.want {
				if !strings.Contains(string(got), w) {
					t.Errorf("generated rules lack %q", w)
				}
			}
		})
	}
}

// TestPromtoolCheckRules lints the committed rules and those generated from the example config.
func TestPromtoolCheckRules(t *testing.T) {
	promtool := testutil.Tool(t, "promtool")
	cfg, err := config.Load(filepath.Join(testutil.RepoRoot(t), "deploy", "rota", "rota.yml"))
	if err != nil {
		t.Fatal(err)
	}
	example, err := Generate(cfg, "deploy/rota/rota.yml")
	if err != nil {
		t.Fatal(err)
	}
	examplePath := filepath.Join(t.TempDir(), "example-rules.yml")
	if err := os.WriteFile(examplePath, example, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{committed, examplePath, sourcesRules} {
		out, err := exec.Command(promtool, "check", "rules", "--lint-fatal", f).CombinedOutput()
		if err != nil {
			t.Errorf("promtool check rules %s: %v\n%s", f, err, out)
		}
	}
}

// testPolicies are the policies the generated rule tests run under: the defaults, the example
// config users copy, a fast policy (15s passes, a 5m idle window) and a slow one (1m scrapes,
// 5m passes, an hour's window), each with pools of their own boot timeouts, and the defaults
// judging GPUs by SM activity alone (sm).
func testPolicies(t *testing.T) map[string]*config.Config {
	t.Helper()
	example, err := config.Load(filepath.Join(testutil.RepoRoot(t), "deploy", "rota", "rota.yml"))
	if err != nil {
		t.Fatal(err)
	}
	d := func(s string) model.Duration {
		v, err := model.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	fast := config.Default()
	fast.Policy.EvaluationInterval = d("15s")
	fast.Policy.Idle.Window = d("5m")
	fast.Policy.Backlog.For = 0
	fast.Policy.Underuse.Window = d("10m")
	fast.Policy.Telemetry.MaxAge = d("1m")
	fast.Policy.Failure.AlertAfter, fast.Policy.Failure.AlertWindow = 2, d("5m")
	fast.Pools = []config.Pool{{Name: "cpu-fast", BootTimeout: d("3m")}}
	slow := config.Default()
	slow.Prometheus.ScrapeInterval = d("1m")
	slow.Policy.EvaluationInterval = d("5m")
	slow.Policy.Idle = config.Idle{CPUThreshold: 0.35, GPUThreshold: 0.02, Window: d("1h")}
	slow.Policy.Backlog = config.Backlog{QueuedJobs: 0, For: d("10m")}
	slow.Policy.Underuse.GPUThreshold, slow.Policy.Underuse.Window = 0.2, d("2h")
	slow.Policy.Telemetry.MaxAge = d("10m")
	slow.Policy.Failure.AlertAfter, slow.Policy.Failure.AlertWindow = 5, d("1h")
	slow.Pools = []config.Pool{{Name: "gpu-slow", BootTimeout: d("20m")}, {Name: "cpu-slow", BootTimeout: d("12m")}}
	// sm: the default policy judging GPUs by SM activity alone (its tests feed SM activity).
	sm := config.Default()
	sm.Policy.GPUSignal = config.SignalSMActive
	return map[string]*config.Config{"default": config.Default(), "example": example, "fast": fast, "slow": slow, "sm": sm}
}

// booksTests are the rule tests of the books (the cost rules and alerts, the cost cookbook's
// counters), written for the default policy and run against the committed rules.
var booksTests = []string{"testdata/cost.test.yml", "testdata/books.test.yml"}

// TestPromtoolTestRules runs promtool's rule tests against the rules generated for each test
// policy: the alert tests GenerateTests derives from that policy (every alert firing, not
// firing, at its boundary, with missing, partial and flapping data, and across counter
// resets), and testdata/recording.test.yml (every recording rule's value, which no window
// changes), one subtest per file (TestPromtoolTestRules/POLICY/FILE). The default policy's run
// against the committed rota-rules.yml (what `make mutate` mutates; TestCommittedRulesAreCurrent
// holds it equal to the generated one). testdata/sources.test.yml runs against the rules of
// testdata/sources.yml, kept beside it.
func TestPromtoolTestRules(t *testing.T) {
	promtool := testutil.Tool(t, "promtool")
	t.Run("sources", func(t *testing.T) {
		t.Parallel()
		runPromtoolTest(t, promtool, "testdata/sources.test.yml")
	})
	// The books' rules and the cost cookbook, on the committed (default) rules.
	t.Run("books", func(t *testing.T) {
		for _, f := range booksTests {
			t.Run(filepath.Base(f), func(t *testing.T) {
				t.Parallel()
				runPromtoolTest(t, promtool, f)
			})
		}
	})
	recording, err := os.ReadFile("testdata/recording.test.yml")
	if err != nil {
		t.Fatal(err)
	}
	committedRules, err := filepath.Abs(committed)
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range testPolicies(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			rules := ""
			if name == "default" {
				rules = committedRules
			}
			files := writeRuleTests(t, dir, cfg, rules)
			rec := filepath.Join(dir, "recording.test.yml")
			if err := os.WriteFile(rec, bytes.Replace(recording, []byte("rule_files: [../rota-rules.yml]"), []byte("rule_files: ["+files[0].rules+"]"), 1), 0o644); err != nil {
				t.Fatal(err)
			}
			if cfg.Policy.GPUSignal == config.SignalAuto {
				// recording.test.yml's busy values are those of the auto signal.
				files = append(files, ruleTest{path: rec})
			}
			for _, f := range files {
				t.Run(filepath.Base(f.path), func(t *testing.T) { runPromtoolTest(t, promtool, f.path) })
			}
		})
	}
}

// ruleTest is a promtool test file and the rule file it reads.
type ruleTest struct{ path, rules string }

// writeRuleTests writes the tests GenerateTests derives from cfg into dir, reading the rule
// file rules, or, when rules is empty, the rules generated for cfg, written into dir too.
func writeRuleTests(t *testing.T, dir string, cfg *config.Config, rules string) []ruleTest {
	t.Helper()
	if rules == "" {
		b, err := Generate(cfg, "test")
		if err != nil {
			t.Fatal(err)
		}
		rules = filepath.Join(dir, "rota-rules.yml")
		if err := os.WriteFile(rules, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests, err := GenerateTests(cfg, rules)
	if err != nil {
		t.Fatal(err)
	}
	var out []ruleTest
	for _, name := range slices.Sorted(maps.Keys(tests)) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, tests[name], 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, ruleTest{path: p, rules: rules})
	}
	return out
}

func runPromtoolTest(t *testing.T, promtool, file string) {
	t.Helper()
	out, err := exec.Command(promtool, "test", "rules", file).CombinedOutput()
	if err != nil {
		t.Errorf("promtool test rules %s: %v\n%s", file, err, out)
	}
}

// TestEveryRuleIsTested: each recorded series and each alert of the rule set appears in a rule
// test (an expression using it, or an alert test naming it), so a new rule needs a test.
func TestEveryRuleIsTested(t *testing.T) {
	tests, err := GenerateTests(config.Default(), "rota-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, f := range append([]string{"testdata/recording.test.yml"}, booksTests...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	for _, b := range tests {
		all.Write(b)
	}
	text := all.String()
	for _, g := range Rules(config.Default()).Groups {
		for _, r := range g.Rules {
			switch {
			case r.Record != "" && !strings.Contains(text, r.Record):
				t.Errorf("recorded series %s is in no rule test", r.Record)
			case r.Alert != "" && !strings.Contains(text, "alertname: "+r.Alert+"\n"):
				t.Errorf("alert %s is in no rule test", r.Alert)
			}
		}
	}
}

// TestWindowsReadRawSeries: every window of an alert (a subquery under *_over_time) evaluates
// raw series at each step, never a recorded one: a recorded series has points only at the
// rules' evaluations, so with an evaluation interval longer than the scrape interval a window
// over it misses the readings and gaps between evaluations.
func TestWindowsReadRawSeries(t *testing.T) {
	srcs, err := config.Load(sources)
	if err != nil {
		t.Fatal(err)
	}
	recorded := regexp.MustCompile(`[a-z_]+:[a-z_:]+`)
	for name, cfg := range map[string]*config.Config{"defaults": config.Default(), "sources": srcs} {
		windows := 0
		for _, r := range Rules(cfg).Groups[0].Rules {
			if r.Alert == "" {
				continue
			}
			for _, body := range windowBodies(r.Expr) {
				windows++
				if m := recorded.FindString(body); m != "" {
					t.Errorf("%s: %s: a window reads the recorded series %s:\n%s", name, r.Alert, m, body)
				}
			}
		}
		if windows == 0 {
			t.Errorf("%s: no windows found in the alerts", name)
		}
	}
}

// windowBodies returns the expression each subquery of expr (op_over_time(BODY[w:s])) evaluates.
func windowBodies(expr string) []string {
	var out []string
	for rest := expr; ; {
		i := strings.Index(rest, "_over_time(")
		if i < 0 {
			return out
		}
		rest = rest[i+len("_over_time("):]
		depth := 0
		for j, c := range rest {
			switch c {
			case '(':
				depth++
			case ')':
				depth--
			case '[':
				if depth == 0 {
					out = append(out, rest[:j])
				}
			}
			if depth < 0 || (c == '[' && depth == 0) {
				break
			}
		}
	}
}
