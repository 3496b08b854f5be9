package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rotahq/rota/internal/doccmd"
	"github.com/rotahq/rota/internal/testutil"
)

// TestDocCommandsParse: every rotactl command line of README.md and docs/ parses as rotactl
// parses it (subcommands, flags, enum values, required arguments), and every mention names
// subcommands and flags rotactl has.
func TestDocCommandsParse(t *testing.T) {
	e := env{stdout: io.Discard, stderr: io.Discard}
	app, _ := newApp(e)
	doccmd.Check(t, "rotactl", app.Model(), func(args []string) error {
		app, _ := newApp(e)
		return doccmd.ParseArgs(app, args)
	})
}

// TestMinimalConfigValidates: the README's minimal config passes `rotactl validate`.
func TestMinimalConfigValidates(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## A minimal config\n")
	if !ok {
		t.Fatal("README.md has no ## A minimal config section")
	}
	_, block, ok := strings.Cut(section, "```yaml\n")
	if !ok {
		t.Fatal("README.md's minimal config has no yaml block")
	}
	yml, _, ok := strings.Cut(block, "```")
	if !ok {
		t.Fatal("README.md's minimal config block is not closed")
	}
	file := filepath.Join(t.TempDir(), "rota.yml")
	if err := os.WriteFile(file, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	if code := run(context.Background(), []string{"validate", "--config.file=" + file}, env{stdout: &stdout, stderr: &stderr}); code != 0 {
		t.Fatalf("rotactl validate: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}
