package deploy

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/testutil"
)

// otherHash is bcrypt("other-pass"): the role keeps a value that is already a bcrypt hash.
const otherHash = "$2b$10$pMa.NUwz0TccQC1Vy0ILa.LAk4W0y520j5van9krK8afa3DePpIKq"

// roleRun runs deploy/ansible/site.yml on this machine (local connection) with a role's paths
// in a scratch folder and service handling off (no systemd runs here).
type roleRun struct {
	t         *testing.T
	playbook  string
	dir       string
	inventory string
	base      map[string]any // the scratch paths, under every run's vars
}

// newRoleRun is a run of the rota_exporter role (this host in the group rota_exporters).
func newRoleRun(t *testing.T) *roleRun {
	r := newGroupRun(t, "rota_exporters")
	r.base = map[string]any{
		"rota_exporter_binary":         filepath.Join(binaries(t), "rota-exporter"),
		"rota_exporter_binary_dest":    r.path("rota-exporter"),
		"rota_exporter_unit_dir":       r.path("units"),
		"rota_exporter_defaults_file":  r.path("rota-exporter.default"),
		"rota_exporter_config_dir":     r.path("etc"),
		"rota_exporter_gpu_device":     r.path("nvidia0"),
		"rota_exporter_manage_service": false,
	}
	return r
}

// newGroupRun runs site.yml with this host alone in group: the plays of the other groups
// match no host.
func newGroupRun(t *testing.T, group string) *roleRun {
	requireRoot(t)
	r := &roleRun{t: t, playbook: testutil.Tool(t, "ansible-playbook"), dir: t.TempDir()}
	r.inventory = filepath.Join(r.dir, "inventory.ini")
	inv := "[" + group + "]\nlocalhost ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n"
	if err := os.WriteFile(r.inventory, []byte(inv), 0o644); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *roleRun) path(name string) string { return filepath.Join(r.dir, name) }

var recap = regexp.MustCompile(`localhost\s+:\s+ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=0\b`)

// run applies the role with vars (on top of the scratch paths) and returns how many tasks
// changed something.
func (r *roleRun) run(vars map[string]any) int {
	t := r.t
	t.Helper()
	out, err := r.play(nil, vars)
	if err != nil {
		t.Fatalf("ansible-playbook: %v\n%s", err, out)
	}
	m := recap.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no clean play recap:\n%s", out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// runTwice applies the role twice with vars: the first run changes something, the second
// nothing (the role is idempotent).
func (r *roleRun) runTwice(vars map[string]any) {
	r.t.Helper()
	if n := r.run(vars); n == 0 {
		r.t.Fatal("first run changed nothing")
	}
	if n := r.run(vars); n != 0 {
		r.t.Errorf("second run changed %d tasks, want 0 (not idempotent)", n)
	}
}

// fileMode is a file the role writes (relative to the scratch folder) and its mode.
type fileMode struct {
	name string
	mode fs.FileMode
}

// checkModes: each file is there with its mode.
func (r *roleRun) checkModes(files []fileMode) {
	r.t.Helper()
	for _, f := range files {
		if fi, err := os.Stat(r.path(f.name)); err != nil || fi.Mode() != f.mode {
			r.t.Errorf("%s: %v (%v), want %v", f.name, fi.Mode(), err, f.mode)
		}
	}
}

// play applies the role with vars (on top of the scratch paths) and more environment, and
// returns its output and whether ansible-playbook failed.
func (r *roleRun) play(env []string, vars map[string]any) (string, error) {
	t := r.t
	t.Helper()
	all := map[string]any{}
	for k, v := range r.base {
		all[k] = v
	}
	for k, v := range vars {
		all[k] = v
	}
	b, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	varsFile := r.path("vars.json")
	if err := os.WriteFile(varsFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(r.path("units"), 0o755); err != nil {
		t.Fatal(err)
	}
	site := filepath.Join(testutil.RepoRoot(t), "deploy", "ansible", "site.yml")
	cmd := exec.Command(r.playbook, "-i", r.inventory, "-e", "@"+varsFile, site)
	cmd.Env = append(append(os.Environ(), "ANSIBLE_NOCOLOR=1"), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// requirePasslib skips the test locally, and fails it in CI, when the controller's Python (the
// interpreter of ansible-playbook) lacks passlib, which Ansible's password_hash('bcrypt') needs.
func (r *roleRun) requirePasslib() {
	t := r.t
	t.Helper()
	b, err := os.ReadFile(r.playbook)
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	python := strings.Fields(strings.TrimPrefix(line, "#!"))
	if !strings.HasPrefix(line, "#!") || len(python) == 0 {
		t.Fatalf("%s: no interpreter line", r.playbook)
	}
	if err := exec.Command(python[0], append(python[1:], "-c", "import passlib.hash")...).Run(); err != nil {
		testutil.Missing(t, "python3-passlib (for "+strings.Join(python, " ")+")", "apt-get install python3-passlib (make tools)")
	}
}

// TestAnsibleRole: the role installs the binary, its unit and flags on a server without a GPU,
// with TLS and basic auth; a second run changes nothing; the exporter starts with what was
// written and serves only to the right users over TLS. A third run on a GPU server without web
// config turns the GPU collector on and removes the web config and the drop-in.
func TestAnsibleRole(t *testing.T) {
	t.Parallel()
	r := newRoleRun(t)
	r.requirePasslib()
	certPEM, keyPEM := selfSigned(t)
	secured := map[string]any{
		"rota_exporter_gpu":              "auto",
		"rota_exporter_tls_cert":         certPEM,
		"rota_exporter_tls_key":          keyPEM,
		"rota_exporter_basic_auth_users": map[string]string{"prometheus": "s3cret", "other": otherHash},
	}
	r.runTwice(secured)
	r.checkModes([]fileMode{
		{"rota-exporter", 0o755}, {"rota-exporter.default", 0o644}, {"units/rota-exporter.service", 0o644},
		{"units/rota-exporter.service.d/web-config.conf", 0o644},
		{"etc", fs.ModeDir | 0o700}, {"etc/web-config.yml", 0o600}, {"etc/tls.crt", 0o600}, {"etc/tls.key", 0o600},
	})
	unit, err := os.ReadFile(r.path("units/rota-exporter.service"))
	if err != nil || !strings.Contains(string(unit), "\nExecStart="+r.path("rota-exporter")+" $ARGS\n") {
		t.Errorf("the unit does not start the installed binary (%v)", err)
	}
	verifyUnit(t, r.path("units/rota-exporter.service"))

	args := envFileArgs(t, r.path("rota-exporter.default"))
	if !slices.Contains(args, "--no-collector.gpu") {
		t.Errorf("no GPU device, yet the flags %v keep the GPU collector", args)
	}
	serveWithWrittenConfig(t, r, args, certPEM)

	// The same server gains a GPU and drops its web config.
	if err := os.WriteFile(r.path("nvidia0"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if n := r.run(map[string]any{"rota_exporter_gpu": "auto"}); n == 0 {
		t.Error("third run changed nothing")
	}
	args = envFileArgs(t, r.path("rota-exporter.default"))
	if slices.Contains(args, "--no-collector.gpu") || !slices.Contains(args, "--collector.gpu.timeout=3s") || hasPrefix(args, "--web.config.file=") {
		t.Errorf("GPU server without web config: flags %v", args)
	}
	for _, gone := range []string{"etc/web-config.yml", "etc/tls.crt", "etc/tls.key", "units/rota-exporter.service.d/web-config.conf"} {
		if _, err := os.Stat(r.path(gone)); !os.IsNotExist(err) {
			t.Errorf("%s left behind (%v)", gone, err)
		}
	}
}

// TestAnsibleRoleRefusesBadHashes: a controller whose Python cannot import passlib (a module
// of that name that fails to import comes first on PYTHONPATH, so Ansible falls back to crypt,
// which answers "*0"), and a broken hash in the inventory, each stop the play before anything
// is installed, with a message that names the package or the user.
func TestAnsibleRoleRefusesBadHashes(t *testing.T) {
	t.Parallel()
	shadow := t.TempDir()
	if err := os.MkdirAll(filepath.Join(shadow, "passlib"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shadow, "passlib", "__init__.py"),
		[]byte("raise ImportError('passlib hidden by the test')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		env   []string
		users map[string]string
		want  string
	}{
		{"no passlib on the controller", []string{"PYTHONPATH=" + shadow},
			map[string]string{"prometheus": "s3cret"}, "apt-get install python3-passlib"},
		{"a broken hash", nil,
			map[string]string{"prometheus": "$2b$10$tooshort", "other": otherHash}, "user prometheus of rota_exporter_basic_auth_users: not a valid bcrypt hash"},
		{"crypt's failure mark", nil,
			map[string]string{"prometheus": "$2b$*0"}, "user prometheus of rota_exporter_basic_auth_users: not a valid bcrypt hash"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRoleRun(t)
			out, err := r.play(tt.env, map[string]any{"rota_exporter_basic_auth_users": tt.users})
			if err == nil {
				t.Fatalf("the play passed:\n%s", out)
			}
			if !strings.Contains(strings.Join(strings.Fields(out), " "), tt.want) {
				t.Errorf("the failure does not say %q:\n%s", tt.want, out)
			}
			for _, f := range []string{"rota-exporter", "etc/web-config.yml", "rota-exporter.default"} {
				if _, err := os.Stat(r.path(f)); !os.IsNotExist(err) {
					t.Errorf("%s written by a failed play (%v)", f, err)
				}
			}
		})
	}
}

// TestAnsibleRoleKeepsGPUCollectorOnGPUPools: on a server of a GPU pool (rota_exporter_gpus
// above 0) the role never turns the GPU collector off: with no GPU device found it keeps the
// collector and says so, and rota_exporter_gpu false fails the play, changing nothing.
func TestAnsibleRoleKeepsGPUCollectorOnGPUPools(t *testing.T) {
	t.Parallel()
	r := newRoleRun(t)
	out, err := r.play(nil, map[string]any{"rota_exporter_gpu": "auto", "rota_exporter_gpus": 8})
	if err != nil || !recap.MatchString(out) {
		t.Fatalf("ansible-playbook: %v\n%s", err, out)
	}
	args := envFileArgs(t, r.path("rota-exporter.default"))
	if slices.Contains(args, "--no-collector.gpu") || !slices.Contains(args, "--collector.gpu.timeout=3s") {
		t.Errorf("GPU pool server without a GPU device: flags %v, want the GPU collector on", args)
	}
	if !strings.Contains(strings.Join(strings.Fields(out), " "), "is missing on a server whose rota pool declares 8 GPUs") {
		t.Errorf("no warning about the missing device:\n%s", out)
	}
	before, err := os.ReadFile(r.path("rota-exporter.default"))
	if err != nil {
		t.Fatal(err)
	}
	out, err = r.play(nil, map[string]any{"rota_exporter_gpu": "false", "rota_exporter_gpus": 8})
	if err == nil {
		t.Fatalf("the play passed with the GPU collector off on a GPU pool's server:\n%s", out)
	}
	if !strings.Contains(strings.Join(strings.Fields(out), " "), "rota_exporter_gpu cannot be false") {
		t.Errorf("the play did not name why it failed:\n%s", out)
	}
	if after, err := os.ReadFile(r.path("rota-exporter.default")); err != nil || !bytes.Equal(after, before) {
		t.Errorf("a refused run changed the flags (%v):\n%s", err, after)
	}
}

// serveWithWrittenConfig starts the installed exporter with the written flags, reading the web
// config where systemd would put its credentials copy (the same file names), and checks TLS and
// basic auth for both users.
func serveWithWrittenConfig(t *testing.T, r *roleRun, args []string, certPEM string) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	var run []string
	for _, a := range args {
		a = strings.Replace(a, "/run/credentials/rota-exporter.service", r.path("etc"), 1)
		if strings.HasPrefix(a, "--web.listen-address=") {
			a = "--web.listen-address=" + addr
		}
		run = append(run, a)
	}
	testutil.Start(t, r.path("rota-exporter"), run...)

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(certPEM))
	// A scrape checks a bcrypt hash (web.yml's basic auth): seconds under -race on a loaded
	// 2-core machine, where 5 s once ran out.
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	get := func(user, pass string) (int, string, error) {
		return testutil.GetWithAuth(client, "https://"+addr+"/metrics", user, pass)
	}
	testutil.Eventually(t, 30*time.Second, "the exporter serves TLS", func() error {
		_, _, err := get("", "")
		return err
	})
	for _, tt := range []struct {
		user, pass string
		want       int
	}{
		{"", "", http.StatusUnauthorized},
		{"prometheus", "wrong", http.StatusUnauthorized},
		{"prometheus", "s3cret", http.StatusOK},
		{"other", "other-pass", http.StatusOK},
	} {
		code, body, err := get(tt.user, tt.pass)
		if err != nil || code != tt.want || (code == http.StatusOK && !strings.Contains(body, "rota_node_cpus ")) {
			t.Errorf("GET /metrics as %q/%q: %d %v, want %d", tt.user, tt.pass, code, err, tt.want)
		}
	}
}

// TestAnsibleLint: ansible-lint (production profile, its strictest) passes on the role and the
// playbook.
func TestAnsibleLint(t *testing.T) {
	t.Parallel()
	lint := testutil.Tool(t, "ansible-lint")
	out := mustRun(t, []string{"ANSIBLE_NOCOLOR=1", "NO_COLOR=1"}, lint, "--offline", "--profile=production",
		filepath.Join(testutil.RepoRoot(t), "deploy", "ansible"))
	t.Log(out)
}

// selfSigned returns a certificate for 127.0.0.1 and its key, PEM-encoded.
func selfSigned(t *testing.T) (certPEM, keyPEM string) {
	c, k := testutil.SelfSigned(t)
	return string(c), string(k)
}

func hasPrefix(args []string, prefix string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, prefix) })
}
