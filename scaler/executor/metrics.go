package executor

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

type metrics struct {
	actions  *prometheus.CounterVec
	duration *prometheus.HistogramVec
	outside  *prometheus.CounterVec
}

// newMetrics registers the action metrics, with the success series and those
// RotaPowerActionsFailing counts (failure, state_unknown) of every action in every pool created
// at 0: increase() sees a counter's first increment only from a sample before it, so a series
// born at its first failure would be undercounted (the alert would miss a failure, or a run of
// unknown power states). The changes outside rota (RotaPowerChangedOutside) start at 0 per pool
// and state for the same reason.
func newMetrics(reg prometheus.Registerer, pools []config.Pool) (*metrics, error) {
	m := &metrics{
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rota_scaler_actions_total",
			Help: "Actions carried out (or, in dry run, not), by action, pool and result.",
		}, []string{"action", "pool", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rota_scaler_action_duration_seconds",
			Help:    "Time one action took, from its intent to its last step in that call.",
			Buckets: prometheus.ExponentialBuckets(0.5, 2, 14), // 0.5 s .. about 2 h
		}, []string{"action"}),
		outside: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rota_scaler_power_changes_outside_total",
			Help: "Servers at rest found powered on or off by something other than rota (a person, the BMC's power policy, another controller), by pool and the state found.",
		}, []string{"pool", "to"}),
	}
	for _, p := range pools {
		for _, k := range fleet.Kinds() {
			for _, r := range []fleet.Result{fleet.ResultSuccess, fleet.ResultFailure, fleet.ResultStateUnknown} {
				m.actions.WithLabelValues(string(k), p.Name, string(r))
			}
		}
		for _, to := range []fleet.State{fleet.StateOn, fleet.StateOff} {
			m.outside.WithLabelValues(p.Name, string(to))
		}
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.actions, m.duration, m.outside} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// measure counts one action by result and records how long it took.
func (m *metrics) measure(a fleet.Action, result fleet.Result, d time.Duration) {
	m.actions.WithLabelValues(string(a.Kind), a.Pool, string(result)).Inc()
	m.duration.WithLabelValues(string(a.Kind)).Observe(d.Seconds())
}

// resultOf is how an action run under ctx ended with err.
func resultOf(ctx context.Context, err error) fleet.Result {
	switch {
	case err == nil:
		return fleet.ResultSuccess
	case interrupted(ctx), errors.Is(err, store.ErrNotLeader):
		// Cut short by shutdown, or by the end of this rota's term: no failure of the step.
		return fleet.ResultInterrupted
	case errors.Is(err, ErrAborted):
		return fleet.ResultAborted
	case leftUnknown(err):
		return fleet.ResultStateUnknown
	}
	return fleet.ResultFailure
}

// dryRun audits what a would have done and counts it; nothing is sent and no state changes.
func (e *Executor) dryRun(a fleet.Action) {
	e.metrics.measure(a, fleet.ResultDryRun, 0)
	e.log.WithFields(map[string]any{"node": a.Node, "pool": a.Pool, "action": a.Kind, "reason": a.Reason, "detail": a.Detail}).Info("dry run: would act")
	if err := e.o.Store.AppendAudit(auditRecord(a, e.o.Clock.Now(), auditDryRun, nil)); err != nil {
		e.log.WithError(err).Warn("recording a dry-run action")
	}
}

// WouldSavePerHour is what the scale-down actions among actions would save per hour once their
// servers are off: the hourly cost of each drained, moved-off or powered-off server whose pool
// saves when off. In dry run it is the figure an operator weighs before turning dry run off.
func WouldSavePerHour(cfg *config.Config, actions []fleet.Action) float64 {
	var sum float64
	for _, a := range actions {
		moves := a.Kind == fleet.Move && a.Move != nil && a.Move.Drain
		if a.Kind != fleet.Drain && a.Kind != fleet.PowerOff && !moves {
			continue
		}
		if ref, ok := cfg.Node(a.Node); ok && ref.Pool.Cost.Saves() {
			sum += ref.Pool.Cost.PlanPerHour()
		}
	}
	return sum
}
