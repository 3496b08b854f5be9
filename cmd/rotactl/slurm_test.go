package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/bmc/redfishemu"
	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/etcdtest"
	"github.com/rotahq/rota/internal/slurmlab"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/api/apifake"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor"
	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

// slurmBMCs starts emulated Redfish BMCs for n1 and n2 (both on) and writes a rota config
// naming them, with a store and an API token in dir and a listen address nothing answers on
// (unless the test starts a rota there); it returns the emulator and the config's path.
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
	ca, pw, tok := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "bmc.password"), filepath.Join(dir, "api.token")
	for p, b := range map[string][]byte{ca: emu.CertPEM(), pw: []byte(password), tok: []byte(slurmAPIToken)} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var nodes strings.Builder
	for _, s := range servers {
		host, port, _ := strings.Cut(emu.Server(s.Name).Addr(), ":")
		fmt.Fprintf(&nodes, "      - name: %s\n        bmc: {protocol: redfish, host: %s, port: %s, username: admin, password_file: %s, ca_file: %s}\n", s.Name, host, port, pw, ca)
	}
	cfg := filepath.Join(dir, "rota.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`server: {webhook_auth_disabled: true, listen_address: 127.0.0.1:%d, api_token_file: %s}
store: {path: %s}
bmc: {concurrency: 2, min_command_interval: 100ms, operation_timeout: 20s, graceful_timeout: 5s}
pools:
  - name: cpu
    profile: {cpu_cores: 2}
    cost: {hourly: 1.5}
    nodes:
`, testutil.FreePort(t), tok, filepath.Join(dir, "rota.db"))+nodes.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return emu, cfg
}

const slurmAPIToken = "slurm-api-token-3b7e"

// rotactlSlurm runs `rotactl slurm ARGS...` in-process with cfg and returns the exit code and
// stderr; stdout must stay empty (Slurm keeps none).
func rotactlSlurm(t *testing.T, cfg string, args ...string) (int, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"slurm", "--config.file=" + cfg}, args...), env{stdout: &stdout, stderr: &stderr})
	if stdout.Len() != 0 {
		t.Errorf("stdout %q, want nothing (Slurm keeps no stdout)", stdout.String())
	}
	return code, stderr.String()
}

func wantPower(t *testing.T, emu *redfishemu.Emulator, want map[string]string) {
	t.Helper()
	for n, w := range want {
		if got := emu.Server(n).Power(); got != w {
			t.Errorf("%s is %s, want %s", n, got, w)
		}
	}
}

// TestSlurmVerbs runs `rotactl slurm suspend` in-process (it acts alone): a hostlist expands to
// the inventory's nodes, a bad hostlist is a usage error (exit 2), for resume too.
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
		// A bound within bmc.graceful_timeout (5s) leaves no time for the hard off: refused,
		// nothing sent (the servers stay on).
		{"suspend bounded within the grace", []string{"--timeout=4s", "suspend", "n[1-2]"}, 2, "On", []string{"--timeout: 4s is not longer than bmc.graceful_timeout"}},
		{"suspend a hostlist", []string{"suspend", "n[1-2]"}, 0, "Off", []string{"n1", "n2", "ok"}},
		{"suspend servers already off", []string{"suspend", "n1,n2"}, 0, "Off", []string{"n1", "n2", "ok"}},
		{"suspend a node not in the inventory", []string{"suspend", "n1,ghost"}, 1, "Off", []string{"ghost", "failed"}},
		{"bad hostlist", []string{"resume", "n[1-"}, 2, "Off", []string{"bad hostlist"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stderr := rotactlSlurm(t, cfg, tc.args...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.wantCode, stderr)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			wantPower(t, emu, map[string]string{"n1": tc.wantPower, "n2": tc.wantPower})
		})
	}
}

// TestSlurmResumeThroughRota: with rota answering, resume only asks it (POST /api/v1/wake with
// the config's API token at the config's listen address) and reports its answer: the BMCs are
// not touched by rotactl. A server rota refuses fails the run; so does a rota that refuses the
// token, and then rotactl does not act alone either.
func TestSlurmResumeThroughRota(t *testing.T) {
	dir := t.TempDir()
	emu, cfg := slurmBMCs(t, dir)
	for _, n := range []string{"n1", "n2"} {
		if err := emu.Server(n).SetPower("Off"); err != nil {
			t.Fatal(err)
		}
	}
	c, err := config.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	backend := apifake.New(api.Status{Nodes: []api.NodeStatus{{Name: "n1"}, {Name: "n2"}}})
	logger, _ := logtest.NewNullLogger()
	token := api.NewToken(slurmAPIToken)
	srv, err := api.NewServer(api.Options{Backend: backend, Registry: prometheus.NewRegistry(), Clock: clock.Real{}, APIToken: token,
		WebhookAuthDisabled: true, Log: logger.WithField("component", "api")})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", c.Server.ListenAddress)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, l) }()
	t.Cleanup(func() { cancel(); <-served })

	code, stderr := rotactlSlurm(t, cfg, "resume", "n[1-2]")
	if code != 0 || !strings.Contains(stderr, "n1") || !strings.Contains(stderr, api.WakeStarted) {
		t.Fatalf("exit %d, want 0 with both started; stderr:\n%s", code, stderr)
	}
	if w := backend.Wakes(); len(w) != 1 || !slices.Equal(w[0], []string{"n1", "n2"}) {
		t.Fatalf("rota got wakes %v, want one for n1 and n2", w)
	}
	wantPower(t, emu, map[string]string{"n1": "Off", "n2": "Off"})

	code, stderr = rotactlSlurm(t, cfg, "resume", "n1,ghost")
	if code != 1 || !strings.Contains(stderr, api.WakeRefused) {
		t.Fatalf("exit %d, want 1 with ghost refused; stderr:\n%s", code, stderr)
	}

	if err := srv.SetTokens(api.NewToken("another token"), api.Token{}); err != nil {
		t.Fatal(err)
	}
	code, stderr = rotactlSlurm(t, cfg, "resume", "n1")
	if code != 1 || !strings.Contains(stderr, "403") {
		t.Fatalf("exit %d, want 1 with rota's 403; stderr:\n%s", code, stderr)
	}
	wantPower(t, emu, map[string]string{"n1": "Off", "n2": "Off"})
	if len(backend.Wakes()) != 2 {
		t.Errorf("rota got %d wakes, want 2 (the refused token reaches nothing)", len(backend.Wakes()))
	}
}

// TestSlurmResumeAlone: with no rota answering, resume powers on alone only with rota's store
// readable and not held, and then never a server the store says is pinned or in maintenance,
// nor anything while paused; --rota.unreachable=fail never acts alone.
func TestSlurmResumeAlone(t *testing.T) {
	type prep func(t *testing.T, db string)
	withStore := func(edit func(st *store.Store) error) prep {
		return func(t *testing.T, db string) {
			st, err := store.Open(db, store.Options{Create: true})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if err := edit(st); err != nil {
				t.Fatal(err)
			}
		}
	}
	plain := withStore(func(*store.Store) error { return nil })
	for _, tc := range []struct {
		name     string
		prep     prep
		args     []string
		wantCode int
		want     map[string]string
		wantErr  string
	}{
		{"no store to check", func(*testing.T, string) {}, nil, 1, map[string]string{"n1": "Off", "n2": "Off"}, "cannot check rota's store"},
		{"a rota holds the store but does not answer", func(t *testing.T, db string) {
			st, err := store.Open(db, store.Options{Create: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
		}, nil, 1, map[string]string{"n1": "Off", "n2": "Off"}, "locked"},
		{"paused", withStore(func(st *store.Store) error {
			return st.UpdateGlobal(func(g *store.Global) error { g.Paused = true; return nil })
		}), nil, 1, map[string]string{"n1": "Off", "n2": "Off"}, "paused"},
		{"n2 pinned", withStore(func(st *store.Store) error {
			return st.UpdateNode("n2", func(n *store.Node) error { n.State, n.Pinned = fleet.StateOff, true; return nil })
		}), nil, 1, map[string]string{"n1": "On", "n2": "Off"}, "pinned"},
		{"n2 in maintenance", withStore(func(st *store.Store) error {
			return st.UpdateNode("n2", func(n *store.Node) error { n.State, n.Maintenance = fleet.StateOff, true; return nil })
		}), nil, 1, map[string]string{"n1": "On", "n2": "Off"}, "maintenance"},
		{"told to fail", plain, []string{"--rota.unreachable=fail"}, 1, map[string]string{"n1": "Off", "n2": "Off"}, "not powering on alone"},
		{"store readable and nothing held", plain, nil, 0, map[string]string{"n1": "On", "n2": "On"}, "powering on alone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			emu, cfg := slurmBMCs(t, dir)
			for _, n := range []string{"n1", "n2"} {
				if err := emu.Server(n).SetPower("Off"); err != nil {
					t.Fatal(err)
				}
			}
			tc.prep(t, filepath.Join(dir, "rota.db"))
			code, stderr := rotactlSlurm(t, cfg, append([]string{"resume", "n[1-2]"}, tc.args...)...)
			if code != tc.wantCode || !strings.Contains(stderr, tc.wantErr) {
				t.Fatalf("exit %d, want %d with %q; stderr:\n%s", code, tc.wantCode, tc.wantErr, stderr)
			}
			wantPower(t, emu, tc.want)
		})
	}
}

// TestSlurmResumeAloneNamesTheNodeMeant: acting alone, resume powers on the nodes it knows and
// fails a name the config does not hold, naming the config and the node probably meant.
func TestSlurmResumeAloneNamesTheNodeMeant(t *testing.T) {
	dir := t.TempDir()
	emu, cfg := slurmBMCs(t, dir)
	for _, n := range []string{"n1", "n2"} {
		if err := emu.Server(n).SetPower("Off"); err != nil {
			t.Fatal(err)
		}
	}
	st, err := store.Open(filepath.Join(dir, "rota.db"), store.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	code, stderr := rotactlSlurm(t, cfg, "resume", "n1,N2")
	if want := "(no node of " + cfg + "'s pools; did you mean n2?)"; code != 1 || !strings.Contains(stderr, want) {
		t.Fatalf("exit %d, want 1 with %q; stderr:\n%s", code, want, stderr)
	}
	wantPower(t, emu, map[string]string{"n1": "On", "n2": "Off"})
}

// TestSlurmResumeAloneIsRotasOwn: resume acting alone records each power-on in rota's store (a
// bbolt file; etcd, written only while no rota is in the fleet's election) before its command,
// as rota begins one, so rota, started again over that store, takes it up as its own power-on
// (booted, on, audited succeeded), never as a change outside rota; a node it did not power on
// keeps its record.
func TestSlurmResumeAloneIsRotasOwn(t *testing.T) {
	for _, backend := range []string{"bbolt", "etcd"} {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			emu, cfg := slurmBMCs(t, dir)
			db := filepath.Join(dir, "rota.db")
			st, err := store.Open(db, store.Options{Create: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []string{"n1", "n2"} {
				if err := emu.Server(n).SetPower("Off"); err != nil {
					t.Fatal(err)
				}
				if err := st.UpdateNode(n, func(r *store.Node) error { r.State = fleet.StateOff; return nil }); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			if backend == "etcd" {
				c := etcdtest.Start(t, 1, etcdtest.Options{})
				b, err := os.ReadFile(cfg)
				if err != nil {
					t.Fatal(err)
				}
				y := strings.Replace(string(b), "store: {", fmt.Sprintf("store: {backend: etcd, etcd: {endpoints: [%q], fleet: lab, dial_timeout: 10s, request_timeout: 10s}, ", c.Endpoints()[0]), 1)
				if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
					t.Fatal(err)
				}
				var out bytes.Buffer
				if code := run(context.Background(), []string{"store", "migrate", "--config.file", cfg, "--to", "etcd"}, env{stdout: &out, stderr: &out}); code != 0 {
					t.Fatalf("migrate: %d %s", code, out.String())
				}
			}
			if code, stderr := rotactlSlurm(t, cfg, "resume", "n1"); code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", code, stderr)
			}
			wantPower(t, emu, map[string]string{"n1": "On", "n2": "Off"})
			rotaCfg, err := config.Load(cfg)
			if err != nil {
				t.Fatal(err)
			}
			// rota starts again over the store and runs its repair, the BMCs saying what they say now.
			st = reopen(t, rotaCfg)
			world := executortest.NewWorld(true)
			world.Add("n1", executortest.Server{Power: bmc.StateOn, Responding: true})
			world.Add("n2", executortest.Server{Power: bmc.StateOff})
			reg := prometheus.NewRegistry()
			logger, _ := logtest.NewNullLogger()
			clk := clock.NewManual(time.Now())
			ex, err := executor.New(executor.Options{Store: st, Power: world, Jobs: world, Config: rotaCfg, Clock: clk,
				Log: logger.WithField("component", "executor"), Registerer: reg})
			if err != nil {
				t.Fatal(err)
			}
			views, err := world.Nodes(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			obs := executor.Observed{At: clk.Now(), Power: map[string]bmc.State{"n1": bmc.StateOn, "n2": bmc.StateOff}, Jobs: views, JobsKnown: true}
			if err := ex.Repair(context.Background(), obs); err != nil {
				t.Fatal(err)
			}
			ex.Wait()
			for n, want := range map[string]fleet.State{"n1": fleet.StateOn, "n2": fleet.StateOff} {
				if rec, err := st.Node(n); err != nil || rec.State != want || rec.Intent != nil {
					t.Errorf("%s: %+v, %v; want %s with nothing under way", n, rec, err, want)
				}
			}
			if got := testutil.MetricValue(t, reg, "rota_scaler_power_changes_outside_total", map[string]string{"pool": "cpu", "to": "on"}); got != 0 {
				t.Errorf("rotactl's power-on counted %v times as a change outside rota", got)
			}
			recs, err := st.Audit("n1", 0)
			if err != nil {
				t.Fatal(err)
			}
			var results []string
			for _, r := range recs {
				if r.Action == fleet.PowerOn && r.Reason == fleet.ReasonRequested && strings.Contains(r.Detail, "rotactl powered it on alone") {
					results = append(results, r.Result)
				}
			}
			if slices.Sort(results); !slices.Equal(results, []string{"started", "succeeded"}) {
				t.Errorf("n1's history %+v, want rotactl's power-on started and then rota's repair saying it succeeded", recs)
			}
		})
	}
}

// reopen opens the store of cfg for writing as a rota starting again would (etcd: while no
// rota is in the election), closed when the test ends.
func reopen(t *testing.T, cfg *config.Config) *store.Store {
	t.Helper()
	st, closeStore, err := openStopped(context.Background(), env{clock: clock.Real{}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeStore)
	return st
}

// TestSlurmPowerSaving: a real slurmctld runs rotactl as its SuspendProgram and ResumeProgram,
// beside the real rota daemon (adapter slurm). Idle nodes are suspended (rotactl alone: their
// emulated BMCs go Off, then the test stops their slurmd, as a power-off would); a job for n1
// makes Slurm resume it: rotactl asks rota, rota's pass powers it on (reason requested), the
// test starts its slurmd, as a boot would, and the job runs; n2 stays off.
func TestSlurmPowerSaving(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		testutil.Missing(t, "go", "https://go.dev/doc/install")
	}
	dir := t.TempDir()
	emu, cfg := slurmBMCs(t, dir)
	bin, rotaBin := filepath.Join(dir, "rotactl"), filepath.Join(dir, "rota")
	for out, pkg := range map[string]string{bin: ".", rotaBin: "../rota"} {
		if b, err := exec.Command(goBin, "build", "-o", out, pkg).CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", pkg, err, b)
		}
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
	// rota itself: passes only at start and when asked (the interval is an hour, the
	// pending-work watch off: it would now and then wake n1 itself, reason backlog, before
	// Slurm asks), no telemetry (so it never scales down), Slurm as its job manager.
	rotaLog := filepath.Join(dir, "rota.log")
	appendFile(t, cfg, fmt.Sprintf(`prometheus: {url: %q}
jobs: {adapter: slurm, watch_interval: 0s, slurm: {conf: %s, bin_dir: %s}}
policy: {evaluation_interval: 1h, cooldown: {scale_up: 0s}, node: {min_off: 0s}}
`, testutil.Prometheus(t, func(string) bool { return false }), c.Conf, c.BinDir))
	logFile, err := os.Create(rotaLog)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	daemon := exec.Command(rotaBin, "--config.file", cfg, "--log.level", "debug")
	daemon.Stdout, daemon.Stderr = logFile, logFile
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = daemon.Process.Kill(); _ = daemon.Wait() })
	rotaCfg, err := config.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + rotaCfg.Server.ListenAddress
	testutil.WaitHTTP(t, base+"/-/ready", 60*time.Second)
	t.Cleanup(func() {
		if t.Failed() {
			for _, f := range []string{"rotactl.log", "rota.log"} {
				b, _ := os.ReadFile(filepath.Join(dir, f))
				t.Logf("%s:\n%s", f, b)
			}
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
	c.ResumeNode("n1")
	testutil.Eventually(t, 90*time.Second, "the job runs on n1", func() error {
		if s := c.JobState(id); s != "RUNNING" {
			return fmt.Errorf("job is %q", s)
		}
		return nil
	})
	if p := emu.Server("n2").Power(); p != "Off" {
		t.Errorf("n2's BMC says %s, want Off", p)
	}
	// rota did it, not rotactl alone.
	client, err := api.NewClient(base, api.NewToken(slurmAPIToken), nil)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := client.Explain(context.Background(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(ex.History, func(r api.AuditRecord) bool {
		return r.Action == fleet.PowerOn && r.Reason == fleet.ReasonRequested
	}) {
		t.Errorf("n1's history has no power-on requested by Slurm: %+v", ex.History)
	}
	// Slurm's suspends were its power saving's, through rotactl: no change outside rota.
	for _, n := range []string{"n1", "n2"} {
		x, err := client.Explain(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(x.History, func(r api.AuditRecord) bool { return r.Reason == fleet.ReasonOutside }); i >= 0 {
			t.Errorf("%s: Slurm's suspend taken for a change outside rota: %+v", n, x.History[i])
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "rotactl.log")); strings.Contains(string(b), "powering on alone") {
		t.Errorf("rotactl acted alone beside a running rota:\n%s", b)
	}
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}
