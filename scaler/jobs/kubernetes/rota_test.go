package kubernetes_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	logtest "github.com/sirupsen/logrus/hooks/test"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor"
	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs"
	"github.com/rotahq/rota/scaler/loop"
	"github.com/rotahq/rota/scaler/plan"
	"github.com/rotahq/rota/scaler/store"
)

// nsName is a namespace name for the test: lower case, short, unique per subtest.
func nsName(t *testing.T) string {
	_, sub, _ := strings.Cut(t.Name(), "/")
	var b strings.Builder
	for _, r := range strings.ToLower(sub) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	s := b.String()
	if len(s) > 40 {
		s = s[:40]
	}
	return "t-" + s
}

// fleetYAML is the test fleet: two cheap CPU servers and two dear GPU servers, each a Node of
// its own name, with timings short enough for a test (an idle server goes off once idle for
// its break-even time: boot and shutdown, about 80 s).
const fleetYAML = `
server: {webhook_auth_disabled: true}
jobs:
  adapter: kubernetes
  timeout: 5s
  kubernetes: {kubeconfig: %q}
policy:
  evaluation_interval: 1s
  idle: {window: 1m}
  backlog: {queued_jobs: 0, for: 0s}
  cooldown: {scale_up: 0s, scale_down: 0s}
  node: {min_on: 0s, min_off: 0s}
  spares: {factor: 0, quantile: 0}
  break_even: {wear_time: 0s}
  drain: {timeout: 30m}
pools:
  - name: cpu
    profile: {cpu_cores: 32, memory: 128GiB}
    cost: {hourly: 1.5, currency: EUR}
    boot_timeout: 20s
    nodes:
      - {name: cpu01, bmc: {protocol: ipmi, host: b1, username: u, password_env: P}}
      - {name: cpu02, bmc: {protocol: ipmi, host: b2, username: u, password_env: P}}
  - name: gpu
    profile: {cpu_cores: 96, memory: 1TiB, gpus: 8}
    cost: {hourly: 24, currency: EUR}
    boot_timeout: 20s
    nodes:
      - {name: gpu01, bmc: {protocol: redfish, host: g1, username: u, password_env: P}}
      - {name: gpu02, bmc: {protocol: redfish, host: g2, username: u, password_env: P}}
`

func fleetConfig(t *testing.T, kubeconfig string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(fmt.Appendf(nil, fleetYAML, kubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// telemetry says every powered server is sampled now and idle (so only the job manager's view
// keeps a server on).
type telemetry struct{}

func (telemetry) Read(_ context.Context, nodes []string, now time.Time) (map[string]fleet.TelemetryView, error) {
	out := map[string]fleet.TelemetryView{}
	for _, n := range nodes {
		out[n] = fleet.TelemetryView{Present: true, LastSample: now}
	}
	return out, nil
}

// rota is rota's decision core over the real cluster: the loop with the real planner and
// executor, a bbolt store, the adapter under rota's role, and in-memory BMCs (the executor
// tests' World, for its power only).
type rota struct {
	loop    *loop.Loop
	power   *executortest.World
	servers []string
	// logs holds what the loop and the executor logged, from info up.
	logs *logtest.Hook
	stop func()
}

// startRota runs the loop (a pass every second) until the test ends; power is each server's
// state at start.
func startRota(t *testing.T, cfg *config.Config, jm jobs.Manager, power map[string]bmc.State) *rota {
	t.Helper()
	return startRotaOn(t, openStore(t), cfg, jm, power)
}

// openStore opens a new store, for startRotaOn.
func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "rota.db"), store.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// startRotaOn is startRota on store st, whose records (what rota did before) the test wrote.
func startRotaOn(t *testing.T, st *store.Store, cfg *config.Config, jm jobs.Manager, power map[string]bmc.State) *rota {
	t.Helper()
	logger, hook := logtest.NewNullLogger()
	r := &rota{power: executortest.NewWorld(false), logs: hook}
	for name, st := range power {
		r.power.Add(name, executortest.Server{Power: st})
		r.servers = append(r.servers, name)
	}
	ex, err := executor.New(executor.Options{Store: st, Power: r.power, Jobs: jm, Config: cfg, Clock: clock.Real{},
		Log: logger.WithField("component", "executor")})
	if err != nil {
		t.Fatal(err)
	}
	if r.loop, err = loop.New(loop.Options{Config: cfg, Store: st, Executor: ex, Power: r.power, Jobs: jm,
		Telemetry: telemetry{}, Planner: plan.Plan, Clock: clock.Real{}, Log: logger.WithField("component", "loop")}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.loop.Run(ctx) })
	r.stop = sync.OnceFunc(func() {
		cancel()
		wg.Wait()
		_ = st.Close()
	})
	t.Cleanup(r.stop)
	return r
}

// sent lists the power commands sent, as "op node".
func (r *rota) sent() []string {
	var out []string
	for _, c := range r.power.Commands() {
		out = append(out, c.Op+" "+c.Node)
	}
	return out
}

// wantPods: exactly want pods of the namespace are in phase.
func (e *env) wantPods(want int, phase corev1.PodPhase) error {
	l, err := e.admin.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{FieldSelector: "status.phase=" + string(phase)})
	if err != nil {
		return err
	}
	if len(l.Items) != want {
		return fmt.Errorf("%d pods %s, want %d", len(l.Items), phase, want)
	}
	return nil
}
