package deploy

import (
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rotahq/rota/internal/testutil"
)

// installed is what the two packages put on a server, with modes and owners. The config and
// its folder belong to group rota (the daemon reads them; they may name secrets), the store's
// folder to user rota; everything else is root's.
var installed = []struct {
	path         string
	mode         fs.FileMode
	owner, group string
}{
	{"/usr/bin/rota", 0o755, "root", "root"},
	{"/usr/bin/rotactl", 0o755, "root", "root"},
	{"/usr/bin/rota-exporter", 0o755, "root", "root"},
	{"/usr/lib/systemd/system/rota.service", 0o644, "root", "root"},
	{"/usr/lib/systemd/system/rota-exporter.service", 0o644, "root", "root"},
	{"/usr/share/rota/rota-etcd.conf", 0o644, "root", "root"},
	{"/etc/default/rota", 0o644, "root", "root"},
	{"/etc/default/rota-exporter", 0o644, "root", "root"},
	{"/etc/rota", fs.ModeDir | 0o750, "root", "rota"},
	{"/etc/rota/rota.yml", 0o640, "root", "rota"},
	{"/var/lib/rota", fs.ModeDir | 0o750, "rota", "rota"},
}

var packages = []string{"rota", "rota-exporter"}

// TestPackagesInstallAndPurge builds both .debs as `make package` does, installs them on this
// machine (twice: the second is a reinstall, which configures again), checks files, owners,
// modes, conffiles, the user, the units and that no service was enabled or started, then purges
// them and checks that nothing is left but the system user and group (Debian keeps them); then
// the Ansible role installs the exporter's package, twice (the second run changes nothing). Root
// only; it skips where rota is installed for real.
// It changes the machine's dpkg database and users, so it is the package's one test that does
// not run in parallel: Go runs the others (t.Parallel, each in its own scratch folder) after it.
func TestPackagesInstallAndPurge(t *testing.T) {
	requireRoot(t)
	dpkg := testutil.Tool(t, "dpkg")
	for _, p := range packages {
		if exec.Command("dpkg-query", "-W", p).Run() == nil {
			t.Skipf("package %s is installed here: this test installs and purges its own", p)
		}
	}
	// Purge keeps the user (Debian's policy); one this test made, it removes itself.
	if _, err := user.Lookup("rota"); err != nil {
		t.Cleanup(func() {
			if out, err := exec.Command("userdel", "rota").CombinedOutput(); err != nil {
				t.Errorf("cleanup: userdel rota: %v\n%s", err, out)
			}
			if _, err := user.LookupGroup("rota"); err == nil {
				if out, err := exec.Command("groupdel", "rota").CombinedOutput(); err != nil {
					t.Errorf("cleanup: groupdel rota: %v\n%s", err, out)
				}
			}
		})
	}

	exporterDeb, rotaDeb := debs(t)
	both := []string{exporterDeb, rotaDeb}
	// Whatever happens below, leave the machine as it was.
	t.Cleanup(func() {
		if out, err := exec.Command(dpkg, append([]string{"--purge"}, packages...)...).CombinedOutput(); err != nil {
			t.Errorf("cleanup: dpkg --purge: %v\n%s", err, out)
		}
	})

	for round := 1; round <= 2; round++ {
		mustRun(t, nil, dpkg, append([]string{"-i"}, both...)...)
		checkInstalled(t)
		if t.Failed() {
			t.Fatalf("install %d failed its checks", round)
		}
	}
	mustRun(t, nil, dpkg, append([]string{"--purge"}, packages...)...)
	checkPurged(t)

	// The Ansible role's package install: the exporter's .deb from a controller path.
	r := newRoleRun(t)
	vars := map[string]any{"rota_exporter_binary": "", "rota_exporter_deb": exporterDeb,
		"rota_exporter_deb_cache_dir": r.path("cache"), "rota_exporter_gpu": false}
	if n := r.run(vars); n == 0 {
		t.Error("the role's package install changed nothing")
	}
	if st := mustRun(t, nil, "dpkg-query", "-W", "-f=${Status}", "rota-exporter"); st != "install ok installed" {
		t.Errorf("after the role, rota-exporter is %q", st)
	}
	if n := r.run(vars); n != 0 {
		t.Errorf("the role's second package run changed %d tasks, want 0", n)
	}
	checkNotEnabledOrRunning(t)
	mustRun(t, nil, dpkg, "--purge", "rota-exporter")
	checkPurged(t)
}

func checkInstalled(t *testing.T) {
	t.Helper()
	for _, f := range installed {
		fi, err := os.Stat(f.path)
		if err != nil {
			t.Error(err)
			continue
		}
		st := fi.Sys().(*syscall.Stat_t)
		owner, group := uidName(st.Uid), gidName(st.Gid)
		if fi.Mode() != f.mode || owner != f.owner || group != f.group {
			t.Errorf("%s: %v %s:%s, want %v %s:%s", f.path, fi.Mode(), owner, group, f.mode, f.owner, f.group)
		}
	}
	conffiles := mustRun(t, nil, "dpkg-query", "-W", "-f=${Conffiles}\n", "rota", "rota-exporter")
	for _, want := range []string{"/etc/rota/rota.yml", "/etc/default/rota", "/etc/default/rota-exporter"} {
		if !strings.Contains(conffiles, " "+want+" ") {
			t.Errorf("%s is not a conffile:\n%s", want, conffiles)
		}
	}
	// A system user with no login, whose home is the store's folder.
	passwd := strings.Split(strings.TrimSpace(mustRun(t, nil, "getent", "passwd", "rota")), ":")
	if uid, _ := strconv.Atoi(passwd[2]); uid >= 1000 || passwd[5] != "/var/lib/rota" || passwd[6] != "/usr/sbin/nologin" {
		t.Errorf("user rota: %v, want a system user, home /var/lib/rota, shell nologin", passwd)
	}
	// The daemon's user reads the shipped config, and the shipped config is valid.
	mustRun(t, nil, "runuser", "-u", "rota", "--", "/usr/bin/rotactl", "validate", "--config.file=/etc/rota/rota.yml")
	mustRun(t, nil, "/usr/bin/rota-exporter", "--version")

	unit, err := os.ReadFile("/usr/lib/systemd/system/rota-exporter.service")
	if err != nil || !strings.Contains(string(unit), "\nExecStart=/usr/bin/rota-exporter $ARGS\n") {
		t.Errorf("installed rota-exporter.service does not start /usr/bin/rota-exporter (%v)", err)
	}
	for _, p := range packages {
		verifyUnit(t, "/usr/lib/systemd/system/"+p+".service")
	}
	checkNotEnabledOrRunning(t)
}

// checkNotEnabledOrRunning: installing enables nothing (no link to either unit under
// /etc/systemd/system) and starts nothing (no process runs either binary).
func checkNotEnabledOrRunning(t *testing.T) {
	t.Helper()
	err := filepath.WalkDir("/etc/systemd/system", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if n := d.Name(); n == "rota.service" || n == "rota-exporter.service" {
			t.Errorf("%s: the unit was enabled", path)
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Error(err)
	}
	exes, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, exe := range exes {
		if target, err := os.Readlink(exe); err == nil && (target == "/usr/bin/rota" || target == "/usr/bin/rota-exporter") {
			t.Errorf("%s runs %s: a service was started", filepath.Dir(exe), target)
		}
	}
}

func checkPurged(t *testing.T) {
	t.Helper()
	for _, f := range installed {
		if _, err := os.Lstat(f.path); !os.IsNotExist(err) {
			t.Errorf("%s is still there after purge (%v)", f.path, err)
		}
	}
	for _, p := range packages {
		state := "/var/lib/systemd/deb-systemd-helper-enabled/" + p + ".service.dsh-also"
		if _, err := os.Lstat(state); !os.IsNotExist(err) {
			t.Errorf("%s is still there after purge (%v)", state, err)
		}
	}
	// Debian's policy: a package's system user outlives it (files may still belong to it).
	if _, err := user.Lookup("rota"); err != nil {
		t.Errorf("purge removed user rota (%v)", err)
	}
	if _, err := user.LookupGroup("rota"); err != nil {
		t.Errorf("purge removed group rota (%v)", err)
	}
}

// uidName and gidName turn an id into its name, or the number when it has none.
func uidName(id uint32) string {
	s := strconv.FormatUint(uint64(id), 10)
	if u, err := user.LookupId(s); err == nil {
		return u.Username
	}
	return s
}

func gidName(id uint32) string {
	s := strconv.FormatUint(uint64(id), 10)
	if g, err := user.LookupGroupId(s); err == nil {
		return g.Name
	}
	return s
}
