package loop

import (
	"cmp"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor"
	"github.com/rotahq/rota/scaler/fleet"
)

// These names are a contract with the alert rules and dashboards: keep them exactly.
type metrics struct {
	passes, decisions                           *prometheus.CounterVec
	triggers, watchReads, wakes                 *prometheus.CounterVec
	lastSuccess, telemetryOK, jobsOK            prometheus.Gauge
	paused, dryRun, wouldSave                   prometheus.Gauge
	passDuration                                prometheus.Histogram
	skips, pending, deferred                    *prometheus.GaugeVec
	nodeState, nodePowered, nodeCost, nodeSaves *prometheus.GaugeVec
	nodeGPUs                                    *prometheus.GaugeVec
	poolDesired, poolPowered                    *prometheus.GaugeVec
}

// newMetrics registers the loop's metrics on reg, each collected only while leading says so.
func newMetrics(reg prometheus.Registerer, leading func() bool) (*metrics, error) {
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	gaugeVec := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	m := &metrics{
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rota_scaler_passes_total", Help: "Loop passes, by result (success, error).",
		}, []string{"result"}),
		triggers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rota_scaler_pass_triggers_total", Help: "Passes started, by what started them (start, interval, nudge, watch, wake).",
		}, []string{"trigger"}),
		watchReads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rota_scaler_watch_reads_total", Help: "Reads of the job manager's pending-work watch, by result (success, error).",
		}, []string{"result"}),
		wakes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rota_scaler_wake_results_total", Help: "Servers the job manager asked to be powered on (wake requests), by the answer (started, powered, waiting, dry_run, refused).",
		}, []string{"result"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rota_scaler_decisions_total", Help: "Actions decided and started (or dry-run), by action, reason and pool.",
		}, []string{"action", "reason", "pool"}),
		lastSuccess: gauge("rota_scaler_last_pass_success_timestamp_seconds", "When the last successful pass started."),
		telemetryOK: gauge("rota_scaler_telemetry_ok", "1 if the last pass read Prometheus telemetry, else 0 (no scale-down)."),
		jobsOK:      gauge("rota_scaler_jobs_ok", "1 if the last pass read the job manager, else 0 (no scale-down)."),
		paused:      gauge("rota_scaler_paused", "1 while the operator has paused the scaler."),
		dryRun:      gauge("rota_scaler_dry_run", "1 when policy.dry_run is set."),
		wouldSave:   gauge("rota_scaler_would_save_per_hour", "Hourly cost of the servers the last pass decided to take down (drain or power off), in accounting.currency."),
		passDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "rota_scaler_pass_duration_seconds", Help: "Time one pass took, actions started but not awaited.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14), // 10 ms .. about 80 s
		}),
		skips:       gaugeVec("rota_scaler_skips", "Servers left alone by the last pass, by reason and pool.", "reason", "pool"),
		pending:     gaugeVec("rota_scaler_pending_jobs", "Jobs waiting, by the cheapest pool that fits them (none: no pool fits) and class.", "pool", "class"),
		deferred:    gaugeVec("rota_scaler_deferred_jobs", "Of the jobs waiting (rota_scaler_pending_jobs), those that wait on purpose: of a deferrable class outside its window, not yet waited its defer.max.", "pool", "class"),
		nodeState:   gaugeVec("rota_fleet_node_state", "1 for each server's current lifecycle state.", "node", "pool", "state"),
		nodePowered: gaugeVec("rota_fleet_node_powered", "1 if the server draws power: its BMC says on (a failed server left on too), or, when the BMC cannot be read, it is in flight.", "node", "pool", "region", "department"),
		nodeCost:    gaugeVec("rota_fleet_node_cost_per_hour", "What the server costs per hour while on.", "node", "pool", "region", "department", "currency"),
		nodeSaves:   gaugeVec("rota_fleet_node_saves_when_off", "1 if powering the server off saves its cost.", "node", "pool"),
		nodeGPUs:    gaugeVec("rota_fleet_node_gpus_declared", "GPUs the server's pool profile declares: the rules want a reading from each before the server counts as idle.", "node", "pool"),
		poolDesired: gaugeVec("rota_fleet_pool_desired_servers", "Servers the last pass wants on, per pool.", "pool"),
		poolPowered: gaugeVec("rota_fleet_pool_powered_servers", "Servers drawing power, per pool.", "pool"),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.passes, m.triggers, m.watchReads, m.wakes, m.decisions, m.lastSuccess, m.telemetryOK, m.jobsOK,
			m.paused, m.dryRun, m.wouldSave, m.passDuration, m.skips, m.pending, m.deferred, m.nodeState, m.nodePowered,
			m.nodeCost, m.nodeSaves, m.nodeGPUs, m.poolDesired, m.poolPowered} {
			if err := reg.Register(leaderOnly{Collector: c, leading: leading}); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// recordPass exports what the pass saw and decided. A failed pass updates only the pass
// counters: the fleet series keep the last good view rather than a blank one.
func (m *metrics) recordPass(cfg *config.Config, p pass, took time.Duration) {
	m.passDuration.Observe(took.Seconds())
	m.dryRun.Set(b2f(cfg.Policy.DryRun))
	if !p.ok {
		m.passes.WithLabelValues("error").Inc()
		return
	}
	m.passes.WithLabelValues("success").Inc()
	m.lastSuccess.Set(float64(p.at.UnixNano()) / 1e9)
	m.telemetryOK.Set(b2f(p.snap.Telemetry))
	m.jobsOK.Set(b2f(p.snap.JobsKnown))
	m.paused.Set(b2f(p.snap.Paused))
	m.wouldSave.Set(executor.WouldSavePerHour(cfg, p.dec.Actions))
	for _, a := range p.dec.Actions {
		m.decisions.WithLabelValues(string(a.Kind), string(a.Reason), a.Pool).Inc()
	}
	m.skips.Reset()
	for _, s := range p.dec.Skips {
		m.skips.WithLabelValues(string(s.Reason), s.Pool).Inc()
	}
	m.recordFleet(cfg, p)
}

func (m *metrics) recordFleet(cfg *config.Config, p pass) {
	m.nodeState.Reset()
	m.poolPowered.Reset()
	m.poolDesired.Reset()
	for _, pl := range cfg.Pools {
		m.poolPowered.WithLabelValues(pl.Name).Set(0)
	}
	for _, n := range p.snap.Nodes {
		pl := cfg.Pool(n.Pool)
		m.nodeState.WithLabelValues(n.Name, n.Pool, string(n.State)).Set(1)
		m.nodePowered.WithLabelValues(n.Name, n.Pool, n.Region, n.Department).Set(b2f(drawsPower(n)))
		m.nodeCost.WithLabelValues(n.Name, n.Pool, n.Region, n.Department, pl.Cost.Currency).Set(pl.Cost.PerHourAt(p.at))
		m.nodeSaves.WithLabelValues(n.Name, n.Pool).Set(b2f(pl.Cost.Saves()))
		m.nodeGPUs.WithLabelValues(n.Name, n.Pool).Set(float64(pl.Profile.GPUs))
		if drawsPower(n) {
			m.poolPowered.WithLabelValues(n.Pool).Inc()
		}
	}
	for pool, d := range p.dec.Desired {
		m.poolDesired.WithLabelValues(pool).Set(float64(d))
	}
	m.pending.Reset()
	m.deferred.Reset()
	for _, d := range p.snap.Demand {
		pool, class := pendingPool(cfg, d.Shape), cmp.Or(d.Class, cfg.Classify(d.Shape))
		m.pending.WithLabelValues(pool, class).Add(float64(d.Count))
		// Every pool and class waiting has a deferred count, 0 included: the backlog alert
		// leaves the deferred out.
		deferred := m.deferred.WithLabelValues(pool, class)
		if cfg.Deferred(class, d.Since, p.at) {
			deferred.Add(float64(d.Count))
		}
	}
}

// drawsPower reports whether the server draws power: as its BMC says when it answered (a
// failed server left on does, one rota thinks on that is off does not), as its state says
// otherwise (a server in flight).
func drawsPower(n fleet.Node) bool {
	switch n.Power {
	case bmc.StateOn, bmc.StateTransitioning:
		return true
	case bmc.StateOff:
		return false
	}
	return n.State.Powered()
}

// pendingPool is the cheapest pool one server of which fits the shape, for the pending-jobs
// label ("none" when no pool does).
func pendingPool(cfg *config.Config, s config.Shape) string {
	pools := slices.Clone(cfg.Pools)
	slices.SortStableFunc(pools, func(a, b config.Pool) int {
		return cmp.Or(cmp.Compare(a.Cost.PlanPerHour(), b.Cost.PlanPerHour()), cmp.Compare(a.Name, b.Name))
	})
	for i := range pools {
		if pools[i].Profile.Fits(s) {
			return pools[i].Name
		}
	}
	return "none"
}
