package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/rotahq/rota/internal/etcdtest"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/executor"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
	"github.com/rotahq/rota/scaler/store/etcdstore"
)

// killCase is one kill -9 of the leader: the scenario, and the action kind and step after
// which it dies.
type killCase struct {
	scenario string
	kind     fleet.Kind
	step     executor.Step
}

// The scenarios of the kill test: what the fleet does, where it must end, the power commands
// its BMC must have received (one, or none: never two), and the results the history must
// hold for the killed action.
var killScenarios = map[string]struct {
	power   string
	end     fleet.State
	resets  []string
	results []string
}{
	// An idle server, on for an hour: powered off (drained on the way) in one action.
	"idle": {"On", fleet.StateOff, []string{"GracefulShutdown"}, []string{"started", "succeeded"}},
	// The drain finds a job that keeps running: the power-off is called off, the server given back.
	"job lands": {"On", fleet.StateOn, nil, []string{"started", "aborted"}},
	// The first drain is lost: the power-off holds, the drain times out and is resumed, and the
	// next power-off goes through.
	"drain lost": {"On", fleet.StateOff, []string{"GracefulShutdown"}, []string{"started", "succeeded"}},
	// An off server the job manager placed work on: woken, booted, resumed.
	"wake": {"Off", fleet.StateOn, []string{"On"}, []string{"started", "succeeded"}},
}

// Three rotas on a three-member etcd; the leader is killed with SIGKILL right after each step
// of each action (the test build's fault hook: the first rota to reach the step kills itself).
// Each time a new leader is elected within twice the lease TTL, its repair finishes the
// action, the server gets at most one power command (never two, never conflicting), nothing
// is left drained on a server that is on, and the history keeps the killed leader's records.
func TestHAKillTheLeaderAtEveryStep(t *testing.T) {
	etcd := etcdtest.Start(t, 3, etcdtest.Options{})
	var cases []killCase
	for _, s := range []executor.Step{executor.StepIntent, executor.StepDrained, executor.StepChecked, executor.StepSent, executor.StepCommitted} {
		cases = append(cases, killCase{"idle", fleet.PowerOff, s})
	}
	for _, s := range []executor.Step{executor.StepResumed, executor.StepCommitted} {
		cases = append(cases, killCase{"job lands", fleet.PowerOff, s})
	}
	for _, s := range []executor.Step{executor.StepIntent, executor.StepSent, executor.StepCommitted} {
		cases = append(cases, killCase{"drain lost", fleet.Resume, s})
	}
	for _, s := range []executor.Step{executor.StepIntent, executor.StepSent, executor.StepCommitted, executor.StepResumed, executor.StepReady} {
		cases = append(cases, killCase{"wake", fleet.PowerOn, s})
	}
	for i, c := range cases {
		t.Run(c.scenario+"/"+string(c.kind)+"/"+string(c.step), func(t *testing.T) {
			t.Parallel()
			killTheLeader(t, etcd, fmt.Sprintf("kill-%d", i), c)
		})
	}
}

func killTheLeader(t *testing.T, etcd *etcdtest.Cluster, fleetName string, c killCase) {
	sc := killScenarios[c.scenario]
	f := newHAFleet(t, etcd, fleetName, map[string]string{"n1": sc.power})
	switch c.scenario {
	case "wake":
		// Off and drained by rota, as a power-off leaves it; busy once up.
		f.write("n1.drained", "rota:idle")
		f.prom.idle.Store(false)
	case "job lands":
		f.write("job-on-drain", "")
	case "drain lost":
		f.write("drain-lost", "")
	}
	if sc.power == "On" {
		f.seed(map[string]store.Node{"n1": onFor(time.Hour)})
	}
	marker := filepath.Join(f.dir, "fault")
	f.fault = fmt.Sprintf("kill:%s:%s:%s", c.kind, c.step, marker)
	for i := range 3 {
		f.start(i)
	}
	first := f.leader(10 * time.Second)
	if c.scenario == "wake" {
		f.waitState("n1", fleet.StateOff, 20*time.Second)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, _ = first.client.Wake(ctx, []string{"n1"}, "test") // cut short by the kill
		}()
	}

	// The fault fires once; its rota dies of SIGKILL, the others live.
	var fi os.FileInfo
	testutil.Eventually(t, 30*time.Second, "the fault", func() error {
		var err error
		if fi, err = os.Stat(marker); err != nil {
			n, _ := first.node("n1")
			return fmt.Errorf("%w (n1: %s, %s: %s)", err, n.State, n.Reason, n.Detail)
		}
		return nil
	})
	var killed *haRota
	testutil.Eventually(t, 10*time.Second, "a rota killed", func() error {
		for _, r := range f.rotas {
			if !r.alive() {
				killed = r
				return nil
			}
		}
		return errors.New("every rota runs")
	})
	if ws, ok := killed.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Errorf("%s ended with %v, want SIGKILL", killed.name, killed.cmd.ProcessState)
	}
	next := f.leader(3 * haTTL)
	// A read of the store may time out (request_timeout: 2s) on the loaded CI machine, and the
	// API answer 500: that is no failover's fault, so the reads are tried again.
	var st api.Status
	testutil.Eventually(t, 30*time.Second, next.name+"'s status", func() (err error) {
		st, err = next.status()
		return err
	})
	if took := st.HA.Since.Sub(fi.ModTime()); took > 2*haTTL {
		t.Errorf("%s leads %s after the kill, want within twice the lease TTL (%s)", next.name, took, 2*haTTL)
	} else {
		t.Logf("%s killed at %s:%s; %s leads %s later", killed.name, c.kind, c.step, next.name, took.Round(time.Millisecond))
	}

	f.waitState("n1", sc.end, 30*time.Second)
	if got := f.resets("n1"); !slices.Equal(got, sc.resets) {
		t.Errorf("n1's BMC received %v, want %v", got, sc.resets)
	}
	if sc.end == fleet.StateOn && f.exists("n1.drained") {
		t.Errorf("n1 is on and left drained; drains and resumes: %q", f.drainLog())
	}
	var ex api.Explanation
	testutil.Eventually(t, 30*time.Second, "n1 explained", func() (err error) {
		ex, err = next.client.Explain(context.Background(), "n1")
		return err
	})
	for _, res := range sc.results {
		if !hasRecord(ex.History, c.kind, res) {
			t.Errorf("history lacks the killed %s's %q record: %+v", c.kind, res, ex.History)
		}
	}
	for _, r := range f.rotas {
		if r != killed && !r.alive() {
			t.Errorf("%s died too", r.name)
		}
	}
}

func hasRecord(h []api.AuditRecord, kind fleet.Kind, result string) bool {
	return slices.ContainsFunc(h, func(r api.AuditRecord) bool { return r.Action == kind && r.Result == result })
}

// Followers serve the read API (status and explain from the store, backups) and /metrics
// with the leader gauge and no fleet view of their own; they refuse writes with 503 and the
// leader's URL, which the API client follows. A leader that stops resigns: another leads at
// once, and finds the pin the first one wrote.
func TestHAFollowersServeReadsAndRefuseWrites(t *testing.T) {
	f, lead := busyTrio(t, etcdtest.Start(t, 1, etcdtest.Options{}), "followers")
	var follower *haRota
	for _, r := range f.rotas {
		if r != lead {
			follower = r
		}
	}
	// A follower reads who leads every half TTL: it names the leader within one read of the
	// election (one read that timed out on a loaded machine names none until the next).
	testutil.Eventually(t, 30*time.Second, "a follower names the leader", func() error {
		st, err := follower.status()
		if err != nil {
			return err
		}
		if st.HA.Leading || st.HA.Leader != lead.name || st.HA.LeaderURL != lead.base || len(st.Nodes) != 1 || st.Nodes[0].State != fleet.StateOn {
			return fmt.Errorf("HA %+v, nodes %+v", st.HA, st.Nodes)
		}
		return nil
	})
	metrics := get(t, follower.base+"/metrics")
	// Each rota's HA series name its fleet, so one Prometheus alerts on each fleet apart.
	if !strings.Contains(metrics, `rota_ha_leader{fleet="followers"} 0`) || strings.Contains(metrics, "rota_fleet_node_state") || strings.Contains(metrics, "rota_scaler_last_pass_success_timestamp_seconds") {
		t.Errorf("a follower's metrics: want rota_ha_leader{fleet=\"followers\"} 0 and no fleet view:\n%s", grepLines(metrics, "rota_ha_|rota_fleet_node_state|rota_scaler_last"))
	}
	// The leader's fleet view is exported at the end of its pass, after the pass's repair wrote
	// the state the follower read.
	testutil.Eventually(t, 30*time.Second, "the leader's fleet view in its metrics", func() error {
		if m := get(t, lead.base+"/metrics"); !strings.Contains(m, `rota_ha_leader{fleet="followers"} 1`) || !strings.Contains(m, `rota_fleet_node_state{node="n1",pool="cpu",state="on"} 1`) {
			return fmt.Errorf("the leader's metrics: %s", grepLines(m, "rota_ha_|rota_fleet_node_state"))
		}
		return nil
	})

	// A write to a follower: 503 naming the leader; the client sends it there.
	req, _ := http.NewRequest(http.MethodPost, follower.base+"/api/v1/nodes/n1/pin", strings.NewReader(`{"note":"direct"}`))
	req.Header.Set("Authorization", "Bearer "+testAPIToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), lead.base) {
		t.Errorf("pin on a follower answered %d %s", resp.StatusCode, body)
	}
	if err := follower.client.SetPinned(context.Background(), "n1", true, "through a follower"); err != nil {
		t.Fatalf("pin through a follower's client: %v", err)
	}
	ex, err := follower.client.Explain(context.Background(), "n1")
	if err != nil || !ex.Node.Pinned {
		t.Errorf("a follower's explain after the pin: %+v, %v", ex.Node, err)
	}
	var buf bytes.Buffer
	if _, err := follower.client.Backup(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(backup, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := store.Open(backup, store.Options{ReadOnly: true}); err != nil {
		t.Errorf("a follower's backup does not open: %v", err)
	} else if n, err := b.Node("n1"); err != nil || !n.Pinned {
		t.Errorf("a follower's backup holds %+v, %v", n, err)
	} else {
		_ = b.Close()
	}

	// The leader stops (SIGTERM): it resigns, and another leads well within the TTL.
	stopped := time.Now()
	if err := lead.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-lead.exited
	next := f.leader(2 * haTTL)
	if st, err := next.status(); err != nil || st.HA.Since.Sub(stopped) > haTTL {
		t.Errorf("after a resignation %s leads at %v (%v), want within the TTL", next.name, st.HA, err)
	} else {
		t.Logf("%s stopped (SIGTERM): %s leads %s later", lead.name, next.name, st.HA.Since.Sub(stopped).Round(time.Millisecond))
	}
	if n, err := next.node("n1"); err != nil || !n.Pinned {
		t.Errorf("the new leader lost the pin: %+v, %v", n, err)
	}
}

// busyTrio is three rotas of a fleet over one busy server, n1 on: it returns the fleet and
// its leader, once the leader has seen n1 on.
func busyTrio(t *testing.T, etcd *etcdtest.Cluster, name string) (*haFleet, *haRota) {
	t.Helper()
	f := newHAFleet(t, etcd, name, map[string]string{"n1": "On"})
	f.prom.idle.Store(false)
	for i := range 3 {
		f.start(i)
	}
	lead := f.leader(10 * time.Second)
	f.waitState("n1", fleet.StateOn, 20*time.Second)
	return f, lead
}

func get(t *testing.T, url string) string {
	t.Helper()
	_, body, err := testutil.GetWithAuth(http.DefaultClient, url, "", "")
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func grepLines(s, any string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, w := range strings.Split(any, "|") {
			if strings.Contains(l, w) && !strings.HasPrefix(l, "#") {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// etcd stops (every member killed): the leader stops acting within the lease TTL, no rota
// leads, no command goes out, each rota's status says why; etcd back, a rota leads again.
func TestHAEtcdStopsTheLeaderWithinTheTTL(t *testing.T) {
	etcd := etcdtest.Start(t, 3, etcdtest.Options{})
	f, lead := busyTrio(t, etcd, "outage")
	stopped := time.Now()
	for _, m := range etcd.Members {
		etcd.Kill(m)
	}
	f.prom.idle.Store(true) // were anyone acting, it would now drain n1
	// The window is a budget for the status reads (each up to request_timeout with etcd
	// down); when the leader stopped is what its status says, checked against the TTL.
	testutil.Eventually(t, 5*haTTL, "the leader stops", func() error {
		st, err := lead.status()
		if err != nil {
			return err
		}
		if st.HA.Leading {
			return errors.New("still leading")
		}
		if took := st.HA.Since.Sub(stopped); took > haTTL {
			t.Errorf("the leader stopped %s after etcd, want within the TTL (%s)", took, haTTL)
		} else {
			t.Logf("etcd killed: %s stopped leading %s later", lead.name, took.Round(time.Millisecond))
		}
		if !strings.Contains(st.HA.Problem, "stopped leading") {
			return fmt.Errorf("status says %q", st.HA.Problem)
		}
		return nil
	})
	time.Sleep(2 * time.Second) // idle for passes' worth: nobody may act on it
	for _, r := range f.rotas {
		st, err := r.status()
		if err != nil {
			t.Fatalf("%s does not answer with etcd down: %v", r.name, err)
		}
		if st.HA.Leading || st.HA.Problem == "" {
			t.Errorf("%s with etcd down: %+v", r.name, st.HA)
		}
	}
	if got := f.resets("n1"); len(got) != 0 || f.drainLog() != "" {
		t.Errorf("commands while etcd was down: BMC %v, jobs %q", got, f.drainLog())
	}
	f.prom.idle.Store(false)
	etcd.Restart(etcd.Members...)
	f.leader(30 * time.Second)
}

// A leader frozen right after writing a power-off intent (SIGSTOP), cut off from etcd by a
// proxy or not: another rota takes over once its lease is gone and finishes the power-off;
// when the old leader goes on (SIGCONT), it sends nothing: one power command in all. Reaching
// etcd again at once, it still finds its lease over before it sends anything.
func TestHAPartitionedLeaderSendsNothingAfterItsLease(t *testing.T) {
	for _, cutOff := range []bool{true, false} {
		t.Run(fmt.Sprintf("cut off %v", cutOff), func(t *testing.T) { testFrozenLeader(t, cutOff) })
	}
}

func testFrozenLeader(t *testing.T, cutOff bool) {
	etcd := etcdtest.Start(t, 1, etcdtest.Options{})
	f := newHAFleet(t, etcd, "partition", map[string]string{"n1": "On"})
	f.seed(map[string]store.Node{"n1": onFor(time.Hour)})
	marker := filepath.Join(f.dir, "fault")
	f.fault = "stop:power_off:intent_written:" + marker
	proxy := testutil.StartProxy(t, strings.TrimPrefix(etcd.Endpoints()[0], "http://"))
	f.extras[0] = []string{"http://" + proxy.Addr()}
	a := f.start(0)
	if f.leader(10*time.Second) != a {
		t.Fatal("rota-0 does not lead")
	}
	f.start(1)
	f.start(2)
	testutil.Eventually(t, 30*time.Second, "rota-0 frozen at its power-off intent", func() error {
		_, err := os.Stat(marker)
		return err
	})
	a.frozen.Store(true)
	if cutOff {
		proxy.Cut()
	}
	frozen := time.Now()
	next := f.leader(3 * haTTL) // rota-0 does not answer: the others decide
	if next == a {
		t.Fatal("the frozen rota still leads")
	}
	if st, err := next.status(); err == nil {
		t.Logf("rota-0 frozen (cut off %v): %s leads %s after", cutOff, next.name, st.HA.Since.Sub(frozen).Round(time.Millisecond))
	}
	f.waitState("n1", fleet.StateOff, 30*time.Second)
	a.cont()
	time.Sleep(haTTL + time.Second) // room for rota-0 to act, were it able to
	if got := f.resets("n1"); !slices.Equal(got, []string{"GracefulShutdown"}) {
		t.Errorf("n1's BMC received %v, want one graceful shutdown (the new leader's)", got)
	}
	st, err := a.status()
	if err != nil {
		t.Fatal(err)
	}
	if st.HA.Leading {
		t.Errorf("rota-0, frozen since %s, says it leads", time.Since(frozen))
	}
	if !strings.Contains(a.logs.String(), "stopped leading") {
		t.Error("rota-0 did not log that it stopped leading")
	}
	proxy.Restore()
}

// Bad input at start: etcd unreachable, a TLS certificate rota does not trust, a prefix of
// another fleet: rota exits 1 with what is wrong, and neither the BMC nor etcd saw a thing.
func TestHARefusesABadStart(t *testing.T) {
	dir := t.TempDir()
	cert, key := testutil.SelfSigned(t)
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for p, b := range map[string][]byte{certFile: cert, keyFile: key} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	plain := etcdtest.Start(t, 1, etcdtest.Options{})
	tlsEtcd := etcdtest.Start(t, 1, etcdtest.Options{CertFile: certFile, KeyFile: keyFile})
	f := newHAFleet(t, plain, "site-a", map[string]string{"n1": "On"})
	other := newHAFleet(t, plain, "site-b", map[string]string{"n1": "On"})
	other.prom.idle.Store(false)
	other.start(0)
	other.leader(10 * time.Second)
	closed := fmt.Sprintf("http://127.0.0.1:%d", testutil.FreePort(t))
	cases := []struct {
		name      string
		endpoints []string
		edit      func(string) string
		want      string
	}{
		{"unreachable", []string{closed}, nil, closed + ": unreachable"},
		{"untrusted TLS", tlsEtcd.Endpoints(), nil, "TLS handshake failed: tls: failed to verify certificate"},
		{"another fleet's prefix", plain.Endpoints(), func(c string) string {
			return strings.Replace(c, "fleet: site-a", "fleet: site-a\n    prefix: /rota/site-b", 1)
		}, "another rota fleet uses this prefix"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := f.config(0, testutil.FreePort(t), c.endpoints)
			if c.edit != nil {
				b, _ := os.ReadFile(cfg)
				if err := os.WriteFile(cfg, []byte(c.edit(string(b))), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			out, code := runRota(t, "--config.file", cfg)
			if code != 1 {
				t.Fatalf("rota exited %d, want 1\n%s", code, out)
			}
			if !strings.Contains(out, c.want) {
				t.Errorf("rota's error does not say %q:\n%s", c.want, out)
			}
		})
	}
	if got := f.resets("n1"); len(got) != 0 {
		t.Errorf("the BMC received %v", got)
	}
	if got := other.resets("n1"); len(got) != 0 {
		t.Errorf("the other fleet's BMC received %v", got)
	}
}

// etcd with auth, as its docs set up a tenant: a user whose role reads and writes the fleet's
// prefix alone. A pair of rotas on it starts, one leads and acts, a pin is written through
// the follower, and a resignation hands over; nothing is written outside the prefix.
func TestHAEtcdUserOfThePrefixAlone(t *testing.T) {
	etcd := etcdtest.Start(t, 1, etcdtest.Options{})
	ctx := context.Background()
	root, err := etcdstore.Connect(ctx, etcdstore.Options{Endpoints: etcd.Endpoints(), DialTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, step := range []func() error{
		func() error { _, err := root.RoleAdd(ctx, "root"); return err },
		func() error { _, err := root.UserAdd(ctx, "root", "root-pw"); return err },
		func() error { _, err := root.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := root.RoleAdd(ctx, "rota-site-a"); return err },
		func() error {
			_, err := root.RoleGrantPermission(ctx, "rota-site-a", "/rota/site-a/", clientv3.GetPrefixRangeEnd("/rota/site-a/"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := root.UserAdd(ctx, "rota", "rota-pw"); return err },
		func() error { _, err := root.UserGrantRole(ctx, "rota", "rota-site-a"); return err },
		func() error { _, err := root.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	f := newHAFleet(t, etcd, "site-a", map[string]string{"n1": "On"})
	f.prom.idle.Store(false)
	password := filepath.Join(f.dir, "etcd.password")
	if err := os.WriteFile(password, []byte("rota-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.edit = func(c string) string {
		return strings.Replace(c, "    fleet: site-a\n", "    fleet: site-a\n    username: rota\n    password_file: "+password+"\n", 1)
	}
	for i := range 2 {
		f.start(i)
	}
	lead := f.leader(20 * time.Second)
	f.waitState("n1", fleet.StateOn, 20*time.Second)
	follower := f.follower(lead)
	if err := follower.client.SetPinned(ctx, "n1", true, "through a follower"); err != nil {
		t.Fatalf("pin through the follower: %v", err)
	}
	if err := lead.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-lead.exited
	if next := f.leader(2 * haTTL); next != follower {
		t.Errorf("%s leads after %s resigned, want %s", next.name, lead.name, follower.name)
	}
	if n, err := follower.node("n1"); err != nil || !n.Pinned {
		t.Errorf("the new leader's n1: %+v, %v", n, err)
	}
	cli, err := etcdstore.Connect(ctx, etcdstore.Options{Endpoints: etcd.Endpoints(), Username: "root", Password: "root-pw", DialTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.Get(ctx, "", clientv3.WithFromKey(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if !strings.HasPrefix(string(kv.Key), "/rota/site-a/") {
			t.Errorf("a key outside the fleet's prefix: %s", kv.Key)
		}
	}
}

// Slurm's ResumeProgram (`rotactl slurm resume`) reaches a follower in the failover after the
// leader's crash, while no rota leads: rotactl waits for the next leader (within its
// --rota.timeout) and that leader powers the server on, once; the wake is not lost.
func TestHAWakeInTheFailoverWaitsForTheNextLeader(t *testing.T) {
	f := newHAFleet(t, etcdtest.Start(t, 1, etcdtest.Options{}), "wake-failover", map[string]string{"n1": "Off"})
	f.prom.idle.Store(false)
	for i := range 2 {
		f.start(i)
	}
	lead := f.leader(20 * time.Second)
	f.waitState("n1", fleet.StateOff, 20*time.Second)
	follower := f.follower(lead)
	bin := filepath.Join(t.TempDir(), "rotactl")
	if out, err := exec.Command("go", "build", "-o", bin, "../rotactl").CombinedOutput(); err != nil {
		t.Fatalf("building rotactl: %v\n%s", err, out)
	}
	if err := lead.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-lead.exited
	out, err := exec.Command(bin, "slurm", "resume", "n1", "--config.file", follower.cfg, "--rota.url", follower.base,
		"--rota.token-file", f.token, "--rota.timeout", "30s").CombinedOutput()
	if err != nil {
		t.Fatalf("rotactl slurm resume through the follower in the failover: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "started") {
		t.Errorf("rotactl slurm resume says:\n%s", out)
	}
	f.waitState("n1", fleet.StateOn, 30*time.Second)
	if got := f.resets("n1"); !slices.Equal(got, []string{"On"}) {
		t.Errorf("n1's BMC received %v, want one power-on", got)
	}
}
