package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rotahq/rota/internal/testutil"
)

// TestInventoryTargets: the verb writes deploy/prometheus's targets for the example config, to
// standard output or to --output, and refuses a config that does not load.
func TestInventoryTargets(t *testing.T) {
	root := testutil.RepoRoot(t)
	example := filepath.Join(root, "deploy", "rota", "rota.yml")
	golden, err := os.ReadFile(filepath.Join(root, "deploy", "prometheus", "targets", "rota.json"))
	if err != nil {
		t.Fatal(err)
	}
	bin := operatorBinary(t)
	out := filepath.Join(t.TempDir(), "rota.json")
	absent := filepath.Join(t.TempDir(), "absent")
	tests := []struct {
		name       string
		args       []string
		wantStdout string
		wantFile   string
		wantCode   int
		wantStderr string
	}{
		{name: "stdout", args: []string{"--config.file=" + example}, wantStdout: string(golden)},
		{name: "output file", args: []string{"--config.file=" + example, "--output=" + out}, wantFile: string(golden)},
		{name: "missing config", args: []string{"--config.file=" + filepath.Join(t.TempDir(), "absent.yml")},
			wantCode: 1, wantStderr: "reading config"},
		{name: "output folder missing", args: []string{"--config.file=" + example, "--output=" + filepath.Join(absent, "rota.json")},
			wantCode: 1, wantStderr: "rotactl: writing " + filepath.Join(absent, "rota.json") + ": no folder " + absent + "\n"},
		{name: "output folder a file", args: []string{"--config.file=" + example, "--output=" + filepath.Join(out, "x", "rota.json")},
			wantCode: 1, wantStderr: "writing " + filepath.Join(out, "x", "rota.json") + ": "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runRotactl(t, bin, nil, append([]string{"inventory", "targets"}, tt.args...)...)
			if code != tt.wantCode || stdout != tt.wantStdout || !strings.Contains(stderr, tt.wantStderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr containing %q",
					code, stdout, stderr, tt.wantCode, tt.wantStdout, tt.wantStderr)
			}
			if tt.wantFile != "" {
				got, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != tt.wantFile {
					t.Errorf("%s holds\n%s\nwant\n%s", out, got, tt.wantFile)
				}
			}
		})
	}
}
