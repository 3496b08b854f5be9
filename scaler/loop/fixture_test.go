package loop

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor"
	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// timerClock is a settable clock whose timers the test fires: After hands each timer to the test
// through calls, so the test knows the loop finished a pass and now waits; the pending-work
// watch's timers (of jobs.watch_interval) come through watchCalls instead, so the test knows
// the watch finished a read.
type timerClock struct {
	*clock.Manual
	calls, watchCalls chan chan time.Time
	watchEvery        time.Duration
}

func (c *timerClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	if d == c.watchEvery {
		c.watchCalls <- ch
	} else {
		c.calls <- ch
	}
	return ch
}

// watcher is a settable pending-work watch.
type watcher struct {
	mu  sync.Mutex
	ids []string
	err error
}

func (w *watcher) Waiting(context.Context) ([]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ids, w.err
}

func (w *watcher) set(err error, ids ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ids, w.err = ids, err
}

// telemetry is a settable Prometheus reader.
type telemetry struct {
	mu    sync.Mutex
	views map[string]fleet.TelemetryView
	err   error
}

// Read answers the views set, each freshly sampled at now.
func (t *telemetry) Read(_ context.Context, _ []string, now time.Time) (map[string]fleet.TelemetryView, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]fleet.TelemetryView{}
	for n, v := range t.views {
		v.LastSample = now
		out[n] = v
	}
	return out, t.err
}

func (t *telemetry) fail(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.err = err
}

type fx struct {
	t     *testing.T
	cfg   *config.Config
	world *executortest.World
	clock *timerClock
	tele  *telemetry
	st    *store.Store
	ex    *executor.Executor
	loop  *Loop
	reg   *prometheus.Registry
	path  string
	// planner is the fake below unless a test gives the real one.
	planner Planner
	// propose is what the fake planner returns (the real planner is used where said).
	propose []fleet.Action
	// watch is the loop's pending-work watch (none unless a test sets it before build).
	watch *watcher
	logs  *logtest.Hook
}

func newFx(t *testing.T, mod func(*config.Config), planner Planner) *fx {
	t.Helper()
	f := &fx{
		t:     t,
		cfg:   executortest.Config(t, mod),
		world: executortest.NewWorld(true),
		clock: &timerClock{Manual: clock.NewManual(t0), calls: make(chan chan time.Time), watchCalls: make(chan chan time.Time)},
		tele:  &telemetry{views: map[string]fleet.TelemetryView{}},
		path:  filepath.Join(t.TempDir(), "rota.db"),
	}
	for _, n := range executortest.NodeNames(f.cfg) {
		f.world.Add(n, executortest.Server{Power: bmc.StateOn, Responding: true})
		f.tele.views[n] = fleet.TelemetryView{Present: true}
	}
	if planner == nil {
		planner = func(fleet.Snapshot, *config.Config, time.Time) fleet.Decision {
			return fleet.Decision{Actions: f.propose, Desired: map[string]int{"cpu": 1, "gpu": 2}}
		}
	}
	f.planner = planner
	f.clock.watchEvery = time.Duration(f.cfg.Jobs.WatchInterval)
	f.build(nil)
	return f
}

// build opens the store and builds a fresh executor and loop over the world (with the
// executor's fault hook, may be nil).
func (f *fx) build(fault func(string, fleet.Kind, executor.Step) error) {
	t := f.t
	t.Helper()
	st, err := store.Open(f.path, store.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	logger, hook := logtest.NewNullLogger()
	reg := prometheus.NewRegistry()
	ex, err := executor.New(executor.Options{
		Store: st, Power: f.world, Jobs: f.world, Config: f.cfg, Clock: f.clock,
		Log: logger.WithField("component", "executor"), Registerer: reg, Fault: fault,
	})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{
		Config: f.cfg, Store: st, Executor: ex, Power: f.world, Jobs: f.world, Telemetry: f.tele,
		Planner: f.planner, Clock: f.clock, Log: logger.WithField("component", "loop"), Registerer: reg,
	}
	if f.watch != nil {
		o.Watch = f.watch
	}
	l, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	f.st, f.ex, f.loop, f.reg, f.logs = st, ex, l, reg, hook
}

// restart is a crash and a new rota over the same file and world.
func (f *fx) restart(fault func(string, fleet.Kind, executor.Step) error) {
	f.t.Helper()
	f.ex.Wait()
	if err := f.st.Close(); err != nil {
		f.t.Fatal(err)
	}
	f.build(fault)
}

// pass runs one pass and waits for the actions it started.
func (f *fx) pass() {
	f.t.Helper()
	if err := f.loop.runPass(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	f.ex.Wait()
}

func (f *fx) state(node string) fleet.State {
	f.t.Helper()
	n, err := f.st.Node(node)
	if err != nil {
		f.t.Fatal(err)
	}
	return n.State
}

func act(kind fleet.Kind, node, pool string, reason fleet.Reason) fleet.Action {
	return fleet.Action{Kind: kind, Node: node, Pool: pool, Reason: reason}
}

func skipFor(dec fleet.Decision, node string) fleet.Reason {
	for _, s := range dec.Skips {
		if s.Node == node {
			return s.Reason
		}
	}
	return ""
}
