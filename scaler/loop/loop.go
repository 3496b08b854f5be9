package loop

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs"
	"github.com/rotahq/rota/scaler/store"
)

// Telemetry reads what Prometheus says about the nodes (promfacts.Reader). An error means no
// server's telemetry is known this pass.
type Telemetry interface {
	Read(ctx context.Context, nodes []string, now time.Time) (map[string]fleet.TelemetryView, error)
}

// Planner decides one pass (plan.Plan).
type Planner func(fleet.Snapshot, *config.Config, time.Time) fleet.Decision

// Clock is the loop's time source.
type Clock interface {
	Now() time.Time
	// After sends the time once d has passed.
	After(d time.Duration) <-chan time.Time
}

// Options are what New needs; all are required except Watch and Registerer.
type Options struct {
	Config    *config.Config
	Store     *store.Store
	Executor  *executor.Executor
	Power     bmc.Power
	Jobs      jobs.Manager
	Telemetry Telemetry
	Planner   Planner
	Clock     Clock
	Log       *logrus.Entry
	// Watch, optional, is the job manager's pending-work watch (jobs.Watcher), read every
	// jobs.watch_interval (0: never).
	Watch jobs.Watcher
	// Registerer takes the loop's metrics (exported only while this rota leads); nil
	// registers nothing.
	Registerer prometheus.Registerer
	// Meter reads the BMCs' power draw every bmc.power_reading_interval; nil: the pools'
	// watts count.
	Meter bmc.Meter
	// Numbers reads the carbon intensities given as queries; nil: they are unknown.
	Numbers Numbers
	// GPUs reads the GPUs' power draw for pools with base_watts; nil: their watts count.
	GPUs GPUPower
	// Leadership, optional, says whether this rota leads: Run runs only while it does, and a
	// rota that does not answers the read API from the store and refuses writes. Nil: it
	// always leads.
	Leadership Leadership
}

// Loop is the control loop. Safe for concurrent use; Run runs once per term of leadership,
// never twice at once.
type Loop struct {
	o       Options
	cfg     *config.Config
	log     *logrus.Entry
	metrics *metrics
	books   *books
	// nudges are requests for a pass from a webhook or an operator's change, spaced by
	// nudgeGap; work those from waiting work (the watch, a wake), run at once.
	nudges, work chan nudge

	wakes wakes

	mu   sync.Mutex
	last pass // the last pass, for Status and Explain
	// refused is each server's move refusal already in the audit history.
	refused map[string]fleet.Reason
	// learned is used by passes only (one at a time).
	learned learner
}

var _ api.Backend = (*Loop)(nil)

// pass is what one pass saw and decided.
type pass struct {
	at   time.Time
	ok   bool
	err  error
	snap fleet.Snapshot
	dec  fleet.Decision
	// jobsErr is why the job manager could not be read ("" when it was).
	jobsErr string
}

// New builds the loop (Watch and Registerer are optional).
func New(o Options) (*Loop, error) {
	if o.Config == nil || o.Store == nil || o.Executor == nil || o.Power == nil || o.Jobs == nil ||
		o.Telemetry == nil || o.Planner == nil || o.Clock == nil || o.Log == nil {
		return nil, errors.New("loop: every option but Watch, Registerer, Meter, Numbers, GPUs and Leadership is required")
	}
	l := &Loop{o: o, cfg: o.Config, log: o.Log, nudges: make(chan nudge, 1), work: make(chan nudge, 1),
		wakes: wakes{wanted: map[string]*wanted{}}, refused: map[string]fleet.Reason{}}
	m, err := newMetrics(o.Registerer, l.leading)
	if err != nil {
		return nil, fmt.Errorf("loop metrics: %w", err)
	}
	b, err := newBooks(o.Store, o.Registerer, l.leading)
	if err != nil {
		return nil, fmt.Errorf("loop metrics: %w", err)
	}
	l.metrics, l.books = m, b
	return l, nil
}

// Run runs passes until ctx ends: one at once (its repair finishes what a crash, or the last
// leader, left), then one every evaluation interval, on a nudge, or when the pending-work
// watch (Options.Watch) sees new work; never two at once. It waits for the watch and the
// actions under way before returning. A rota of an HA pair or trio runs it for each term it
// leads, with a context that ends with the term.
func (l *Loop) Run(ctx context.Context) error {
	l.mu.Lock()
	l.last = pass{} // a pass of an earlier term is not this one's view
	l.mu.Unlock()
	// What was learned is read again from the store: another leader may have learned and
	// saved since this rota's last term.
	l.learned = learner{}
	l.wakes.mu.Lock()
	l.wakes.stopped = false
	l.wakes.mu.Unlock()
	defer l.endWakes()
	defer l.o.Executor.Wait()
	if every := time.Duration(l.cfg.Jobs.WatchInterval); l.o.Watch != nil && every > 0 {
		var wg sync.WaitGroup
		defer wg.Wait()
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.watch(ctx, every)
		}()
	}
	interval := time.Duration(l.cfg.Policy.EvaluationInterval)
	trigger := triggerStart
	for {
		l.metrics.triggers.WithLabelValues(trigger).Inc()
		started := l.o.Clock.Now()
		if err := l.runPass(ctx); err != nil {
			l.log.WithError(err).Error("pass failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case n := <-l.work:
			trigger = n.trigger
			l.log.WithFields(logrus.Fields{"trigger": n.trigger, "reason": n.reason}).Debug("pass on request")
		case n := <-l.nudges:
			l.log.WithFields(logrus.Fields{"trigger": n.trigger, "reason": n.reason}).Debug("pass on request")
			if trigger = l.spaceNudge(ctx, started); trigger == "" {
				return nil
			}
		case <-l.o.Clock.After(interval):
			trigger = triggerInterval
		}
	}
}

// nudgeGap is the least time from one pass's start to a pass that a nudge asks for: each pass
// reads every BMC and the job manager, and a flood of webhooks (an Alertmanager resending, a
// sender gone wrong; the webhook may take no token) would otherwise run passes back to back,
// each a state read of every BMC.
const nudgeGap = 5 * time.Second

// spaceNudge holds the pass a nudge asked for until nudgeGap after the last pass started, and
// returns what the pass is for: the nudge, or waiting work that asked meanwhile (the watch, a
// wake), which runs at once. Nudges that come meanwhile merge with it. Empty when ctx ended.
func (l *Loop) spaceNudge(ctx context.Context, last time.Time) string {
	wait := nudgeGap - l.o.Clock.Now().Sub(last)
	if wait <= 0 {
		return triggerNudge
	}
	trigger := triggerNudge
	select {
	case <-ctx.Done():
		return ""
	case n := <-l.work:
		trigger = n.trigger
	case <-l.o.Clock.After(wait):
	}
	select {
	case <-l.nudges: // came during the wait: this pass serves it
	default:
	}
	return trigger
}

// Nudge asks for a pass soon; it never blocks, and merges with a nudge already pending.
func (l *Loop) Nudge(reason string) { l.request(triggerNudge, reason) }

// runPass is one pass of the loop, recorded.
func (l *Loop) runPass(ctx context.Context) error {
	start := l.o.Clock.Now()
	p := l.act(ctx, start)
	p.ok = p.err == nil
	if p.ok {
		l.auditRefusals(p.dec, p)
		l.keepBooks(ctx, p)
	}
	l.metrics.recordPass(l.cfg, p, l.o.Clock.Now().Sub(start))
	l.mu.Lock()
	l.last = p
	l.mu.Unlock()
	return p.err
}

// act observes, repairs, plans, gates and starts the actions: the pass, with its error.
func (l *Loop) act(ctx context.Context, now time.Time) pass {
	obs := l.observe(ctx, now)
	p := pass{at: now}
	if obs.jobsErr != nil {
		p.jobsErr = obs.jobsErr.Error()
	}
	p.snap, p.dec, p.err = l.decide(ctx, obs, now)
	return p
}

// decide repairs, plans, gates and starts the actions on what obs saw.
func (l *Loop) decide(ctx context.Context, obs observation, now time.Time) (fleet.Snapshot, fleet.Decision, error) {
	before, err := l.o.Store.Nodes()
	if err != nil {
		return fleet.Snapshot{}, fleet.Decision{}, fmt.Errorf("reading the store: %w", err)
	}
	if err := l.clockAhead(before, now); err != nil {
		return fleet.Snapshot{}, fleet.Decision{}, err
	}
	g, err := l.o.Store.Global()
	if err != nil {
		return fleet.Snapshot{}, fleet.Decision{}, fmt.Errorf("reading the store: %w", err)
	}
	if !g.Paused {
		if err := l.o.Executor.Repair(ctx, obs.forRepair()); err != nil {
			return fleet.Snapshot{}, fleet.Decision{}, fmt.Errorf("repair: %w", err)
		}
	}
	snap, recs, err := l.snapshot(obs, now)
	if err != nil {
		return fleet.Snapshot{}, fleet.Decision{}, err
	}
	l.learn(&snap, before, recs, now)
	broughtOn(before, &snap)
	dec := l.o.Planner(snap, l.cfg, now)
	asked, callers := l.takeWakes(now)
	dec = gate(snap, withWakes(snap, dec, asked), held(before, recs, snap))
	dec = withSkips(dec, l.o.Executor.Start(ctx, dec.Actions))
	l.answerWakes(ctx, snap, dec, asked, callers)
	return snap, dec, nil
}

// clockAhead writes back the records in recs whose times a clock that had jumped ahead stamped
// (store.Node.AheadOfTheClock), with those times taken as now, before repair and the plan
// read them; recs is updated alike. A dry run writes nothing.
func (l *Loop) clockAhead(recs map[string]store.Node, now time.Time) error {
	if l.cfg.Policy.DryRun {
		return nil
	}
	limit := time.Duration(l.cfg.Policy.Failure.MaxBackoff)
	for name, r := range recs {
		if !r.AheadOfTheClock(now, limit) {
			continue
		}
		err := l.o.Store.UpdateNode(name, func(n *store.Node) error {
			n.AheadOfTheClock(now, limit)
			return nil
		})
		if err != nil {
			return fmt.Errorf("writing back %s's times dated ahead of the clock: %w", name, err)
		}
		recs[name] = r
		l.o.Log.WithField("node", name).Warn("the node's record held times ahead of the clock (stamped by a clock that had jumped ahead): taken as now")
	}
	return nil
}

// broughtOn: a server repair brought On this pass (a boot found ready, a drain given back) has
// had rota's drain lifted in the job manager since this pass read it, or will have it lifted by
// the next repair; the view still shows rota's drain. The planner counts such a server as
// taking work (it would otherwise wake another server for the work this one is about to take);
// a drain a person made stays as read.
func broughtOn(before map[string]store.Node, snap *fleet.Snapshot) {
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		if b, ok := before[n.Name]; ok && b.State != fleet.StateOn && n.State == fleet.StateOn && n.Jobs.DrainedByRota {
			n.Jobs.Drained, n.Jobs.DrainedByRota = false, false
		}
	}
}

// held says, of each node no action may start on this pass, why: repair changed it (its
// observations are older than its state, so it waits for the next pass), or a move left
// unfinished is in flight on it (jobs.ErrMoveUnfinished: an action begun now would take
// the move's intent, and with it the repair that lets its work go).
func held(before, recs map[string]store.Node, snap fleet.Snapshot) map[string]string {
	out := map[string]string{}
	for _, n := range snap.Nodes {
		if b, ok := before[n.Name]; ok && (b.State != n.State || !b.Since.Equal(n.Since)) {
			out[n.Name] = "repair moved it this pass"
		}
		if r := recs[n.Name]; r.Intent != nil && r.Intent.Kind == fleet.Move {
			out[n.Name] = "a move is under way on it, or left unfinished for repair to finish"
		}
	}
	return out
}
