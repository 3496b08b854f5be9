package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/bmc/redfishemu"
	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/slurmlab"
	"github.com/rotahq/rota/internal/testutil"
)

// slurmBMCs starts emulated Redfish BMCs for n1 and n2 (both on) and writes a rota config
// naming them; it returns the emulator and the config's path.
func slurmBMCs(t *testing.T, dir string) (*redfishemu.Emulator, string) {
	t.Helper()
	const password = "slurm-Secret-7"
	var servers []redfishemu.ServerConfig
	for _, n := range []string{"n1", "n2"} {
		servers = append(servers, redfishemu.ServerConfig{Name: n, Listen: "127.0.0.1:0", Username: "admin",
			Password: password, Power: "On", TransitionDelay: redfishemu.Duration(200 * time.Millisecond)})
	}
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	emu, err := redfishemu.Start(redfishemu.Config{Servers: servers}, clock.Real{}, l.WithField("component", "emu"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emu.Close)
	ca, pw := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "bmc.password")
	if err := os.WriteFile(ca, emu.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pw, []byte(password), 0o600); err != nil {
		t.Fatal(err)
	}
	var nodes strings.Builder
	for _, s := range servers {
		host, port, _ := strings.Cut(emu.Server(s.Name).Addr(), ":")
		fmt.Fprintf(&nodes, "      - name: %s\n        bmc: {protocol: redfish, host: %s, port: %s, username: admin, password_file: %s, ca_file: %s}\n", s.Name, host, port, pw, ca)
	}
	cfg := filepath.Join(dir, "rota.yml")
	if err := os.WriteFile(cfg, []byte(`server: {webhook_auth_disabled: true}
bmc: {concurrency: 2, min_command_interval: 100ms, operation_timeout: 20s, graceful_timeout: 5s}
pools:
  - name: cpu
    profile: {cpu_cores: 2}
    cost: {hourly: 1.5}
    nodes:
`+nodes.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return emu, cfg
}

// TestSlurmVerbs runs `rotactl slurm resume|suspend` in-process: a hostlist expands to the
// inventory's nodes, a node not in it fails the run (exit 1, named on stderr), a bad hostlist
// is a usage error (exit 2).
func TestSlurmVerbs(t *testing.T) {
	dir := t.TempDir()
	emu, cfg := slurmBMCs(t, dir)
	for _, tc := range []struct {
		name      string
		args      []string
		wantCode  int
		wantPower string
		wantErr   []string
	}{
		{"suspend a hostlist", []string{"suspend", "n[1-2]"}, 0, "Off", []string{"n1", "n2", "ok"}},
		{"suspend servers already off", []string{"suspend", "n1,n2"}, 0, "Off", []string{"n1", "n2", "ok"}},
		{"resume with a node not in the inventory", []string{"resume", "n[1-2],ghost"}, 1, "On", []string{"ghost", "failed"}},
		{"bad hostlist", []string{"resume", "n[1-"}, 2, "On", []string{"bad hostlist"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"slurm", "--config.file=" + cfg}, tc.args...)
			code := run(context.Background(), args, env{stdout: &stdout, stderr: &stderr})
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.wantCode, stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing (Slurm keeps no stdout)", stdout.String())
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			for _, n := range []string{"n1", "n2"} {
				if got := emu.Server(n).Power(); got != tc.wantPower {
					t.Errorf("%s is %s, want %s", n, got, tc.wantPower)
				}
			}
		})
	}
}

// TestSlurmPowerSaving: a real slurmctld runs rotactl as its SuspendProgram and ResumeProgram.
// Idle nodes are suspended (their emulated BMCs go Off, then the test stops their slurmd, as a
// power-off would); a job for n1 makes Slurm resume it (its BMC goes On, the test starts its
// slurmd, as a boot would) and the job runs; n2 stays off.
func TestSlurmPowerSaving(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		testutil.Missing(t, "go", "https://go.dev/doc/install")
	}
	dir := t.TempDir()
	emu, cfg := slurmBMCs(t, dir)
	bin := filepath.Join(dir, "rotactl")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building rotactl: %v\n%s", err, out)
	}
	// Slurm passes only the hostlist: a wrapper adds the config, and keeps rotactl's stderr.
	wrapper := func(verb string) string {
		p := filepath.Join(dir, verb+".sh")
		script := fmt.Sprintf("#!/bin/sh\nexec %s slurm %s --config.file=%s --log.level=info \"$@\" 2>>%s\n",
			bin, verb, cfg, filepath.Join(dir, "rotactl.log"))
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c := slurmlab.Start(t, slurmlab.Options{
		Nodes: []slurmlab.Node{
			{Name: "n1", Partition: "batch", CPUs: 2, MemoryMB: 1000},
			{Name: "n2", Partition: "batch", CPUs: 2, MemoryMB: 1000},
		},
		Extra: []string{"SuspendProgram=" + wrapper("suspend"), "ResumeProgram=" + wrapper("resume"),
			"SuspendTime=5", "SuspendTimeout=5", "ResumeTimeout=60"},
	})
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "rotactl.log"))
			t.Logf("rotactl log:\n%s", b)
		}
	})

	for _, n := range []string{"n1", "n2"} {
		testutil.Eventually(t, 60*time.Second, "slurm suspends "+n+" through rotactl", func() error {
			if p := emu.Server(n).Power(); p != "Off" {
				return fmt.Errorf("BMC says %s", p)
			}
			return nil
		})
		c.StopNode(n)
	}
	c.WaitState(60*time.Second, "idle+powered_down")

	id := c.Submit("--nodelist=n1", "--wrap=sleep 300")
	testutil.Eventually(t, 60*time.Second, "slurm resumes n1 through rotactl", func() error {
		if p := emu.Server("n1").Power(); p != "On" {
			return fmt.Errorf("BMC says %s", p)
		}
		return nil
	})
	c.StartNode("n1")
	testutil.Eventually(t, 90*time.Second, "the job runs on n1", func() error {
		if s := c.JobState(id); s != "RUNNING" {
			return fmt.Errorf("job is %q", s)
		}
		return nil
	})
	if p := emu.Server("n2").Power(); p != "Off" {
		t.Errorf("n2's BMC says %s, want Off", p)
	}
}
