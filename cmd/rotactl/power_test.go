package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/bmc/redfishemu"
	"github.com/rotahq/rota/internal/clock"
)

// TestPowerCommand runs `rotactl power` against emulated Redfish BMCs named in a config file.
func TestPowerCommand(t *testing.T) {
	const password = "rotactl-Secret-9"
	servers := []redfishemu.ServerConfig{
		{Name: "n1", Power: "Off"},
		{Name: "n2", Power: "On"},
		{Name: "n3", Power: "Off", Faults: redfishemu.Faults{RejectCredentials: true}},
	}
	for i := range servers {
		servers[i].Listen, servers[i].Username, servers[i].Password = "127.0.0.1:0", "admin", password
		servers[i].TransitionDelay = redfishemu.Duration(100 * time.Millisecond)
	}
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	emu, err := redfishemu.Start(redfishemu.Config{Servers: servers}, clock.Real{}, l.WithField("component", "emu"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emu.Close)
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, emu.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ROTACTL_TEST_BMC_PASSWORD", password)
	var nodes strings.Builder
	for _, s := range servers {
		host, port, _ := strings.Cut(emu.Server(s.Name).Addr(), ":")
		fmt.Fprintf(&nodes, "      - name: %s\n        bmc: {protocol: redfish, host: %s, port: %s, username: admin, password_env: ROTACTL_TEST_BMC_PASSWORD, ca_file: %s}\n", s.Name, host, port, ca)
	}
	cfg := filepath.Join(dir, "rota.yml")
	if err := os.WriteFile(cfg, []byte(`server: {webhook_auth_disabled: true}
bmc: {concurrency: 2, min_command_interval: 100ms, operation_timeout: 20s, graceful_timeout: 5s}
pools:
  - name: cpu
    profile: {cpu_cores: 8}
    cost: {hourly: 1.5}
    nodes:
`+nodes.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		args     []string
		tty      bool
		wantCode int
		check    func(t *testing.T, stdout, stderr string)
	}{
		{"on: json, one failure per reason", []string{"power", "on", "-o", "json", "n1", "n2", "n3", "nope"}, false, 1, func(t *testing.T, stdout, stderr string) {
			var got []powerResult
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatalf("%v: %s", err, stdout)
			}
			want := []struct {
				node   string
				ok     bool
				state  bmc.State
				reason string
			}{{"n1", true, bmc.StateOn, ""}, {"n2", true, bmc.StateOn, ""}, {"n3", false, bmc.StateUnknown, "auth"}, {"nope", false, bmc.StateUnknown, "unknown_node"}}
			for i, w := range want {
				g := got[i]
				if g.Node != w.node || g.OK != w.ok || g.State != w.state || g.Reason != w.reason || (!g.OK && g.Error == "") {
					t.Errorf("result %d = %+v, want %+v", i, g, w)
				}
			}
			if emu.Server("n1").Power() != "On" || len(emu.Server("n2").Stats().Resets) != 0 {
				t.Errorf("n1 %s, n2 resets %q", emu.Server("n1").Power(), emu.Server("n2").Stats().Resets)
			}
			if stderr != "" {
				t.Errorf("no progress expected without a terminal, got %q", stderr)
			}
		}},
		{"status: table with progress on a terminal", []string{"power", "status", "--config.file", cfg, "n1", "n2"}, true, 0, func(t *testing.T, stdout, stderr string) {
			lines := strings.Split(strings.TrimSpace(stdout), "\n")
			if len(lines) != 3 || !strings.HasPrefix(lines[0], "NODE") || !strings.Contains(lines[1], "on") {
				t.Errorf("table:\n%s", stdout)
			}
			if !strings.Contains(stderr, "2/2 done, 0 failed") {
				t.Errorf("progress: %q", stderr)
			}
		}},
		{"off --hard", []string{"power", "off", "--hard", "n1"}, false, 0, func(t *testing.T, stdout, stderr string) {
			if got := emu.Server("n1").Stats().Resets; fmt.Sprint(got) != "[On ForceOff]" {
				t.Errorf("resets %q", got)
			}
		}},
		// A bound on a graceful off within bmc.graceful_timeout (5s) would give up before the
		// hard off: refused, nothing sent.
		{"off bounded within the grace", []string{"power", "off", "--timeout=5s", "n2"}, false, 2, func(t *testing.T, stdout, stderr string) {
			if !strings.Contains(stderr, "--timeout: 5s is not longer than bmc.graceful_timeout (5s)") {
				t.Errorf("stderr %q", stderr)
			}
			if got := emu.Server("n2").Stats().Resets; len(got) != 0 {
				t.Errorf("resets %q", got)
			}
		}},
		{"cycle", []string{"power", "cycle", "n2"}, false, 0, func(t *testing.T, stdout, stderr string) {
			if got := emu.Server("n2").Stats().Resets; fmt.Sprint(got) != "[ForceOff On]" {
				t.Errorf("resets %q", got)
			}
		}},
		{"missing config", []string{"power", "status", "--config.file", filepath.Join(dir, "none.yml"), "n1"}, false, 2, func(t *testing.T, stdout, stderr string) {
			if !strings.Contains(stderr, "none.yml") {
				t.Errorf("stderr %q", stderr)
			}
		}},
		// A typo said "unknown node" alone: not where names come from, nor the one meant.
		{"a typo names the config and the node meant", []string{"power", "status", "n01", "storage1"}, false, 1, func(t *testing.T, stdout, stderr string) {
			for _, w := range []string{"n01 ", "no node of " + cfg + "'s pools; did you mean n1?", "storage1 "} {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, l := range strings.Split(stdout, "\n") {
				if strings.HasPrefix(l, "storage1 ") && strings.Contains(l, "did you mean") {
					t.Errorf("storage1, far from every name, got a suggestion: %s", l)
				}
			}
		}},
		{"no node given", []string{"power", "on"}, false, 2, func(*testing.T, string, string) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if !strings.Contains(strings.Join(args, " "), "--config.file") {
				args = append(args, "--config.file", cfg)
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), args, env{stdout: &stdout, stderr: &stderr, stderrTTY: tt.tty})
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.wantCode, stdout.String(), stderr.String())
			}
			tt.check(t, stdout.String(), stderr.String())
			if strings.Contains(stdout.String()+stderr.String(), password) {
				t.Error("the password appears in rotactl's output")
			}
		})
	}
}
