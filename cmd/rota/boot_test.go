package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/bmc/redfishemu"
	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

// fakePrometheus answers every instant query with an empty vector, except the readiness query
// for n1 once its exporter is up: then a sample taken now.
func fakePrometheus(t testing.TB, exporterUp *atomic.Bool) string {
	t.Helper()
	return testutil.Prometheus(t, func(node string) bool { return node == "n1" && exporterUp.Load() })
}

// emuRota is one rota binary run over one emulated Redfish BMC (server n1) and a fake
// Prometheus.
type emuRota struct {
	t      *testing.T
	emu    *redfishemu.Emulator
	cmd    *exec.Cmd
	logs   *testutil.SyncBuffer // read while rota runs
	exited chan error
	db     string
	base   string // rota's HTTP address
	client *api.Client
}

// startEmuRota starts the emulator with n1 as bmc says and rota over it, n1 alone in pool cpu
// with floor min, and waits until rota serves.
func startEmuRota(t *testing.T, bmc redfishemu.ServerConfig, min int, exporterUp *atomic.Bool) *emuRota {
	t.Helper()
	log := logrus.New()
	log.SetOutput(&bytes.Buffer{})
	bmc.Name, bmc.Listen, bmc.Username, bmc.Password = "n1", "127.0.0.1:0", "rota", "bmc-pw"
	emu, err := redfishemu.Start(redfishemu.Config{Servers: []redfishemu.ServerConfig{bmc}}, clock.Real{}, logrus.NewEntry(log))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emu.Close)
	host, port, _ := strings.Cut(emu.Server("n1").Addr(), ":")
	dir := t.TempDir()
	apiToken := filepath.Join(dir, "api.token")
	if err := os.WriteFile(apiToken, []byte("api-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	listen := testutil.FreePort(t)
	cfg := filepath.Join(dir, "rota.yml")
	r := &emuRota{t: t, emu: emu, logs: &testutil.SyncBuffer{}, exited: make(chan error, 1), db: filepath.Join(dir, "rota.db")}
	err = os.WriteFile(cfg, []byte(fmt.Sprintf(`
prometheus: {url: %q, timeout: 2s}
server:
  listen_address: 127.0.0.1:%d
  api_token_file: %s
  webhook_auth_disabled: true
store: {path: %s}
jobs: {adapter: none}
policy: {evaluation_interval: 1s, node: {min_off: 1s}}
bmc: {min_command_interval: 0s}
pools:
  - name: cpu
    profile: {cpu_cores: 8}
    cost: {hourly: 1.5, currency: EUR}
    min: %d
    nodes:
      - name: n1
        bmc: {protocol: redfish, host: %s, port: %s, username: rota, password_env: ROTA_TEST_BMC_PASSWORD, insecure_skip_verify: true}
`, fakePrometheus(t, exporterUp), listen, apiToken, r.db, min, host, port)), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(rotaBinary, "--config.file", cfg, "--log.level", "debug")
	r.cmd.Env = append(os.Environ(), "ROTA_TEST_BMC_PASSWORD=bmc-pw")
	r.cmd.Stdout, r.cmd.Stderr = r.logs, r.logs
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.exited <- r.cmd.Wait() }()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill()
			<-r.exited
		}
		if t.Failed() {
			t.Logf("rota's log:\n%s", r.logs.String())
		}
	})
	r.base = fmt.Sprintf("http://127.0.0.1:%d", listen)
	testutil.WaitHTTP(t, r.base+"/-/healthy", 30*time.Second)
	if r.client, err = api.NewClient(r.base, api.NewToken("api-token"), nil); err != nil {
		t.Fatal(err)
	}
	return r
}

// status is n1 as rota's API says (the zero value when it cannot).
func (r *emuRota) status() api.NodeStatus {
	st, err := r.client.Status(r.t.Context())
	if err != nil || len(st.Nodes) != 1 {
		return api.NodeStatus{}
	}
	return st.Nodes[0]
}

// waitFor waits until rota says n1 is in state want.
func (r *emuRota) waitFor(want fleet.State) {
	r.t.Helper()
	testutil.Eventually(r.t, 60*time.Second, "n1 "+string(want), func() error {
		if n := r.status(); n.State != want {
			return fmt.Errorf("n1 is %q (%s: %s)", n.State, n.Reason, n.Detail)
		}
		return nil
	})
}

// stop sends SIGTERM and waits for a clean exit.
func (r *emuRota) stop() {
	r.t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		r.t.Fatal(err)
	}
	select {
	case err := <-r.exited:
		if err != nil {
			r.t.Fatalf("rota exited with %v", err)
		}
	case <-time.After(60 * time.Second):
		r.t.Fatal("rota did not stop within 60s of SIGTERM")
	}
}

// TestDaemonWaitsForTheExporterAfterBoot: rota powers a server on for its pool's floor through
// a Redfish BMC, and counts it On only once Prometheus says the server's exporter serves.
func TestDaemonWaitsForTheExporterAfterBoot(t *testing.T) {
	var exporterUp atomic.Bool
	r := startEmuRota(t, redfishemu.ServerConfig{Power: "Off"}, 1, &exporterUp)
	r.waitFor(fleet.StateBooting)
	if p := r.emu.Server("n1").Power(); p != "On" {
		t.Fatalf("the BMC says %s after the power-on", p)
	}
	// Passes go by (one a second); the job manager (none) has nothing against it, but the
	// exporter has not answered: still booting.
	time.Sleep(3 * time.Second)
	if n := r.status(); n.State != fleet.StateBooting {
		t.Fatalf("n1 is %s (%s: %s) before its exporter answered, want booting", n.State, n.Reason, n.Detail)
	}
	exporterUp.Store(true)
	r.waitFor(fleet.StateOn)
}

// TestDaemonSIGTERMDuringAPowerOnIsNoFailure: SIGTERM while rota waits for the BMC to confirm a
// power-on (its state read in flight) stops rota cleanly with the node as its intent left it:
// PoweringOn, no failure counted, no "failed" audit record, not Unknown. The read cut short
// used to make the node Unknown with a failed record. (The read ends only at the BMC client's
// own call timeout, bmclib not heeding the cancel: this test takes about 40s.)
func TestDaemonSIGTERMDuringAPowerOnIsNoFailure(t *testing.T) {
	var exporterUp atomic.Bool
	// The power-on is accepted and the server stays PoweringOn; then every answer is slow, so
	// rota's next confirming read is in flight when SIGTERM comes.
	r := startEmuRota(t, redfishemu.ServerConfig{Power: "Off", Faults: redfishemu.Faults{StuckTransition: true}}, 1, &exporterUp)
	// (rota's status lags here: its next pass waits for n1's BMC, busy confirming.)
	testutil.Eventually(t, 30*time.Second, "the BMC powering on", func() error {
		if p := r.emu.Server("n1").Power(); p != "PoweringOn" {
			return fmt.Errorf("the BMC says %s", p)
		}
		return nil
	})
	if err := r.emu.Server("n1").SetFaults(redfishemu.Faults{StuckTransition: true, Latency: redfishemu.Duration(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	// SIGTERM goes once a BMC request is held by the latency, however long rota takes to send
	// one: the emulator counts a request and reads the faults for it under one lock, so a
	// request counted after this read of the count waits an hour. (One counted between
	// SetFaults and this read waits too; missing it only means waiting for the next, once
	// rota's BMC call times out, 20 s.)
	before := r.emu.Server("n1").Stats().Requests
	testutil.Eventually(t, 2*time.Minute, "a BMC request held by the latency", func() error {
		if n := r.emu.Server("n1").Stats().Requests; n <= before {
			return fmt.Errorf("no request since the latency was set (%d in all)", n)
		}
		return nil
	})
	r.stop()

	st, err := store.Open(r.db, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n, err := st.Node("n1")
	if err != nil {
		t.Fatal(err)
	}
	if n.State != fleet.StatePoweringOn || n.Intent == nil || n.Intent.Kind != fleet.PowerOn || n.Failures != 0 {
		t.Errorf("after SIGTERM: %+v; want powering_on with its intent, no failure", n)
	}
	recs, err := st.Audit("n1", 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if rec.Result == "failed" {
			t.Errorf("audit record %+v: a step cut short by shutdown is no failure", rec)
		}
	}
	if !strings.Contains(r.logs.String(), "cut short by shutdown") {
		t.Errorf("the log does not say the action was cut short by shutdown")
	}
}

// TestDaemonFailsABootSwitchedOffByHand: a server switched off at its BMC while it boots is
// Failed at the next pass, power left off, instead of waiting out boot_timeout (10m here).
func TestDaemonFailsABootSwitchedOffByHand(t *testing.T) {
	var exporterUp atomic.Bool
	r := startEmuRota(t, redfishemu.ServerConfig{Power: "Off"}, 1, &exporterUp)
	r.waitFor(fleet.StateBooting)
	if err := r.emu.Server("n1").SetPower("Off"); err != nil {
		t.Fatal(err)
	}
	r.waitFor(fleet.StateFailed)
	if p := r.emu.Server("n1").Power(); p != "Off" {
		t.Errorf("the BMC says %s: a server switched off by hand was powered on again at once", p)
	}
}

// TestDaemonSaysAPowerChangeOutsideRota: a server rota holds on, switched off at its BMC by
// something else (here the emulator's own hand), is taken as off, audited with the reason
// outside, counted in /metrics and logged as a warning.
func TestDaemonSaysAPowerChangeOutsideRota(t *testing.T) {
	var exporterUp atomic.Bool // no telemetry: rota itself powers nothing off
	r := startEmuRota(t, redfishemu.ServerConfig{Power: "On"}, 0, &exporterUp)
	r.waitFor(fleet.StateOn)
	if err := r.emu.Server("n1").SetPower("Off"); err != nil {
		t.Fatal(err)
	}
	r.waitFor(fleet.StateOff)
	x, err := r.client.Explain(t.Context(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(x.History, func(h api.AuditRecord) bool { return h.Reason == fleet.ReasonOutside }); i < 0 || x.History[i].Action != fleet.PowerOff {
		t.Errorf("explain's history has no power-off outside rota: %+v", x.History)
	}
	testutil.Eventually(t, 10*time.Second, "the change counted in /metrics", func() error {
		_, body, err := testutil.GetWithAuth(http.DefaultClient, r.base+"/metrics", "", "")
		if err != nil {
			return err
		}
		if want := `rota_scaler_power_changes_outside_total{pool="cpu",to="off"} 1`; !strings.Contains(body, want) {
			return fmt.Errorf("/metrics lacks %s", want)
		}
		return nil
	})
	r.stop()
	if !strings.Contains(r.logs.String(), "outside rota") {
		t.Error("the log does not say the server was powered off outside rota")
	}
}

// TestDaemonAnswersAWakeAsItStops: a wake pending when rota gets SIGTERM, its pass held by a
// BMC that does not answer, is answered 503 with Retry-After ("rota is stopping"), where
// rotactl slurm resume asks again: it was answered from the pass SIGTERM cut short, "waiting /
// power_unknown" (resume exited 0), and rota then dropped the request.
func TestDaemonAnswersAWakeAsItStops(t *testing.T) {
	var exporterUp atomic.Bool
	r := startEmuRota(t, redfishemu.ServerConfig{Power: "Off"}, 0, &exporterUp)
	testutil.WaitHTTP(t, r.base+"/-/ready", 60*time.Second)
	if err := r.emu.Server("n1").SetFaults(redfishemu.Faults{Latency: redfishemu.Duration(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	before := r.emu.Server("n1").Stats().Requests
	answer := make(chan error, 1)
	go func() {
		res, err := r.client.Wake(context.Background(), []string{"n1"}, "slurm resume")
		if err == nil {
			err = fmt.Errorf("answered %+v", res)
		}
		answer <- err
	}()
	testutil.Eventually(t, 2*time.Minute, "the wake taken and a BMC read held", func() error {
		if !strings.Contains(r.logs.String(), "wake requested") {
			return errors.New("no wake yet")
		}
		if n := r.emu.Server("n1").Stats().Requests; n <= before {
			return fmt.Errorf("no BMC request since the latency was set (%d in all)", n)
		}
		return nil
	})
	r.stop()
	select {
	case err := <-answer:
		var se *api.StatusError
		if !errors.As(err, &se) || se.Code != http.StatusServiceUnavailable || !se.NoLeader || !strings.Contains(se.Message, "rota is stopping") {
			t.Errorf("the wake got %v; want 503 with Retry-After saying rota is stopping", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the wake has no answer 30s after rota stopped")
	}
}
