package executor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs"
	"github.com/rotahq/rota/scaler/store"
)

// Clock is the executor's time source.
type Clock interface{ Now() time.Time }

// ReadyFunc reports whether a booted node's own services are up (its exporter answers); it is
// asked only after the job manager, if it knows the node, says it responds.
type ReadyFunc func(ctx context.Context, node string) (bool, error)

// Step is a point in an action right after a durable write or a side effect.
type Step string

// The steps, in the order an action passes them.
const (
	StepIntent    Step = "intent_written"     // the intent is in the store, nothing sent yet
	StepDrained   Step = "drained"            // power-off of an On node: the drain call returned
	StepChecked   Step = "allocation_checked" // power-off: allocation read again, found empty
	StepSent      Step = "side_effect_done"   // the drain, power or resume call returned
	StepMoved     Step = "work_moved"         // move: the job manager requeued the jobs
	StepCommitted Step = "committed"          // the state the call led to is in the store
	StepResumed   Step = "resumed"            // the node was resumed (booted, or power-off aborted)
	StepReady     Step = "ready_committed"    // a booted node is On in the store
)

// ErrAborted is returned when a power-off was called off because a job landed on the node.
var ErrAborted = errors.New("power-off aborted: a job is allocated")

// Options are what New needs. Store, Power, Jobs, Config, Clock and Log are required.
type Options struct {
	Store  *store.Store
	Power  bmc.Power
	Jobs   jobs.Manager
	Config *config.Config
	Clock  Clock
	Log    *logrus.Entry
	// Registerer takes the executor's metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// Ready, if set, is asked before a booting node counts as ready.
	Ready ReadyFunc
	// Fault, if set, is called after every step; a non-nil error stops the action there as a
	// crash would (nothing more is written or sent). Tests inject crashes with it; nil in
	// production.
	Fault func(node string, kind fleet.Kind, step Step) error
}

// Executor runs actions and repairs. Safe for concurrent use.
type Executor struct {
	o       Options
	log     *logrus.Entry
	metrics *metrics

	mu   sync.Mutex
	busy map[string]bool // nodes with an action or a repair under way
	wg   sync.WaitGroup
	// turns holds one token per power-off sending, at most bmc's Shutdowns (see bmcTurn).
	turns chan struct{}
}

// New builds an executor.
func New(o Options) (*Executor, error) {
	if o.Store == nil || o.Power == nil || o.Jobs == nil || o.Config == nil || o.Clock == nil || o.Log == nil {
		return nil, errors.New("executor: store, power, jobs, config, clock and log are required")
	}
	m, err := newMetrics(o.Registerer, o.Config.Pools)
	if err != nil {
		return nil, fmt.Errorf("executor metrics: %w", err)
	}
	return &Executor{o: o, log: o.Log, metrics: m, busy: map[string]bool{}, turns: make(chan struct{}, o.Config.BMC.Shutdowns())}, nil
}

// Start begins each action in the background, one per node, at most
// the cap in flight under way at once (maxInFlight), and returns a skip for each action it did
// not start (the node already has one under way, or the cap is reached). In dry run nothing is
// started: each action is audited with result dry_run. ctx bounds the actions, so it should
// outlive the pass (the daemon's context).
func (e *Executor) Start(ctx context.Context, actions []fleet.Action) []fleet.Skip {
	if e.o.Config.Policy.DryRun {
		for _, a := range actions {
			e.dryRun(a)
		}
		return nil
	}
	var skips []fleet.Skip
	for _, a := range actions {
		switch ok, why := e.claim(a.Node, true); {
		case ok:
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				defer e.release(a.Node)
				_ = e.run(ctx, a)
			}()
		default:
			skips = append(skips, fleet.Skip{Node: a.Node, Pool: a.Pool, Reason: why, Detail: string(a.Kind) + " not started"})
		}
	}
	return skips
}

// Wait blocks until every action started so far has ended.
func (e *Executor) Wait() { e.wg.Wait() }

// claim marks node busy. capped applies the concurrency cap (repairs are not capped: they finish
// what was already counted).
func (e *Executor) claim(node string, capped bool) (bool, fleet.Reason) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.busy[node]:
		return false, fleet.SkipInFlight
	case capped && len(e.busy) >= e.maxInFlight():
		return false, fleet.SkipConcurrency
	}
	e.busy[node] = true
	return true, ""
}

// maxInFlight is the cap on actions in flight (policy.disruption.max_concurrent, or its share
// of the configured servers where that is more).
func (e *Executor) maxInFlight() int {
	servers := 0
	for _, p := range e.o.Config.Pools {
		servers += len(p.Nodes)
	}
	return e.o.Config.Policy.Disruption.Concurrent(servers)
}

func (e *Executor) release(node string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.busy, node)
}

// run carries out one action and accounts for it.
func (e *Executor) run(ctx context.Context, a fleet.Action) error {
	start := e.o.Clock.Now()
	var err error
	switch a.Kind {
	case fleet.Drain:
		err = e.drain(ctx, a)
	case fleet.PowerOff:
		err = e.powerOff(ctx, a)
	case fleet.PowerOn:
		err = e.powerOn(ctx, a)
	case fleet.Resume:
		err = e.resume(ctx, a)
	case fleet.Move:
		err = e.move(ctx, a)
	default:
		err = fmt.Errorf("unknown action kind %q", a.Kind)
	}
	res := resultOf(ctx, err)
	e.metrics.measure(a, res, e.o.Clock.Now().Sub(start))
	l := e.log.WithFields(logrus.Fields{"node": a.Node, "pool": a.Pool, "action": a.Kind, "reason": a.Reason, "result": res})
	switch {
	case res == fleet.ResultInterrupted:
		l.WithError(err).Info("action cut short by shutdown or the end of this rota's term; its intent waits for the next repair")
	case err != nil:
		l.WithError(err).Warn("action did not succeed")
	default:
		l.Info("action done")
	}
	return err
}

// step calls the fault hook.
func (e *Executor) step(a fleet.Action, s Step) error {
	if e.o.Fault == nil {
		return nil
	}
	if err := e.o.Fault(a.Node, a.Kind, s); err != nil {
		return fmt.Errorf("%s %s at %s: %w", a.Kind, a.Node, s, err)
	}
	return nil
}

func (e *Executor) pool(node string) *config.Pool {
	if ref, ok := e.o.Config.Node(node); ok {
		return ref.Pool
	}
	return nil
}

// sendPower sends one power command, bounded by bmc.operation_timeout (confirmation
// included), and once it is confirmed records what it led to (commit). A BMC that cannot say
// the state, or a command that found no slot under bmc.concurrency in that time and was never
// sent (rota's own queue, not the server: no failure, no backoff), makes the node Unknown
// with its intent kept, for the next pass to read and take up; any other error fails the
// step (verb names it: "powering off gpu01: ...").
func (e *Executor) sendPower(ctx context.Context, a fleet.Action, verb string, send func(context.Context) error, commit func() error) error {
	if err := e.fence(ctx, a.Node); err != nil {
		return err
	}
	bctx, cancel := e.bmcCall(ctx)
	defer cancel()
	err := send(bctx)
	switch {
	case leftUnknown(err):
		return e.unknown(ctx, a, err)
	case err != nil:
		return e.fail(ctx, a, fmt.Errorf("%s %s: %w", verb, a.Node, err))
	}
	if err := e.step(a, StepSent); err != nil {
		return err
	}
	if err := commit(); err != nil {
		return err
	}
	return e.step(a, StepCommitted)
}

// leftUnknown reports whether a power command's err leaves the node Unknown with its intent
// kept (sendPower): the BMC could not say the state, or the command found no slot under
// bmc.concurrency and was never sent.
func leftUnknown(err error) bool {
	return errors.Is(err, bmc.ErrStateUnknown) || errors.Is(err, bmc.ErrNoSlot)
}

// bmcTurn waits for one of the power-offs' turns (config.BMCLimits.Shutdowns) and returns its
// release. The power-offs past them wait here, before their last checks (fence,
// allocation), not in the BMC layer after them, where the wait would count against
// bmc.operation_timeout. A power-on takes no turn: its requests go first for a slot.
func (e *Executor) bmcTurn(ctx context.Context, node string) (func(), error) {
	select {
	case e.turns <- struct{}{}:
		return func() { <-e.turns }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a bmc turn for %s: %w", node, ctx.Err())
	}
}

// fence is asked right before every command to a BMC or the job manager (store.Fence): on
// an etcd store it goes out only while this rota holds the leader's lease, as etcd confirms
// now. A rota deposed, or cut off from etcd, since it wrote the intent stops here: nothing is
// sent and nothing written, and the intent waits for the leader's repair.
func (e *Executor) fence(ctx context.Context, node string) error {
	if err := e.o.Store.Fence(ctx); err != nil {
		return fmt.Errorf("no command to %s: %w", node, err)
	}
	return nil
}

// jobsCall bounds one job-manager call by jobs.timeout, and bmcCall one power operation by
// bmc.operation_timeout (confirmation included), so a hung call cannot hold a node forever.
// Their expiry is a failure of the step; only the end of ctx itself (shutdown) is not.
func (e *Executor) jobsCall(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, time.Duration(e.o.Config.Jobs.Timeout))
}

func (e *Executor) bmcCall(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, time.Duration(e.o.Config.BMC.OperationTimeout))
}
