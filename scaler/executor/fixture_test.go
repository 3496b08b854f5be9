package executor

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// fx is one rota (store + executor) over a world that outlives it.
type fx struct {
	t     *testing.T
	cfg   *config.Config
	world *executortest.World
	clock *clock.Manual
	path  string
	st    *store.Store
	ex    *Executor
	reg   *prometheus.Registry
}

func newFx(t *testing.T, readyOnBoot bool, mod func(*config.Config)) *fx {
	t.Helper()
	f := &fx{
		t:     t,
		cfg:   executortest.Config(t, mod),
		world: executortest.NewWorld(readyOnBoot),
		clock: clock.NewManual(t0),
		path:  filepath.Join(t.TempDir(), "rota.db"),
	}
	for _, n := range executortest.NodeNames(f.cfg) {
		f.world.Add(n, executortest.Server{Power: bmc.StateOn, Responding: true})
	}
	f.start(nil)
	return f
}

// start opens the store and builds an executor with the fault hook.
func (f *fx) start(fault func(string, fleet.Kind, Step) error) {
	f.t.Helper()
	st, err := store.Open(f.path, store.Options{Create: true})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = st.Close() })
	logger, _ := logtest.NewNullLogger()
	f.reg = prometheus.NewRegistry()
	ex, err := New(Options{
		Store: st, Power: f.world, Jobs: f.world, Config: f.cfg, Clock: f.clock,
		Log: logger.WithField("component", "executor"), Registerer: f.reg, Fault: fault,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.st, f.ex = st, ex
}

// restart is a crash and a new rota (with fault, may be nil): the store is closed and opened
// again, the world kept.
func (f *fx) restart(fault func(string, fleet.Kind, Step) error) {
	f.t.Helper()
	f.ex.Wait()
	if err := f.st.Close(); err != nil {
		f.t.Fatal(err)
	}
	f.start(fault)
}

// readOnly reopens the store read-only, with a new executor over it: every write fails.
func (f *fx) readOnly() {
	f.t.Helper()
	f.ex.Wait()
	if err := f.st.Close(); err != nil {
		f.t.Fatal(err)
	}
	st, err := store.Open(f.path, store.Options{ReadOnly: true})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = st.Close() })
	logger, _ := logtest.NewNullLogger()
	ex, err := New(Options{
		Store: st, Power: f.world, Jobs: f.world, Config: f.cfg, Clock: f.clock,
		Log: logger.WithField("component", "executor"),
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.st, f.ex = st, ex
}

// observe reads the world as a pass would.
func (f *fx) observe() Observed {
	ctx := context.Background()
	obs := Observed{At: f.clock.Now(), Power: map[string]bmc.State{}}
	for _, n := range executortest.NodeNames(f.cfg) {
		if s, err := f.world.State(ctx, n); err == nil {
			obs.Power[n] = s
		}
	}
	views, err := f.world.Nodes(ctx)
	obs.Jobs, obs.JobsKnown = views, err == nil
	return obs
}

func (f *fx) repair() {
	f.t.Helper()
	if err := f.ex.Repair(context.Background(), f.observe()); err != nil {
		f.t.Fatal(err)
	}
}

// put sets a node's record (and the world to match it is the caller's business).
func (f *fx) put(node string, n store.Node) {
	f.t.Helper()
	if err := f.st.UpdateNode(node, func(r *store.Node) error { *r = n; return nil }); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fx) node(name string) store.Node {
	f.t.Helper()
	n, err := f.st.Node(name)
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

func (f *fx) lastAudit(node string) string {
	f.t.Helper()
	recs, err := f.st.Audit(node, 1)
	if err != nil || len(recs) == 0 {
		f.t.Fatalf("no audit record for %s (%v)", node, err)
	}
	return recs[0].Result
}

func (f *fx) actions(kind fleet.Kind, pool string, result fleet.Result) float64 {
	return testutil.ToFloat64(f.ex.metrics.actions.WithLabelValues(string(kind), pool, string(result)))
}

// draining puts node in the state a finished drain leaves.
func (f *fx) draining(node string) {
	f.put(node, store.Node{State: fleet.StateDraining, Since: f.clock.Now(), DrainedByRota: true})
	f.world.Set(node, func(s *executortest.Server) { s.Drained, s.DrainedByRota = true, true })
}

// off puts node in the state a finished power-off leaves.
func (f *fx) off(node string) {
	f.put(node, store.Node{State: fleet.StateOff, Since: f.clock.Now(), DrainedByRota: true})
	f.world.Set(node, func(s *executortest.Server) {
		s.Power, s.Responding, s.Drained, s.DrainedByRota = bmc.StateOff, false, true, true
	})
}

func act(kind fleet.Kind, node string) fleet.Action {
	pool := "cpu"
	if node[0] == 'g' {
		pool = "gpu"
	}
	a := fleet.Action{Kind: kind, Node: node, Pool: pool, Reason: fleet.ReasonIdle}
	if kind == fleet.Move {
		a.Reason = fleet.ReasonRebalance
		a.Move = &fleet.MovePlan{Jobs: []string{"7"}, Exclude: []string{node}, Drain: true}
	}
	return a
}

// busyWith puts one requeueable job, id 7 (the one act's move plans), on node.
func (f *fx) busyWith(node string) {
	f.put(node, nodeOn())
	f.world.Set(node, func(s *executortest.Server) { s.Jobs, s.Requeueable = 1, []string{"7"} })
}
