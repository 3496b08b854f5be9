package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rotahq/rota/internal/testutil"
)

// rotactlInProcess runs rotactl's command line in this process.
func rotactlInProcess(args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, env{stdout: &out, stderr: &errOut})
	return out.String(), errOut.String(), code
}

func TestRulesGenerate(t *testing.T) {
	root := testutil.RepoRoot(t)
	committed, err := os.ReadFile(filepath.Join(root, "alerts", "rota-rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.yml")
	if err := os.WriteFile(broken, []byte("policy:\n  idle:\n    cpu_threshold: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	example := filepath.Join(root, "deploy", "rota", "rota.yml")
	cases := []struct {
		name       string
		args       []string
		code       int
		wantStdout func(string) bool
		wantFile   string // a text the --output file must hold
		wantStderr string
	}{
		{name: "defaults to stdout", args: nil,
			wantStdout: func(s string) bool { return s == string(committed) }},
		{name: "example config to a file", args: []string{"--config.file=" + example, "--output=" + filepath.Join(dir, "out.yml")},
			wantStdout: func(s string) bool { return s == "" },
			wantFile:   `max by (fleet, node, pool) (rota_fleet_node_state{state=~"powering_on|booting",pool="gpu-h100"}) == 1` + "\n        for: 15m"},
		// node_exporter's job scraped every 60s under a 15s prometheus.scrape_interval leaves
		// one sample in each 1m rate window: its servers are never idle, and nothing said why.
		{name: "other telemetry sources: the scrape interval their jobs need", args: []string{"--config.file=" + filepath.Join(root, "alerts", "testdata", "sources.yml"), "--output=" + filepath.Join(dir, "out.yml")},
			wantStdout: func(s string) bool { return s == "" },
			wantFile:   "node_cpu_seconds_total",
			wantStderr: "rotactl: warning: the rules read telemetry source fleet (node_exporter, dcgm-exporter) at prometheus.scrape_interval (15s): scrape its exporters at least every 15s"},
		{name: "invalid config", args: []string{"--config.file=" + broken}, code: 1,
			wantStdout: func(s string) bool { return s == "" }, wantStderr: "policy.idle.cpu_threshold"},
		{name: "unwritable output", args: []string{"--output=" + filepath.Join(dir, "missing", "out.yml")}, code: 1,
			wantStdout: func(s string) bool { return s == "" },
			wantStderr: "rotactl: rules generate: writing " + filepath.Join(dir, "missing", "out.yml") + ": no folder " + filepath.Join(dir, "missing") + "\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := rotactlInProcess(append([]string{"rules", "generate"}, tc.args...)...)
			if code != tc.code || !tc.wantStdout(out) || !strings.Contains(errOut, tc.wantStderr) {
				t.Fatalf("exit %d, stdout %d bytes, stderr %q; want exit %d and stderr with %q", code, len(out), errOut, tc.code, tc.wantStderr)
			}
			if tc.wantFile != "" {
				b, err := os.ReadFile(filepath.Join(dir, "out.yml"))
				if err != nil || !strings.Contains(string(b), tc.wantFile) {
					t.Fatalf("output file (%v) lacks %q", err, tc.wantFile)
				}
			}
		})
	}
}

// TestRulesGenerateTests: --tests.output writes promtool tests derived from the same config,
// and promtool passes them against the rules written beside them; without --output it is a
// usage error.
func TestRulesGenerateTests(t *testing.T) {
	promtool := testutil.Tool(t, "promtool")
	dir := t.TempDir()
	rules, tests := filepath.Join(dir, "rules", "rota-rules.yml"), filepath.Join(dir, "tests")
	if err := os.MkdirAll(filepath.Dir(rules), 0o755); err != nil {
		t.Fatal(err)
	}
	example := filepath.Join(testutil.RepoRoot(t), "deploy", "rota", "rota.yml")
	if _, errOut, code := rotactlInProcess("rules", "generate", "--config.file="+example, "--output="+rules, "--tests.output="+tests); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	files, err := filepath.Glob(filepath.Join(tests, "*.test.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no tests written: %v", err)
	}
	for _, f := range files {
		if out, err := exec.Command(promtool, "test", "rules", f).CombinedOutput(); err != nil {
			t.Errorf("promtool test rules %s: %v\n%s", f, err, out)
		}
	}
	if _, errOut, code := rotactlInProcess("rules", "generate", "--tests.output="+tests); code != 2 || !strings.Contains(errOut, "needs --output") {
		t.Errorf("--tests.output without --output: exit %d, %q", code, errOut)
	}
}
