package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rotahq/rota/internal/testutil"
)

// binDir holds rota, rotactl and rota-exporter, built once for every test that needs them.
var binDir struct {
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir.path != "" {
		os.RemoveAll(binDir.path)
	}
	os.Exit(code)
}

// binaries builds the three packaged binaries (once) and returns their folder.
func binaries(t *testing.T) string {
	t.Helper()
	root := testutil.RepoRoot(t)
	binDir.once.Do(func() {
		dir, err := os.MkdirTemp("", "rota-deploy-bin-")
		if err != nil {
			binDir.err = err
			return
		}
		binDir.path = dir
		cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/rota", "./cmd/rotactl", "./cmd/rota-exporter")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binDir.err = fmt.Errorf("%w\n%s", err, out)
		}
	})
	if binDir.err != nil {
		t.Fatalf("building the binaries: %v", binDir.err)
	}
	return binDir.path
}

// requireRoot skips the test when not root (failing in CI, which runs as root): it installs
// files owned by root.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testutil.Missing(t, "root", "sudo go test ./deploy (as root)")
	}
}

// mustRun runs a command and fails the test with its output if it fails.
func mustRun(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// verifyUnit runs systemd-analyze verify on a unit file (and the drop-ins beside it), which must
// pass with no output: it reports unknown keys and bad values as warnings only.
func verifyUnit(t *testing.T, path string) {
	t.Helper()
	analyze := testutil.Tool(t, "systemd-analyze")
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) != 0 {
		t.Errorf("systemd-analyze verify %s: %v\n%s", filepath.Base(path), err, out)
	}
}
