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

// builtDir is a scratch folder filled once, by the first test that needs it, for every test.
type builtDir struct {
	once sync.Once
	path string
	err  error
}

// get fills the folder with build (once) and returns it; a failed build fails every test that
// asks, with what went wrong.
func (b *builtDir) get(t *testing.T, what string, build func(dir string) error) string {
	t.Helper()
	b.once.Do(func() {
		if b.path, b.err = os.MkdirTemp("", "rota-deploy-"); b.err == nil {
			b.err = build(b.path)
		}
	})
	if b.err != nil {
		t.Fatalf("building %s: %v", what, b.err)
	}
	return b.path
}

// binDir holds rota, rotactl and rota-exporter; debDir the two .debs, built by package.sh as
// `make package` does.
var binDir, debDir builtDir

func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range []string{binDir.path, debDir.path} {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}

// run runs a command in the repository root and returns its error with its output.
func run(cmd *exec.Cmd, root string) error {
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", filepath.Base(cmd.Path), err, out)
	}
	return nil
}

// binaries builds the three packaged binaries (once) and returns their folder.
func binaries(t *testing.T) string {
	t.Helper()
	root := testutil.RepoRoot(t)
	return binDir.get(t, "the binaries", func(dir string) error {
		return run(exec.Command("go", "build", "-o", dir+"/", "./cmd/rota", "./cmd/rotactl", "./cmd/rota-exporter"), root)
	})
}

// debs builds the rota-exporter and rota packages with deploy/packaging/package.sh (once) and
// returns their paths.
func debs(t *testing.T) (exporter, rota string) {
	t.Helper()
	root := testutil.RepoRoot(t)
	env := []string{"NFPM=" + testutil.Tool(t, "nfpm")}
	testutil.Tool(t, "dpkg-shlibdeps") // package.sh computes the libc6 dependency with it
	dist := debDir.get(t, "the packages", func(dir string) error {
		cmd := exec.Command(filepath.Join(root, "deploy", "packaging", "package.sh"))
		cmd.Env = append(append(os.Environ(), env...), "DIST="+dir)
		return run(cmd, root)
	})
	find := func(name string) string {
		m, err := filepath.Glob(filepath.Join(dist, name+"_*.deb"))
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
