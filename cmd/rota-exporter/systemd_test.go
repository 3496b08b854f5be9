package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/testutil"
)

func deployFile(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join(testutil.RepoRoot(t), "deploy", "systemd", name)
}

// TestSystemdUnitVerifies: systemd-analyze accepts the unit with no warning (unknown keys and bad
// values are only warnings to it), and the unit keeps its hardening.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze := testutil.Tool(t, "systemd-analyze")
	unit, err := os.ReadFile(deployFile(t, "rota-exporter.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"DynamicUser=yes", "NoNewPrivileges=yes", "CapabilityBoundingSet=\n", "ProtectSystem=strict",
		"DevicePolicy=closed", "DeviceAllow=char-nvidia* rw", "EnvironmentFile=-/etc/default/rota-exporter",
		"ExecStart=/usr/local/bin/rota-exporter $ARGS",
	} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("unit lacks %q", want)
		}
	}
	// Verify a copy whose ExecStart points at the binary just built (verify checks it exists).
	copyPath := filepath.Join(t.TempDir(), "rota-exporter.service")
	text := strings.Replace(string(unit), "/usr/local/bin/rota-exporter", exporterBinary(t), 1)
	if err := os.WriteFile(copyPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", copyPath).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) != 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestDefaultFileArgsRun: the flags shipped in rota-exporter.default start the exporter.
func TestDefaultFileArgsRun(t *testing.T) {
	args := envFileArgs(t, deployFile(t, "rota-exporter.default"))
	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	testutil.Start(t, exporterBinary(t), append(args, "--web.listen-address="+addr)...)
	testutil.WaitHTTP(t, "http://"+addr+"/metrics", 30*time.Second)
	if body := get(t, "http://"+addr+"/metrics"); !strings.Contains(body, `rota_exporter_collector_success{collector="cpu"} 1`) {
		t.Errorf("exporter started from the default file reports no CPU:\n%s", body)
	}
}

// envFileArgs reads ARGS from a systemd EnvironmentFile and splits it as ExecStart's $ARGS is.
func envFileArgs(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "ARGS="); ok {
			return strings.Fields(strings.Trim(v, `"`))
		}
	}
	t.Fatalf("%s sets no ARGS", path)
	return nil
}
