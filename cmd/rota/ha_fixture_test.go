package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/alerts"
	"github.com/rotahq/rota/bmc/redfishemu"
	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/etcdtest"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
	"github.com/rotahq/rota/scaler/store/etcdstore"
)

// The HA tests run real processes: rota binaries on a real etcd (a three-member cluster), the
// Redfish BMC emulator (which records every power command it accepts), and the exec job
// adapter over shell scripts that keep each server's drain and jobs in files. Only Prometheus
// is stood in for (haPrometheus): it answers rota's own queries so that a server that is on is
// idle, or busy, as the test says.

// haTTL is the leader's lease in these tests: a leader cut off stops within it, another takes
// over within twice it.
const haTTL = 3 * time.Second

// jobScripts are the exec adapter's programs; DIR is the fleet's job-manager folder. A file
// NODE.power (written by the emulator's hook) says whether the server is up, NODE.drained
// holds the drain's reason, NODE.jobs the jobs running; job-on-drain makes a drain find a
// job that keeps running, drain-lost makes the next drain answer yes and take no effect.
// Every drain and resume is logged.
var jobScripts = map[string]string{
	"state.sh": `d=DIR
printf '{"nodes": {'
sep=''
for f in $d/*.power; do
  n=$(basename $f .power)
  jobs=$(cat $d/$n.jobs 2>/dev/null || echo 0)
  drained=false; byrota=false
  if [ -f $d/$n.drained ]; then drained=true; case "$(cat $d/$n.drained)" in rota:*) byrota=true;; esac; fi
  resp=false; [ "$(cat $f)" = On ] && resp=true
  printf '%s"%s": {"jobs": %s, "cpus": %s, "gpus": 0, "drained": %s, "drained_by_rota": %s, "responding": %s}' "$sep" $n $jobs $jobs $drained $byrota $resp
  sep=', '
done
printf '}}\n'
`,
	"demand.sh": `echo '{"demand": []}'
`,
	"drain.sh": `d=DIR
if [ -f $d/drain-lost ]; then rm $d/drain-lost; echo "lost drain $1" >> $d/log; exit 0; fi
printf '%s' "$2" > $d/$1.drained
echo "drain $1" >> $d/log
if [ -f $d/job-on-drain ]; then echo 1 > $d/$1.jobs; fi
`,
	"resume.sh": `d=DIR
rm -f $d/$1.drained
echo "resume $1" >> $d/log
`,
}

// haFleet is one fleet of rotas on the shared etcd: its own prefix, BMCs and job manager.
type haFleet struct {
	t      *testing.T
	etcd   *etcdtest.Cluster
	name   string
	dir    string
	jobs   string // the job manager's folder
	emu    *redfishemu.Emulator
	prom   *haPrometheus
	cfg    *config.Config // the fleet's config as rota reads it (instance 0's)
	token  string
	fault  string // ROTA_TEST_FAULT for every rota of the fleet
	rotas  []*haRota
	extras map[int][]string    // per-instance endpoint overrides
	edit   func(string) string // if set, applied to every config written
}

// haRota is one rota process of the fleet.
type haRota struct {
	f      *haFleet
	name   string
	base   string
	cfg    string
	cmd    *exec.Cmd
	logs   *testutil.SyncBuffer
	exited chan struct{}
	client *api.Client
	frozen atomic.Bool // stopped by the stop fault: it answers nothing until cont
}

// newHAFleet starts the emulator with the nodes (each On or Off) and the job manager; the
// rotas are started by start.
func newHAFleet(t *testing.T, etcd *etcdtest.Cluster, name string, nodes map[string]string) *haFleet {
	t.Helper()
	f := &haFleet{t: t, etcd: etcd, name: name, dir: t.TempDir(), extras: map[int][]string{}}
	f.jobs = filepath.Join(f.dir, "jobs")
	if err := os.MkdirAll(f.jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	for file, body := range jobScripts {
		if err := os.WriteFile(filepath.Join(f.dir, file), []byte(strings.ReplaceAll(body, "DIR", f.jobs)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var servers []redfishemu.ServerConfig
	for n, power := range nodes {
		f.write(n+".power", power)
		servers = append(servers, redfishemu.ServerConfig{Name: n, Listen: "127.0.0.1:0", Username: "rota", Password: "bmc-pw", Power: power,
			TransitionDelay: redfishemu.Duration(100 * time.Millisecond),
			Hook:            redfishemu.Hook{Command: []string{"sh", "-c", `printf %s "$ROTA_EMU_POWER" > ` + f.jobs + `/"$ROTA_EMU_SERVER".power`}}})
	}
	log := logrus.New()
	log.SetOutput(&bytes.Buffer{})
	emu, err := redfishemu.Start(redfishemu.Config{Servers: servers}, clock.Real{}, logrus.NewEntry(log))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emu.Close)
	f.emu = emu
	f.token = filepath.Join(f.dir, "api.token")
	if err := os.WriteFile(f.token, []byte(testAPIToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.prom = newHAPrometheus(t, f)
	return f
}

func (f *haFleet) write(file, content string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.jobs, file), []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *haFleet) exists(file string) bool {
	_, err := os.Stat(filepath.Join(f.jobs, file))
	return err == nil
}

// power is what the job manager's folder says of a node's power (the emulator's hook keeps it).
func (f *haFleet) power(node string) string {
	b, _ := os.ReadFile(filepath.Join(f.jobs, node+".power"))
	return string(b)
}

// config writes instance i's config, with endpoints (the cluster's when nil).
func (f *haFleet) config(i int, port int, endpoints []string) string {
	f.t.Helper()
	if endpoints == nil {
		endpoints = f.etcd.Endpoints()
	}
	var nodes strings.Builder
	for _, n := range f.nodeNames() {
		host, p, _ := strings.Cut(f.emu.Server(n).Addr(), ":")
		fmt.Fprintf(&nodes, "      - name: %s\n        bmc: {protocol: redfish, host: %s, port: %s, username: rota, password_env: ROTA_TEST_BMC_PASSWORD, insecure_skip_verify: true}\n", n, host, p)
	}
	// dial_timeout is only a budget for rota's first contact with etcd, and for the diagnosis
	// of a bad start (2s timed the TLS handshake out on a loaded 2-core CI machine).
	// request_timeout is 2s (1s timed the fleet marker's first write out, and rota would not
	// start, on the loaded CI machine); a status reads the store within it, so the tests'
	// status client waits 6s, etcd down included.
	cfg := fmt.Sprintf(`prometheus: {url: %q, timeout: 2s, scrape_interval: 1s}
server:
  listen_address: 127.0.0.1:%d
  api_token_file: %s
  webhook_auth_disabled: true
store:
  backend: etcd
  etcd:
    endpoints: ["%s"]
    fleet: %s
    name: rota-%d
    advertise_url: http://127.0.0.1:%d
    lease_ttl: %s
    dial_timeout: 10s
    request_timeout: 2s
jobs:
  adapter: exec
  timeout: 5s
  watch_interval: 0s
  exec:
    state_command: sh %[9]s/state.sh
    demand_command: sh %[9]s/demand.sh
    drain_command: sh %[9]s/drain.sh
    resume_command: sh %[9]s/resume.sh
policy:
  evaluation_interval: 1s
  idle: {window: 2s}
  telemetry: {max_age: 1m}
  cooldown: {scale_up: 0s, scale_down: 0s}
  node: {min_on: 0s, min_off: 0s}
  drain: {timeout: 3s}
  failure: {backoff: 1s, max_backoff: 2s}
bmc: {min_command_interval: 0s, operation_timeout: 20s, graceful_timeout: 10s}
pools:
  - name: cpu
    profile: {cpu_cores: 8}
    cost: {hourly: 1, currency: EUR}
    boot_timeout: 1m
    nodes:
%s`, f.prom.url, port, f.token, strings.Join(endpoints, `", "`), f.name, i, port, model(haTTL), f.dir, nodes.String())
	if f.edit != nil {
		cfg = f.edit(cfg)
	}
	path := filepath.Join(f.dir, fmt.Sprintf("rota-%d.yml", i))
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		f.t.Fatal(err)
	}
	if i == 0 {
		c, err := config.Load(path)
		if err != nil {
			f.t.Fatal(err)
		}
		f.cfg = c
	}
	return path
}

func model(d time.Duration) string { return fmt.Sprintf("%ds", int(d/time.Second)) }

func (f *haFleet) nodeNames() []string {
	var out []string
	for _, s := range []string{"n1", "n2"} {
		if f.emu.Server(s) != nil {
			out = append(out, s)
		}
	}
	return out
}

// start starts instance i (its endpoints overridden by f.extras[i]) and waits until it
// serves.
func (f *haFleet) start(i int) *haRota {
	f.t.Helper()
	port := testutil.FreePort(f.t)
	r := &haRota{f: f, name: fmt.Sprintf("rota-%d", i), base: fmt.Sprintf("http://127.0.0.1:%d", port),
		cfg: f.config(i, port, f.extras[i]), logs: &testutil.SyncBuffer{}, exited: make(chan struct{})}
	r.cmd = exec.Command(rotaBinary, "--config.file", r.cfg, "--log.level", "debug")
	r.cmd.Env = append(os.Environ(), "ROTA_TEST_BMC_PASSWORD=bmc-pw", "ROTA_TEST_FAULT="+f.fault)
	r.cmd.Stdout, r.cmd.Stderr = r.logs, r.logs
	if err := r.cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	go func() { _ = r.cmd.Wait(); close(r.exited) }()
	f.t.Cleanup(func() {
		r.cont()
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.exited:
		case <-time.After(10 * time.Second):
			_ = r.cmd.Process.Kill()
			<-r.exited
		}
		if f.t.Failed() {
			f.t.Logf("--- %s log ---\n%s", r.name, tailString(r.logs.String(), 6000))
		}
	})
	var err error
	if r.client, err = api.NewClient(r.base, api.NewToken(testAPIToken), &http.Client{Timeout: 3 * time.Second}); err != nil {
		f.t.Fatal(err)
	}
	testutil.WaitHTTP(f.t, r.base+"/-/healthy", 30*time.Second)
	f.rotas = append(f.rotas, r)
	return r
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// cont sends SIGCONT (a rota the stop fault froze goes on).
func (r *haRota) cont() {
	_ = r.cmd.Process.Signal(syscall.SIGCONT)
	r.frozen.Store(false)
}

func (r *haRota) alive() bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

func (r *haRota) status() (api.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	return r.client.Status(ctx)
}

// leader waits until one live rota of the fleet says it leads and the others name it, and
// returns it.
func (f *haFleet) leader(within time.Duration) *haRota {
	f.t.Helper()
	var lead *haRota
	testutil.Eventually(f.t, within, "one leader", func() error {
		lead = nil
		for _, r := range f.rotas {
			if !r.alive() || r.frozen.Load() {
				continue
			}
			st, err := r.status()
			if err != nil {
				return err
			}
			if st.HA == nil {
				return errors.New("no HA status")
			}
			if st.HA.Leading {
				if lead != nil {
					return fmt.Errorf("%s and %s both say they lead", lead.name, r.name)
				}
				lead = r
			}
		}
		if lead == nil {
			return errors.New("no rota leads")
		}
		return nil
	})
	return lead
}

// follower is a rota of a two-rota fleet other than lead.
func (f *haFleet) follower(lead *haRota) *haRota {
	if f.rotas[0] == lead {
		return f.rotas[1]
	}
	return f.rotas[0]
}

// node is what r says of node n.
func (r *haRota) node(n string) (api.NodeStatus, error) {
	st, err := r.status()
	if err != nil {
		return api.NodeStatus{}, err
	}
	for _, ns := range st.Nodes {
		if ns.Name == n {
			return ns, nil
		}
	}
	return api.NodeStatus{}, fmt.Errorf("%s not in %s's status", n, r.name)
}

// waitState waits until the fleet's leader says n is in state want.
func (f *haFleet) waitState(n string, want fleet.State, within time.Duration) {
	f.t.Helper()
	testutil.Eventually(f.t, within, n+" "+string(want), func() error {
		for _, r := range f.rotas {
			if !r.alive() || r.frozen.Load() {
				continue
			}
			st, err := r.status()
			if err != nil || st.HA == nil || !st.HA.Leading {
				continue
			}
			ns, err := r.node(n)
			if err != nil {
				return err
			}
			if ns.State != want {
				return fmt.Errorf("%s says %s is %s (%s: %s)", r.name, n, ns.State, ns.Reason, ns.Detail)
			}
			return nil
		}
		return errors.New("no leader")
	})
}

// seed writes records into the fleet's empty prefix before any rota starts, as `rotactl store
// migrate` moves a single rota's store in.
func (f *haFleet) seed(nodes map[string]store.Node) {
	f.t.Helper()
	src, err := store.Open(filepath.Join(f.dir, "seed.db"), store.Options{Create: true})
	if err != nil {
		f.t.Fatal(err)
	}
	defer src.Close()
	for n, rec := range nodes {
		if err := src.UpdateNode(n, func(r *store.Node) error { *r = rec; return nil }); err != nil {
			f.t.Fatal(err)
		}
	}
	cli, err := etcdstore.Connect(context.Background(), etcdstore.Options{Endpoints: f.etcd.Endpoints(), DialTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second})
	if err != nil {
		f.t.Fatal(err)
	}
	defer cli.Close()
	_, err = etcdstore.Import(context.Background(), cli, etcdstore.OpenOptions{Prefix: "/rota/" + f.name, Fleet: f.name, By: "test",
		RequestTimeout: 5 * time.Second, Clock: clock.Real{}}, src)
	if err != nil {
		f.t.Fatal(err)
	}
}

// onFor is the record of a server on (and idle, unless the job manager says otherwise) for d.
func onFor(d time.Duration) store.Node {
	at := time.Now().Add(-d)
	return store.Node{State: fleet.StateOn, Since: at, LastOn: at}
}

// resets are the power commands the emulated BMC of n accepted, in order.
func (f *haFleet) resets(n string) []string { return f.emu.Server(n).Stats().Resets }

// drainLog is the job manager's log of drains and resumes.
func (f *haFleet) drainLog() string {
	b, _ := os.ReadFile(filepath.Join(f.jobs, "log"))
	return string(b)
}

// haPrometheus answers rota's queries: a server that is on (its power file says so) has a
// fresh sample and full coverage, and is idle (CPU 1%) while idle is set, busy (90%) else.
type haPrometheus struct {
	url  string
	idle atomic.Bool
}

func newHAPrometheus(t *testing.T, f *haFleet) *haPrometheus {
	p := &haPrometheus{}
	p.idle.Store(true)
	var once sync.Once
	var e alerts.Expr
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		once.Do(func() { e = alerts.NewExpr(f.cfg) })
		q := r.Form.Get("query")
		now := time.Now()
		cpu := e.CPUUtilization()
		var results []string
		for _, n := range f.nodeNames() {
			if f.power(n) != "On" {
				continue
			}
			var v string
			switch q {
			case e.IdleMax(cpu):
				v = "0.9"
				if p.idle.Load() {
					v = "0.01"
				}
			case e.IdleSamples(cpu):
				v = fmt.Sprint(e.IdleSteps())
			case e.NewestSample(), e.ExporterNewestSample(n):
				v = fmt.Sprint(now.Unix())
			default:
				continue
			}
			results = append(results, fmt.Sprintf(`{"metric":{"node":%q},"value":[%d,%q]}`, n, now.Unix(), v))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, strings.Join(results, ","))
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}
