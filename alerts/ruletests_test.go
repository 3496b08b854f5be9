package alerts

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/config"
)

func TestNotation(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   samples
		want string
	}{
		{"one value", samples{val(4)}, "4"},
		{"a constant", constant(0.05, 3), "0.05x3"},
		{"a counter", samples{val(0), val(57), val(114), val(171)}, "0+57x3"},
		{"falling", samples{val(9), val(6), val(3)}, "9-3x2"},
		{"a gap, a stale marker, a restart", append(append(append(gaps(1), sample{kind: stale}), val(0), val(3)), val(0)), "_x2 stale 0+3x1 0"},
		{"fractional steps", samples{val(0), val(5.25), val(10.5)}, "0+5.25x2"},
		{"NaN", samples{val(math.NaN()), val(math.NaN()), val(math.NaN()), val(1)}, "NaN+0x2 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.notation(); got != tc.want {
				t.Errorf("notation %q, want %q", got, tc.want)
			}
		})
	}
}

// TestGenerateTestsNeedsWholeScrapes: a window that is not a whole number of scrape intervals
// cannot be tested to the scrape; the error names the field.
func TestGenerateTestsNeedsWholeScrapes(t *testing.T) {
	cfg := config.Default()
	cfg.Policy.Idle.Window = model.Duration(10*time.Minute + 7*time.Second)
	if _, err := GenerateTests(cfg, "rota-rules.yml"); err == nil || !strings.Contains(err.Error(), "policy.idle.window") {
		t.Fatalf("GenerateTests: %v, want an error naming policy.idle.window", err)
	}
}

// TestGeneratedTestsFollowThePolicy: the tests derived from one policy fail against the rules
// of another (an idle window two minutes longer, a backlog hold one minute longer, a boot
// timeout longer): they test the windows, not just the rules' shape.
func TestGeneratedTestsFollowThePolicy(t *testing.T) {
	promtool := testutil.Tool(t, "promtool")
	for _, tc := range []struct {
		name   string
		file   string
		change func(*config.Config)
	}{
		{"idle window", "idle.test.yml", func(c *config.Config) { c.Policy.Idle.Window += model.Duration(2 * time.Minute) }},
		{"backlog hold", "signals.test.yml", func(c *config.Config) { c.Policy.Backlog.For += model.Duration(time.Minute) }},
		{"evaluation interval", "scaler.test.yml", func(c *config.Config) { c.Policy.EvaluationInterval *= 2 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			other := config.Default()
			tc.change(other)
			writeRules(t, other, dir)
			tests, err := GenerateTests(config.Default(), "rota-rules.yml")
			if err != nil {
				t.Fatal(err)
			}
			f := filepath.Join(dir, tc.file)
			if err := os.WriteFile(f, tests[tc.file], 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(promtool, "test", "rules", f).CombinedOutput()
			if err == nil {
				t.Fatalf("the default policy's %s passed against rules with another %s:\n%s", tc.file, tc.name, out)
			}
		})
	}
}

// TestPowerFailuresFireWhateverThePass: RotaPowerActionsFailing held for one pass never fired
// where the failure window was not longer than a pass and a scrape, as increase() forgot the
// failures before the hold ended: rota run on arrivals and webhooks (a 1h pass) with the
// default 30m window, or a 1m15s window at the default 1m pass and 15s scrapes. The power
// scenarios run under both.
func TestPowerFailuresFireWhateverThePass(t *testing.T) {
	promtool := testutil.Tool(t, "promtool")
	for _, tc := range []struct{ name, pass, window string }{
		{"hour passes", "1h", "30m"},
		{"a window of a pass and a scrape", "1m", "1m15s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			for _, d := range []struct {
				to *model.Duration
				s  string
			}{{&cfg.Policy.EvaluationInterval, tc.pass}, {&cfg.Policy.Failure.AlertWindow, tc.window}} {
				v, err := model.ParseDuration(d.s)
				if err != nil {
					t.Fatal(err)
				}
				*d.to = v
			}
			tm, err := newTiming(cfg)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			writeRules(t, cfg, dir)
			f := TestFile{RuleFiles: []string{"rota-rules.yml"}, EvaluationInterval: model.Duration(tm.step)}
			for _, sc := range powerScenarios(tm) {
				g, err := sc.group(tm, Rules(cfg).Groups[0].Rules)
				if err != nil {
					t.Fatal(err)
				}
				f.Tests = append(f.Tests, g)
			}
			b, err := marshal("", f)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "power.test.yml")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			runPromtoolTest(t, promtool, path)
		})
	}
}

// TestGeneratedPowerTestsFitShortWindows: the power scenarios spread alert_after failures over
// as many scrapes, so a failure window shorter than alert_after + 2 scrapes (3 failures in a
// 1m window at 15s scrapes) got tests that failed against the rules; the failures of a pass
// now land in one scrape, and a window too short for a restart between them is refused,
// naming the field.
func TestGeneratedPowerTestsFitShortWindows(t *testing.T) {
	promtool := testutil.Tool(t, "promtool")
	for _, k := range []int{1, 3, 7} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			cfg := config.Default()
			cfg.Policy.Failure.AlertAfter, cfg.Policy.Failure.AlertWindow = k, model.Duration(time.Minute)
			dir := t.TempDir()
			writeRules(t, cfg, dir)
			tests, err := GenerateTests(cfg, "rota-rules.yml")
			if err != nil {
				t.Fatal(err)
			}
			f := filepath.Join(dir, "scaler.test.yml")
			if err := os.WriteFile(f, tests["scaler.test.yml"], 0o644); err != nil {
				t.Fatal(err)
			}
			runPromtoolTest(t, promtool, f)
		})
	}
	cfg := config.Default()
	cfg.Policy.Failure.AlertWindow = model.Duration(45 * time.Second)
	if _, err := GenerateTests(cfg, "rota-rules.yml"); err == nil || !strings.Contains(err.Error(), "policy.failure.alert_window") {
		t.Fatalf("GenerateTests: %v, want an error naming policy.failure.alert_window", err)
	}
}

// writeRules writes the rules generated from cfg into dir as rota-rules.yml, the name the
// generated tests load.
func writeRules(t *testing.T, cfg *config.Config, dir string) {
	t.Helper()
	rules, err := Generate(cfg, "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rota-rules.yml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGeneratedTestsBesideOtherSources: the generated tests feed rota-exporter's series to
// servers of pools named cpu and gpu, so a config whose pool of that name reads node_exporter
// and dcgm-exporter got tests that failed against its own rules (rota-exporter's selectors
// leave that pool out); the scenarios now take names no pool of another source has, and a
// config with no pool on rota-exporter (its rules have none of rota-exporter's series) is
// refused, naming the field.
func TestGeneratedTestsBesideOtherSources(t *testing.T) {
	promtool := testutil.Tool(t, "promtool")
	pools := func(cpu, gpu string) string {
		return `server: {webhook_auth_disabled: true}
telemetry_sources:
  - name: fleet
pools:
  - name: cpu
    telemetry_source: ` + cpu + `
    profile: {cpu_cores: 64}
    cost: {hourly: 1}
    nodes:
      - {name: cpu01, bmc: {protocol: ipmi, host: cpu01-bmc, username: rota, password_env: PW}}
  - name: gpu
    telemetry_source: ` + gpu + `
    profile: {cpu_cores: 64, gpus: 8}
    cost: {hourly: 10}
    nodes:
      - {name: gpu01, bmc: {protocol: ipmi, host: gpu01-bmc, username: rota, password_env: PW}}
`
	}
	for _, tc := range []struct{ name, config string }{
		{"gpu pool on dcgm-exporter", pools("rota-exporter", "fleet")},
		{"cpu pool on node_exporter", pools("fleet", "rota-exporter")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(tc.config))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range writeRuleTests(t, t.TempDir(), cfg, "") {
				t.Run(filepath.Base(f.path), func(t *testing.T) { runPromtoolTest(t, promtool, f.path) })
			}
		})
	}
	cfg, err := config.Parse([]byte(pools("fleet", "fleet")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := GenerateTests(cfg, "rota-rules.yml"); err == nil || !strings.Contains(err.Error(), "pools[].telemetry_source") {
		t.Fatalf("GenerateTests: %v, want an error naming pools[].telemetry_source", err)
	}
}
