package main

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/api/apifake"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

var updateOperator = flag.Bool("update", false, "rewrite the golden files in testdata/")

// operatorBinary builds rotactl into a temporary folder and returns its path (go's build cache
// makes every build after the first a link).
func operatorBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", dir, ".").CombinedOutput(); err != nil {
		t.Fatalf("building rotactl: %v\n%s", err, out)
	}
	return filepath.Join(dir, "rotactl")
}

// runRotactl runs the built binary with args and extra environment.
func runRotactl(t *testing.T, bin string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "ROTA_TOKEN_FILE=")
	cmd.Env = append(cmd.Env, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// TestOperatorVerbsBinary builds rotactl once and runs its verbs as a user would.
func TestOperatorVerbsBinary(t *testing.T) {
	bin := operatorBinary(t)
	t.Run("validate", func(t *testing.T) { testValidate(t, bin) })
	t.Run("api verbs", func(t *testing.T) { testAPIVerbs(t, bin) })
	t.Run("backup", func(t *testing.T) { testBackup(t, bin) })
	t.Run("api over TLS", func(t *testing.T) { testAPIOverTLS(t, bin) })
}

func testValidate(t *testing.T, bin string) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.yml")
	err := os.WriteFile(broken, []byte(`
server:
  webhook_auth_disabled: true
jobs:
  adapter: exec
policy:
  idle:
    cpu_threshold: 1.5
pools:
  - name: cpu
    profile: {cpu_cores: 8}
    cost: {hourly: 1}
    nodes:
      - name: n1
        bmc: {protocol: ipmi, username: rota, password_file: /etc/rota/n1}
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	example := filepath.Join(testutil.RepoRoot(t), "deploy", "rota", "rota.yml")
	tests := []struct {
		name       string
		file       string
		wantCode   int
		wantOut    []string
		wantStderr []string
	}{
		{name: "deploy example", file: example, wantCode: 0, wantOut: []string{"rota.yml: valid", "4 servers in 2 pools: cpu-epyc (2), gpu-h100 (2)", "jobs adapter: slurm"}},
		{name: "broken config names every problem", file: broken, wantCode: 1, wantStderr: []string{
			"problem(s) in config",
			"jobs.exec.state_command: required", "jobs.exec.demand_command: required",
			"jobs.exec.drain_command: required", "jobs.exec.resume_command: required",
			"policy.idle.cpu_threshold: 1.5 is not a ratio",
			"pools[0].nodes[0].bmc.host",
		}},
		{name: "missing file", file: filepath.Join(dir, "missing.yml"), wantCode: 1, wantStderr: []string{"missing.yml"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runRotactl(t, bin, nil, "validate", "--config.file", tc.file)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.wantCode, out, errOut)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.wantStderr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
}

const operatorToken = "rotactl-test-token"

// operatorAPI starts rota's real API server on the example fake backend and returns its URL,
// the backend and a token file.
func operatorAPI(t *testing.T) (string, *apifake.Backend, string) {
	backend := apifake.Example()
	url, tokenFile, _ := operatorAPIServer(t, httptest.NewServer, backend)
	return url, backend, tokenFile
}

// operatorAPIServer is operatorAPI on backend, started by start (httptest.NewServer or
// NewTLSServer); it also returns the server.
func operatorAPIServer(t *testing.T, start func(http.Handler) *httptest.Server, backend *apifake.Backend) (string, string, *httptest.Server) {
	t.Helper()
	logger, _ := logtest.NewNullLogger()
	srv, err := api.NewServer(api.Options{
		Backend: backend, Registry: prometheus.NewRegistry(),
		APIToken: api.NewToken(operatorToken), WebhookAuthDisabled: true,
		Clock: clock.Real{}, Log: logger.WithField("component", "api"),
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := start(srv)
	t.Cleanup(ts.Close)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(operatorToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return ts.URL, tokenFile, ts
}

// testAPIOverTLS: rotactl talks to a rota behind TLS, trusting its CA with --rota.ca-file.
func testAPIOverTLS(t *testing.T, bin string) {
	url, tokenFile, ts := operatorAPIServer(t, httptest.NewTLSServer, apifake.Example())
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runRotactl(t, bin, nil, "status", "--rota.url", url, "--rota.token-file", tokenFile); code != 1 || !strings.Contains(stderr, "certificate") {
		t.Errorf("an untrusted certificate: exit %d, %s", code, stderr)
	}
	if stdout, stderr, code := runRotactl(t, bin, nil, "status", "--rota.url", url, "--rota.token-file", tokenFile, "--rota.ca-file", ca); code != 0 || !strings.Contains(stdout, "gpu01") {
		t.Errorf("with --rota.ca-file: exit %d\n%s%s", code, stdout, stderr)
	}
}

func testAPIVerbs(t *testing.T, bin string) {
	url, backend, tokenFile := operatorAPI(t)
	wrongToken := filepath.Join(t.TempDir(), "wrong")
	if err := os.WriteFile(wrongToken, []byte("nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	withToken := func(args ...string) []string {
		return append(args, "--rota.url", url, "--rota.token-file", tokenFile)
	}
	// A fleet with a server taken out of the config.
	left := apifake.New(api.Status{LastPass: time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC), Nodes: []api.NodeStatus{{Name: "cpu01", Pool: "cpu"},
		{Name: "old01", State: fleet.StateOn, LeftConfig: "not in the config any more: pinned or in maintenance: rota leaves it as it is"}}})
	leftURL, _, _ := operatorAPIServer(t, httptest.NewServer, left)
	withLeft := func(args ...string) []string {
		return append(args, "--rota.url", leftURL, "--rota.token-file", tokenFile)
	}
	tests := []struct {
		name       string
		args       []string
		env        []string
		wantCode   int
		golden     string // stdout compared with testdata/<golden>
		wantOut    string
		wantStderr string
		check      func(t *testing.T)
	}{
		{name: "status table", args: withToken("status"), golden: "status.txt"},
		{name: "status json", args: withToken("status", "-o", "json"), golden: "status.json"},
		{name: "status with the token from the environment", args: []string{"status", "--rota.url", url}, env: []string{"ROTA_TOKEN_FILE=" + tokenFile}, wantOut: "gpu01"},
		{name: "status without a token", args: []string{"status", "--rota.url", url}, wantCode: 1, wantStderr: "--rota.token-file"},
		{name: "status with a wrong token", args: []string{"status", "--rota.url", url, "--rota.token-file", wrongToken}, wantCode: 1, wantStderr: "403"},
		{name: "status with no rota listening", args: []string{"status", "--rota.url", "http://127.0.0.1:1", "--rota.token-file", tokenFile}, wantCode: 1, wantStderr: "connection refused"},
		{name: "explain", args: withToken("explain", "gpu01"), golden: "explain.txt"},
		{name: "explain a busy node", args: withToken("explain", "cpu01"), wantOut: "left alone (allocated): 3 jobs running"},
		{name: "explain unknown node", args: withToken("explain", "nope"), wantCode: 1, wantStderr: "no such node"},
		{name: "plan", args: withToken("plan"), golden: "plan.txt"},
		{name: "pin", args: withToken("pin", "cpu01", "--note", "bios update"), wantOut: "pinned cpu01", check: func(t *testing.T) {
			if pinned, note := backend.Pin("cpu01"); !pinned || !strings.HasSuffix(note, "bios update") {
				t.Errorf("pin = %v %q", pinned, note)
			}
		}},
		{name: "pin unknown node", args: withToken("pin", "nope"), wantCode: 1, wantStderr: "no such node"},
		{name: "unpin", args: withToken("unpin", "cpu01"), wantOut: "unpinned cpu01", check: func(t *testing.T) {
			if pinned, _ := backend.Pin("cpu01"); pinned {
				t.Error("still pinned")
			}
		}},
		{name: "maintenance on", args: withToken("maintenance", "cpu01", "on", "--note", "new disks"), wantOut: "cpu01 in maintenance", check: func(t *testing.T) {
			if on, note := backend.Maintenance("cpu01"); !on || !strings.HasSuffix(note, "new disks") {
				t.Errorf("maintenance = %v %q", on, note)
			}
		}},
		{name: "maintenance of an unknown node", args: withToken("maintenance", "nope", "on"), wantCode: 1, wantStderr: "no such node"},
		{name: "maintenance off", args: withToken("maintenance", "cpu01", "off"), wantOut: "cpu01 out of maintenance", check: func(t *testing.T) {
			if on, _ := backend.Maintenance("cpu01"); on {
				t.Error("still in maintenance")
			}
		}},
		{name: "maintenance needs on or off", args: withToken("maintenance", "cpu01", "maybe"), wantCode: 2},
		{name: "pause", args: withToken("pause", "--note", "incident 7"), wantOut: "paused", check: func(t *testing.T) {
			if paused, note := backend.Paused(); !paused || !strings.HasSuffix(note, "incident 7") {
				t.Errorf("pause = %v %q", paused, note)
			}
		}},
		{name: "resume", args: withToken("resume"), wantOut: "resumed", check: func(t *testing.T) {
			if paused, _ := backend.Paused(); paused {
				t.Error("still paused")
			}
		}},
		{name: "pin a server that left the config", args: withLeft("pin", "old01"), wantCode: 1, wantStderr: "no such node"},
		{name: "maintenance on of a server that left the config", args: withLeft("maintenance", "old01", "on"), wantCode: 1, wantStderr: "no such node"},
		{name: "unpin a server that left the config", args: withLeft("unpin", "old01"), wantOut: "unpinned old01: rota manages it again (or, if it left the config, settles it: see rotactl status)"},
		{name: "maintenance off of a server that left the config", args: withLeft("maintenance", "old01", "off"), wantOut: "old01 out of maintenance: rota manages it again (or, if it left the config, settles it"},
		{name: "forget a server that left the config", args: withLeft("forget", "old01", "--note", "decommissioned"), wantOut: "old01 forgotten (it was on since"},
		{name: "explain a server forgotten", args: withLeft("explain", "old01"), wantOut: "node       old01 (in no pool, no record: forgotten)\nforgotten  2026-11-20T09:30:00Z: record forgotten ("},
		{name: "forget a server in the config", args: withToken("forget", "cpu01"), wantCode: 1, wantStderr: "record kept: it is in the config"},
		{name: "forget an unknown node", args: withToken("forget", "nope"), wantCode: 1, wantStderr: "no such node"},
		{name: "forget without a node is a usage error", args: withToken("forget"), wantCode: 2},
		{name: "pin without a node is a usage error", args: withToken("pin"), wantCode: 2},
		{name: "bad output format is a usage error", args: withToken("status", "-o", "yaml"), wantCode: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runRotactl(t, bin, tc.env, tc.args...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.wantCode, out, errOut)
			}
			if tc.golden != "" {
				operatorGolden(t, filepath.Join("testdata", tc.golden), out)
			}
			if !strings.Contains(out, tc.wantOut) {
				t.Errorf("stdout lacks %q:\n%s", tc.wantOut, out)
			}
			if !strings.Contains(errOut, tc.wantStderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantStderr, errOut)
			}
			if strings.Contains(out+errOut, operatorToken) {
				t.Error("the token was printed")
			}
			if tc.check != nil {
				tc.check(t)
			}
		})
	}
}

func operatorGolden(t *testing.T, path, got string) {
	t.Helper()
	if *updateOperator {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it):\n got:\n%s\nwant:\n%s", path, got, want)
	}
}

// TestWatch: one draw at once and one per tick until cancelled; a terminal is cleared before
// each draw, other output gets a blank line after each; a failed draw is reported, not fatal.
func TestWatch(t *testing.T) {
	for _, tty := range []bool{true, false} {
		t.Run(map[bool]string{true: "terminal", false: "pipe"}[tty], func(t *testing.T) {
			var out, errOut bytes.Buffer
			ctx, cancel := context.WithCancel(context.Background())
			ticks := make(chan time.Time)
			draws := 0
			show := func() error {
				draws++
				switch draws {
				case 2:
					return errors.New("rota restarting")
				case 3:
					cancel()
				}
				out.WriteString("frame\n")
				return nil
			}
			done := make(chan struct{})
			go func() {
				watch(ctx, env{stdout: &out, stderr: &errOut}, ticks, tty, show)
				close(done)
			}()
			ticks <- time.Time{}
			ticks <- time.Time{}
			<-done
			if draws != 3 {
				t.Errorf("%d draws, want 3", draws)
			}
			wantClears := 0
			if tty {
				wantClears = 3
			}
			if got := strings.Count(out.String(), clearScreen); got != wantClears {
				t.Errorf("%d screen clears, want %d", got, wantClears)
			}
			if !strings.Contains(errOut.String(), "rota restarting") {
				t.Errorf("the failed draw was not reported: %q", errOut.String())
			}
		})
	}
}

// testBackup: rotactl backup keeps a copy that opens as a store with the records rota has, and
// keeps nothing when what arrives is not a store.
func testBackup(t *testing.T, bin string) {
	url, backend, tokenFile := operatorAPI(t)
	dir := t.TempDir()
	src, err := store.Open(filepath.Join(dir, "rota.db"), store.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	want := store.Node{State: fleet.StateOff, Since: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), Maintenance: true, MaintenanceNote: "carol"}
	if err := src.UpdateNode("gpu01", func(n *store.Node) error { *n = want; return nil }); err != nil {
		t.Fatal(err)
	}
	var snapshot bytes.Buffer
	if _, err := src.Backup(&snapshot); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		data     []byte
		wantCode int
		wantKept bool
		wantErr  string
	}{
		{name: "a store", data: snapshot.Bytes(), wantKept: true},
		{name: "not a store", data: []byte("<html>proxy error</html>"), wantCode: 1, wantErr: "not a whole store"},
		// A copy cut short mid-page made the check die with SIGBUS inside bbolt, leaving the
		// temporary file.
		{name: "cut mid-page", data: snapshot.Bytes()[:10000], wantCode: 1, wantErr: "cut short"},
		{name: "cut at a page", data: snapshot.Bytes()[:8192], wantCode: 1, wantErr: "cut short"},
		{name: "empty", data: []byte{}, wantCode: 1, wantErr: "empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			backend.SetBackup(tc.data, nil)
			out := filepath.Join(t.TempDir(), "backup.db")
			stdout, stderr, code := runRotactl(t, bin, nil, "backup", "--output", out, "--rota.url", url, "--rota.token-file", tokenFile)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.wantCode, stdout, stderr)
			}
			entries, _ := os.ReadDir(filepath.Dir(out))
			if kept := len(entries) == 1 && entries[0].Name() == "backup.db"; kept != tc.wantKept || (!tc.wantKept && len(entries) != 0) {
				t.Fatalf("files left: %v, want the backup kept: %v", entries, tc.wantKept)
			}
			if !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("stderr %q does not say %q", stderr, tc.wantErr)
			}
			if !tc.wantKept {
				return
			}
			b, err := store.Open(out, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if got, err := b.Node("gpu01"); err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("backup has %+v, %v; want %+v", got, err, want)
			}
		})
	}
	// --output naming the running rota's own store: the copy was renamed over it, the rota
	// went on writing to the unlinked file (a pin made after it was lost at the next start)
	// and its lock no longer guarded the path (a second rota started on it). The store stays.
	t.Run("the running rota's store", func(t *testing.T) {
		backend.SetBackup(snapshot.Bytes(), nil)
		live := filepath.Join(t.TempDir(), "rota.db")
		held, err := store.Open(live, store.Options{Create: true}) // this process is the rota
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		before, err := os.Stat(live)
		if err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := runRotactl(t, bin, nil, "backup", "--output", live, "--rota.url", url, "--rota.token-file", tokenFile)
		if code != 1 || !strings.Contains(stderr, "locked by a running process") {
			t.Fatalf("exit %d, want 1 saying the file is locked\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
		after, err := os.Stat(live)
		if err != nil || !os.SameFile(before, after) {
			t.Fatalf("the live store was replaced (%v)", err)
		}
		if entries, _ := os.ReadDir(filepath.Dir(live)); len(entries) != 1 {
			t.Errorf("files left: %v", entries)
		}
	})
}
