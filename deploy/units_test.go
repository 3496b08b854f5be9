package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rotahq/rota/internal/testutil"
)

// TestRotaUnit: rota.service keeps its hardening and systemd-analyze accepts it (the unit's
// ExecStart pointed at the binary just built: verify checks that it exists).
func TestRotaUnit(t *testing.T) {
	unit, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "deploy", "systemd", "rota.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"User=rota\n", "Group=rota\n", "NoNewPrivileges=yes", "CapabilityBoundingSet=\n", "ProtectSystem=strict",
		"ProtectHome=yes", "PrivateTmp=yes", "PrivateDevices=yes", "StateDirectory=rota\n",
		"RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX", "SystemCallFilter=@system-service",
		"Restart=on-failure", "EnvironmentFile=-/etc/default/rota", "ExecStart=/usr/bin/rota $ARGS",
		"ExecReload=/bin/kill -HUP $MAINPID\n",
	} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("rota.service lacks %q", want)
		}
	}
	copyPath := filepath.Join(t.TempDir(), "rota.service")
	text := strings.Replace(string(unit), "/usr/bin/rota ", filepath.Join(binaries(t), "rota")+" ", 1)
	if err := os.WriteFile(copyPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	verifyUnit(t, copyPath)
}

// TestRotaEtcdDropIn: the drop-in of an HA host (rota-etcd.conf) loads with rota.service
// (systemd-analyze reports every key it does not know) and says what it is for.
func TestRotaEtcdDropIn(t *testing.T) {
	root := testutil.RepoRoot(t)
	unit, err := os.ReadFile(filepath.Join(root, "deploy", "systemd", "rota.service"))
	if err != nil {
		t.Fatal(err)
	}
	dropIn, err := os.ReadFile(filepath.Join(root, "deploy", "systemd", "rota-etcd.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"After=etcd.service\n", "Restart=always\n", "store.backend: etcd"} {
		if !strings.Contains(string(dropIn), want) {
			t.Errorf("rota-etcd.conf lacks %q", want)
		}
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "rota.service.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(unit), "/usr/bin/rota ", filepath.Join(binaries(t), "rota")+" ", 1)
	if err := os.WriteFile(filepath.Join(dir, "rota.service"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rota.service.d", "etcd.conf"), dropIn, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SYSTEMD_UNIT_PATH", dir+":")
	verifyUnit(t, filepath.Join(dir, "rota.service"))
}

// TestRotaDefaultArgs: the flags shipped in rota.default are flags rota accepts.
func TestRotaDefaultArgs(t *testing.T) {
	args := envFileArgs(t, filepath.Join(testutil.RepoRoot(t), "deploy", "systemd", "rota.default"))
	if len(args) == 0 {
		t.Fatal("rota.default sets no flags")
	}
	// --help after the flags: kingpin parses them all, then prints the help and exits 0.
	mustRun(t, nil, filepath.Join(binaries(t), "rota"), append(args, "--help")...)
}

// envFileArgs reads ARGS from a systemd EnvironmentFile, split as ExecStart splits $ARGS.
func envFileArgs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "ARGS="); ok {
			return strings.Fields(strings.Trim(v, `"`))
		}
	}
	t.Fatalf("%s sets no ARGS", path)
	return nil
}
