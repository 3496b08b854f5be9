package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

// rotaBinary is the binary TestMain built: rota with the tests' fault hook (build tag
// rotafault, fault_rotafault.go), inert unless ROTA_TEST_FAULT is set.
var rotaBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rota-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	if out, err := exec.Command("go", "build", "-tags", "rotafault", "-o", dir, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building rota: %v\n%s", err, out)
	} else {
		rotaBinary = filepath.Join(dir, "rota")
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestExitCodes(t *testing.T) {
	bin := rotaBinary
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.yml")
	if err := os.WriteFile(broken, []byte("pools: []\nunknown_key: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	invalid := filepath.Join(dir, "invalid.yml")
	if err := os.WriteFile(invalid, []byte("policy:\n  idle:\n    cpu_threshold: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOutput []string
	}{
		{name: "version", args: []string{"--version"}, wantOutput: []string{"rota, version"}},
		{name: "unknown flag", args: []string{"--nope"}, wantCode: 2, wantOutput: []string{"--nope"}},
		{name: "negative max connections", args: []string{"--web.max-connections=-1"}, wantCode: 2, wantOutput: []string{"--web.max-connections must not be negative (0 means no limit), got -1"}},
		// kingpin's own int and enum values name no flag: the wrapper does (flagname.Wrap).
		{name: "max connections not a number", args: []string{"--web.max-connections=many"}, wantCode: 2, wantOutput: []string{"--web.max-connections: "}},
		{name: "unknown log level", args: []string{"--log.level=trace"}, wantCode: 2, wantOutput: []string{"--log.level: enum value must be one of debug,info,warn,error, got 'trace'"}},
		{name: "missing config", args: []string{"--config.file", filepath.Join(dir, "missing.yml")}, wantCode: 1, wantOutput: []string{"missing.yml"}},
		{name: "unparsable config", args: []string{"--config.file", broken}, wantCode: 1, wantOutput: []string{"unknown_key"}},
		{name: "every problem listed", args: []string{"--config.file", invalid}, wantCode: 1, wantOutput: []string{
			"server.webhook_token_file: required", "policy.idle.cpu_threshold: 2 is not a ratio",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command(bin, tc.args...).CombinedOutput()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d: %s", code, tc.wantCode, out)
			}
			for _, w := range tc.wantOutput {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestDaemonServesAndStops starts the real binary on a fleet whose Prometheus and BMC are down:
// it must serve its API and webhook, refuse to scale anything, and stop cleanly on SIGTERM.
func TestDaemonServesAndStops(t *testing.T) {
	bin := rotaBinary
	dir := t.TempDir()
	write := func(name, content string) string { return writeFile(t, dir, name, content) }
	apiToken := write("api.token", "api-token\n")
	webhookToken := write("webhook.token", "webhook-token\n")
	dead := testutil.FreePort(t) // nothing listens there
	port := testutil.FreePort(t)
	cfg := write("rota.yml", fmt.Sprintf(`
prometheus:
  url: http://127.0.0.1:%[1]d
  timeout: 1s
server:
  listen_address: 127.0.0.1:%[2]d
  api_token_file: %[3]s
  webhook_token_file: %[4]s
store:
  path: %[5]s
jobs:
  adapter: none
pools:
  - name: cpu
    profile: {cpu_cores: 8}
    cost: {hourly: 1.5, currency: EUR}
    nodes:
      - name: n1
        exporter: 127.0.0.1:%[1]d
        bmc: {protocol: redfish, host: 127.0.0.1, port: %[1]d, username: rota, password_env: ROTA_TEST_BMC_PASSWORD, insecure_skip_verify: true}
`, dead, port, apiToken, webhookToken, filepath.Join(dir, "rota.db")))

	cmd := exec.Command(bin, "--config.file", cfg, "--log.level", "debug")
	cmd.Env = append(os.Environ(), "ROTA_TEST_BMC_PASSWORD=secret-bmc-password")
	var logs testutil.SyncBuffer // read while rota runs
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("rota's log:\n%s", logs.String())
		}
	})

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	testutil.WaitHTTP(t, base+"/-/healthy", 30*time.Second)

	call := func(method, path, token, body string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := call(http.MethodGet, "/api/v1/status", "", ""); code != http.StatusUnauthorized {
		t.Errorf("status without token: %d", code)
	}
	fixture, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "scaler", "api", "testdata", "alertmanager", "alertmanager-v4-firing.json"))
	if err != nil {
		t.Fatal(err)
	}
	if code, body := call(http.MethodPost, "/api/v1/alerts", "webhook-token", string(fixture)); code != http.StatusOK {
		t.Errorf("webhook: %d %s", code, body)
	}
	// The first pass finishes even with everything down; then status has facts.
	testutil.WaitHTTP(t, base+"/-/ready", 60*time.Second)
	code, body := call(http.MethodGet, "/api/v1/status", "api-token", "")
	if code != http.StatusOK || !strings.Contains(body, `"name": "n1"`) {
		t.Errorf("status: %d %s", code, body)
	}
	if strings.Contains(body, `"telemetry": true`) {
		t.Errorf("telemetry reported present with Prometheus down: %s", body)
	}
	if code, body := call(http.MethodPost, "/api/v1/nodes/n1/pin", "api-token", `{"note":"test"}`); code != http.StatusOK {
		t.Errorf("pin: %d %s", code, body)
	}
	if _, metrics := call(http.MethodGet, "/metrics", "", ""); !strings.Contains(metrics, `rota_webhook_requests_total{result="accepted"} 1`) {
		t.Errorf("metrics lack the accepted webhook:\n%s", metrics)
	}

	// SIGHUP re-reads the token files.
	if err := os.WriteFile(apiToken, []byte("rotated-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the rotated token accepted", func() error {
		if code, _ := call(http.MethodGet, "/api/v1/status", "rotated-token", ""); code != http.StatusOK {
			return fmt.Errorf("status %d", code)
		}
		return nil
	})
	if code, _ := call(http.MethodGet, "/api/v1/status", "api-token", ""); code != http.StatusForbidden {
		t.Errorf("the old token still answers %d", code)
	}

	// SIGHUP does not reload the config file, and says so: an edit is named as not in force,
	// an invalid file as one rota would not start on (it said "token files reloaded" alone).
	if strings.Contains(logs.String(), "the config file") {
		t.Errorf("SIGHUP with the config file as it was says it changed:\n%s", logs.String())
	}
	orig, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hupSays := func(content, says string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, "SIGHUP says "+says, func() error {
			if !strings.Contains(logs.String(), says) {
				return errors.New("not yet")
			}
			return nil
		})
	}
	hupSays(string(orig)+"      - name: n2\n        exporter: 127.0.0.1:1\n        bmc: {protocol: redfish, host: 127.0.0.1, port: 1, username: rota, password_env: ROTA_TEST_BMC_PASSWORD}\n",
		"the config file changed since start")
	hupSays(string(orig)+"policy:\n  idle:\n    cpu_threshold: 2\n", "policy.idle.cpu_threshold: 2 is not a ratio")
	if !strings.Contains(logs.String(), "the config file is not valid") {
		t.Errorf("an invalid config file is not named so:\n%s", logs.String())
	}
	if _, body := call(http.MethodGet, "/api/v1/status", "rotated-token", ""); strings.Contains(body, `"name": "n2"`) {
		t.Errorf("a server of the edited config file is in force: %s", body)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("rota exited with %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("rota did not stop within 60s of SIGTERM")
	}
	for _, secret := range []string{"api-token", "rotated-token", "webhook-token", "secret-bmc-password"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log reveals %s", secret)
		}
	}
}

// writeFile writes content to name in dir (readable by its owner only) and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// onePool is a config's pools: one server, whose BMC nothing answers for.
const onePool = `pools:
  - name: cpu
    profile: {cpu_cores: 8}
    nodes:
      - name: n1
        bmc: {protocol: ipmi, host: 127.0.0.1, port: 1, username: u, password_env: ROTA_TEST_PW}
`

// runRota runs the binary with args to its end (killed after 30s: a rota that starts when it
// should not) and returns its output and exit code.
func runRota(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, rotaBinary, args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return string(out), 0
}

// TestDamagedStoreStopsRota: a store file that is empty or cut short (a full disk, a copy that
// stopped) stops rota with exit 1, what is wrong and how to restore a backup; it is neither
// re-created (which forgot pins and the pause) nor mapped (which died with SIGBUS, exit 2, so a
// restart policy looped). The file is left as it was.
func TestDamagedStoreStopsRota(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	st, err := store.Open(good, store.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := st.UpdateNode(fmt.Sprintf("n%03d", i), func(n *store.Node) error { n.State, n.PinNote = fleet.StateOn, strings.Repeat("p", 200); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "the file is empty (0 bytes)"},
		{"cut mid-page", whole[:10000], "cut short"},
		{"cut at a page", whole[:16384], "cut short"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db := writeFile(t, dir, "rota.db", string(tc.data))
			cfg := writeFile(t, dir, "rota.yml", fmt.Sprintf("server: {listen_address: \"127.0.0.1:0\", webhook_auth_disabled: true}\nstore: {path: %s}\n", db)+onePool)
			// Before the check, an empty file made a new store and rota ran: the timeout ends it.
			out, code := runRota(t, "--config.file", cfg)
			if code != 1 {
				t.Fatalf("rota: exit %d, want 1\n%s", code, out)
			}
			for _, w := range []string{db, tc.want, "rotactl backup", "move the file away"} {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if after, _ := os.ReadFile(db); !bytes.Equal(after, tc.data) {
				t.Error("rota changed the damaged file")
			}
		})
	}
}

// A listener reachable from elsewhere is warned about when its webhook takes anyone's calls,
// and when it speaks plain HTTP (the tokens would cross the network in clear).
func TestWarnsOfAnExposedListener(t *testing.T) {
	cases := []struct {
		name     string
		disabled bool
		tls      bool
		ip       string
		warn     []string
	}{
		{"auth off, plain, every address", true, false, "0.0.0.0", []string{"WEBHOOK AUTH IS DISABLED", "plain HTTP"}},
		{"auth off, TLS, LAN address", true, true, "10.1.2.3", []string{"WEBHOOK AUTH IS DISABLED"}},
		{"auth on, plain, every address", false, false, "0.0.0.0", []string{"plain HTTP"}},
		{"auth on, TLS, every address", false, true, "0.0.0.0", nil},
		{"auth off, plain, loopback", true, false, "127.0.0.1", nil},
		{"auth off, plain, IPv6 loopback", true, false, "::1", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			logger, hook := logtest.NewNullLogger()
			addr := &net.TCPAddr{IP: net.ParseIP(c.ip), Port: 10091}
			warnExposed(logrus.NewEntry(logger), config.Server{WebhookAuthDisabled: c.disabled}, addr, c.tls)
			var got []string
			for _, e := range hook.AllEntries() {
				got = append(got, e.Message)
			}
			if len(got) != len(c.warn) {
				t.Fatalf("warnings %q, want %q", got, c.warn)
			}
			for i, w := range c.warn {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %q, want it to say %q", got[i], w)
				}
			}
		})
	}
}
