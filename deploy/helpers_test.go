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

// debDir holds the two .debs, built once by package.sh (as `make package` does) for every test
// that needs them.
var debDir struct {
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range []string{binDir.path, debDir.path} {
		if dir != "" {
			os.RemoveAll(dir)
		}
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

// debs builds the rota-exporter and rota packages with deploy/packaging/package.sh (once) and
// returns their paths.
func debs(t *testing.T) (exporter, rota string) {
	t.Helper()
	env := []string{"NFPM=" + testutil.Tool(t, "nfpm")}
	testutil.Tool(t, "dpkg-shlibdeps") // package.sh computes the libc6 dependency with it
	debDir.once.Do(func() {
		dir, err := os.MkdirTemp("", "rota-deploy-debs-")
		if err != nil {
			debDir.err = err
			return
		}
		debDir.path = dir
		cmd := exec.Command(filepath.Join(testutil.RepoRoot(t), "deploy", "packaging", "package.sh"))
		cmd.Env = append(append(os.Environ(), env...), "DIST="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			debDir.err = fmt.Errorf("package.sh: %w\n%s", err, out)
		}
	})
	if debDir.err != nil {
		t.Fatalf("building the packages: %v", debDir.err)
	}
	find := func(name string) string {
		m, err := filepath.Glob(filepath.Join(debDir.path, name+"_*.deb"))
		if err != nil || len(m) != 1 {
			t.Fatalf("package.sh made %v for %s (%v), want one .deb", m, name, err)
		}
		return m[0]
	}
	return find("rota-exporter"), find("rota")
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
