package alerts

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// SignalLabel is the label every rota alert carries; its value names the signal (idle, backlog,
// ...). Alertmanager routes on it to rota's webhook.
const SignalLabel = "rota_signal"

// The alert names.
const (
	AlertIdle              = "RotaServerIdle"
	AlertBacklog           = "RotaQueueBacklog"
	AlertUnderused         = "RotaGPUServerUnderused"
	AlertTelemetryMissing  = "RotaTelemetryMissing"
	AlertCollectorFailing  = "RotaCollectorFailing"
	AlertGPUsMissing       = "RotaGPUReadingsMissing"
	AlertBootTimeout       = "RotaServerBootTimeout"
	AlertFailed            = "RotaServerFailed"
	AlertScalerDown        = "RotaScalerDown"
	AlertNotReconciling    = "RotaScalerNotReconciling"
	AlertScalerBlind       = "RotaScalerTelemetryFailing"
	AlertPowerActionsFails = "RotaPowerActionsFailing"
	AlertNoLeader          = "RotaNoLeader"
	AlertLeaderFlapping    = "RotaLeaderFlapping"
	AlertConfigDiffers     = "RotaConfigDiffers"
	AlertPowerOutside      = "RotaPowerChangedOutside"
	AlertFleetLabel        = "RotaFleetLabelMismatch"
)

// FlapTerms is how many terms begun within FlapWindow passes make RotaLeaderFlapping fire.
const (
	FlapTerms  = 4
	FlapWindow = 10
)

func alert(name, signal, severity, expr string, forDur model.Duration, summary, description string) Rule {
	return Rule{
		Alert:       name,
		Expr:        expr,
		For:         forDur,
		Labels:      map[string]string{SignalLabel: signal, "severity": severity},
		Annotations: map[string]string{"summary": summary, "description": description},
	}
}

func pct(v float64) string { return num(v*100) + "%" }

func alertRules(cfg *config.Config, exprs []Expr) []Rule {
	e := fleetExpr{Expr: NewExpr(cfg), all: exprs}
	p := e.Policy
	// Each alert holds for one scaler pass before it fires: the windows are in the expressions.
	pass := p.EvaluationInterval
	rules := []Rule{
		alert(AlertIdle, "idle", "info", e.idleAlert(), pass,
			"{{ $labels.node }} is idle",
			fmt.Sprintf("CPU under %s and every GPU under %s (%s) for the whole %s window, with complete, fresh data for every GPU its pool declares or it reports (pool {{ $labels.pool }}).",
				pct(p.Idle.CPUThreshold), pct(p.Idle.GPUThreshold), signalWords(p.GPUSignal), p.Idle.Window)),
		alert(AlertBacklog, "backlog", "info",
			backlogAlert(p.Backlog.QueuedJobs), p.Backlog.For,
			"{{ $labels.class }} work queues for pool {{ $labels.pool }}",
			fmt.Sprintf("More than %d {{ $labels.class }} jobs have waited for pool {{ $labels.pool }} for %s (deferred work, of a deferrable class outside its window, left out).", p.Backlog.QueuedJobs, p.Backlog.For)),
		alert(AlertUnderused, "underuse", "info", e.underuseAlert(), pass,
			"{{ $labels.node }} runs light work on its GPUs",
			fmt.Sprintf("Mean GPU use (%s) under %s over %s while the server is busy (pool {{ $labels.pool }}).",
				signalWords(p.GPUSignal), pct(p.Underuse.GPUThreshold), p.Underuse.Window)),
		alert(AlertTelemetryMissing, "telemetry", "warning", telemetryAlert(cfg), pass,
			"No fresh data from {{ $labels.node }}",
			fmt.Sprintf("{{ $labels.node }} is powered on but its exporter sent nothing in %s; rota will not power it off.", p.Telemetry.MaxAge)),
		// To the operators alone (signal scaler): rota can do nothing of Prometheus' labels.
		alert(AlertFleetLabel, "scaler", "warning", fleetLabelAlert(cfg), 3*pass,
			"{{ $labels.node }}'s exporter and rota name different fleets",
			"rota's series of {{ $labels.node }} carry fleet=\"{{ $labels.fleet }}\", its exporter's fleet=\"{{ $labels.exporter_fleet }}\" (empty: no label): they match nowhere, so the server is never idle and RotaTelemetryMissing fires for it. Set the label fleet on every target of a fleet (rota, its exporters, the Slurm collector), or on none (docs/fleets.md)."),
		alert(AlertCollectorFailing, "telemetry", "warning", e.partialAlert(), pass,
			"Partial data from {{ $labels.node }}",
			"A collector of {{ $labels.node }}'s exporter fails or a GPU has no reading; rota will not power it off."),
		alert(AlertGPUsMissing, "telemetry", "warning", e.gpusMissingAlert(), pass,
			"GPU readings missing from {{ $labels.node }}",
			"{{ $value }} of the GPUs pool {{ $labels.pool }} declares for {{ $labels.node }} have no reading (GPU collector off or failing, NVML not started, a GPU lost, or the GPU exporter down); rota will not power it off."),
	}
	rules = append(rules, bootAlerts(cfg.Pools, pass)...)
	stuck := 3 * p.EvaluationInterval
	// The alerts on a counter's increase within a window fire at once: a failure once counted
	// stays counted until the window forgets it, so a hold adds nothing, and a hold of a pass
	// outlasted a window no longer than a pass (and a scrape), which never fired.
	return append(rules,
		alert(AlertScalerDown, "scaler", "critical", scalerDownAlert(), stuck,
			"rota is down",
			fmt.Sprintf("Prometheus has not scraped rota (job %q) for %s: nothing scales. Where rota's targets carry the label fleet, the alert names the fleet none of whose rotas is up; without it, no rota is up at all.", ScalerJob, stuck)),
		alert(AlertNotReconciling, "scaler", "critical",
			fmt.Sprintf("time() - %s > %s", ScalerLastPassSuccess, num(time.Duration(stuck).Seconds())), pass,
			"rota is not reconciling",
			fmt.Sprintf("rota has not finished a pass in %s.", stuck)),
		alert(AlertScalerBlind, "scaler", "warning", fmt.Sprintf("%s == 0", ScalerTelemetryOK), stuck,
			"rota cannot read Prometheus",
			fmt.Sprintf("rota's queries have failed for %s: no server is powered off until they work.", stuck)),
		alert(AlertPowerActionsFails, "power", "critical",
			fmt.Sprintf("sum by (fleet, pool, action) (increase(%s{result=~\"%s|%s\"}[%s])) >= %d",
				ScalerActions, fleet.ResultFailure, fleet.ResultStateUnknown, p.Failure.AlertWindow, p.Failure.AlertAfter), 0,
			"{{ $labels.action }} keeps failing in pool {{ $labels.pool }}",
			fmt.Sprintf("At least %d {{ $labels.action }} actions failed in pool {{ $labels.pool }} within %s.",
				p.Failure.AlertAfter, p.Failure.AlertWindow)),
		alert(AlertPowerOutside, "scaler", "warning",
			fmt.Sprintf("sum by (fleet, pool, to) (increase(%s[%s])) > 0", ScalerPowerOutside, p.Failure.AlertWindow), 0,
			"a server of pool {{ $labels.pool }} was powered {{ $labels.to }} outside rota",
			fmt.Sprintf("Within %s rota found a server of pool {{ $labels.pool }} at rest powered {{ $labels.to }} with no command of its own: by hand or `rotactl power` (pin the server or put it in maintenance first), the BMC's power policy after a power cut, or another controller on the same BMCs (a second rota on another store or etcd prefix), which would fight rota over the servers (the job manager's own power saving is not counted). `rotactl explain NODE` lists it among recent actions (reason outside).", p.Failure.AlertWindow)),
		alert(AlertNoLeader, "scaler", "critical", fmt.Sprintf("max by (%s) (%s{job=%q}) < 1", FleetLabel, HALeader, ScalerJob), NoLeaderHold(cfg),
			"no rota leads",
			fmt.Sprintf("rota answers but none of fleet {{ $labels.fleet }}'s instances has led for %s (etcd unreachable, or every lease lost): nothing scales there, and the fleet stays as it is.", NoLeaderHold(cfg))),
		alert(AlertLeaderFlapping, "scaler", "warning",
			fmt.Sprintf("sum by (%s) (increase(%s{job=%q}[%s])) >= %d", FleetLabel, HATerms, ScalerJob, FlapSpan(cfg), FlapTerms), 0,
			"rota's leader keeps changing",
			fmt.Sprintf("%d or more terms of leadership began within %s: leases keep ending (etcd slow or partitioned, a rota crash-looping, a lease TTL too short for the network); each change costs a repair pass and up to twice the lease TTL without a leader.", FlapTerms, FlapSpan(cfg))),
		alert(AlertConfigDiffers, "scaler", "warning", fmt.Sprintf("max by (%s) (%s{job=%q}) == 1", FleetLabel, HAConfigDiffers, ScalerJob), FlapSpan(cfg),
			"rota's instances decide by different configs",
			fmt.Sprintf("A follower's config has differed from the leader's for %s (policy, classes, pools, accounting, telemetry sources or BMC limits): a failover would change what the fleet does. Give every rota the same config.", FlapSpan(cfg))),
	)
}

// scalerDownAlert fires for each fleet none of whose rotas is up, by the target label fleet
// (rota's own fleet label goes with its scrape, so the operator labels each target with its
// store.etcd.fleet), and, without the label, when no rota at all is up or none is scraped.
// Targets without the label are one fleet, "": one rota on bbolt fires as it did before fleets.
func scalerDownAlert() string {
	return fmt.Sprintf("max by (%s) (up{job=%q}) < 1\nor absent(up{job=%q} == 1)", FleetLabel, ScalerJob, ScalerJob)
}

// backlogAlert: more than queued jobs of a class wait for a pool, leaving out the deferred ones
// (a deferrable class outside its window waits on purpose: the nudge would wake nothing); the
// queue as it is where rota sends no deferred count for the pool and class.
func backlogAlert(queued int) string {
	return fmt.Sprintf("(\n  %s\n    - on (fleet, pool, class) %s\n  or %s\n) > %d",
		RecPendingPoolClass, once(ScalerDeferredJobs, "pool", "class"), RecPendingPoolClass, queued)
}

// NoLeaderHold is how long no rota may lead before RotaNoLeader fires: one pass, and never
// less than a failover may take (twice the lease TTL), in whole scrape intervals.
func NoLeaderHold(cfg *config.Config) model.Duration {
	step := time.Duration(cfg.Prometheus.ScrapeInterval)
	hold := 2 * time.Duration(cfg.Store.Etcd.LeaseTTL)
	if step > 0 {
		hold = (hold + step - 1) / step * step
	}
	return model.Duration(max(hold, time.Duration(cfg.Policy.EvaluationInterval)))
}

// FlapSpan is the window RotaLeaderFlapping counts terms in: FlapWindow passes.
func FlapSpan(cfg *config.Config) model.Duration {
	return model.Duration(FlapWindow * time.Duration(cfg.Policy.EvaluationInterval))
}

// signalWords names the GPU busy signal in alert descriptions.
func signalWords(signal string) string {
	switch signal {
	case config.SignalUtilization:
		return "utilisation"
	case config.SignalSMActive:
		return "SM activity"
	}
	return "SM activity where reported, else utilisation"
}

// fleetExpr builds the alerts on a fleet's servers: the per-server expressions of every
// telemetry source the pools read (all), and rota-exporter's own checks (Expr: collectors,
// device counts). Windows evaluate the per-server expression over the raw series at each step
// (perServer), never the recorded series: those have points only at the rules' evaluations,
// and a window over them would miss the readings and gaps between evaluations whenever the
// evaluation interval is longer than the scrape interval. What is read "now" reads the
// recorded series, recorded earlier in the same evaluation.
type fleetExpr struct {
	Expr
	all []Expr
}

// node is the per-server expression part gives over every source.
func (e fleetExpr) node(part func(Expr) string) string { return perServer(e.all, part) }

// idleAlert fires for a server whose CPU stayed under the threshold and every GPU under its
// own, with readings at every step of the window for the CPU and for every GPU the pool's
// profile declares or the server reports, and readings now (a scrape that fails ends the alert
// at once: rates over the last samples would keep it a while). Absent, partial or stale data is
// never idle, and neither is a server whose declared GPUs rota's own series do not tell.
func (e fleetExpr) idleAlert() string {
	p := e.Policy.Idle
	cpu := e.node(Expr.CPUUtilization)
	return strings.Join([]string{
		fmt.Sprintf("(\n  %s < %s\n  and on (fleet, node)\n  %s >= %d\n)", indent(e.IdleMax(cpu)), num(p.CPUThreshold), indent(e.IdleSamples(cpu)), e.IdleSteps()),
		fmt.Sprintf("and on (fleet, node) %s", RecCPUs),
		fmt.Sprintf("and on (fleet, node) %s", FleetNodeGPUs),
		fmt.Sprintf("unless on (fleet, node) (\n  %s\n  >= %s\n)", indent(e.IdleMax(e.node(Expr.GPUBusyMax))), num(p.GPUThreshold)),
		fmt.Sprintf("unless on (fleet, node) (%s > 0)", RecGPUProcesses),
		fmt.Sprintf("unless on (fleet, node) (\n  %s\n)", indent(e.failing())),
		fmt.Sprintf("unless on (fleet, node) (\n  %s\n  > 0\n)", indent(e.GPUsUnread(RecGPUBusyCount))),
		fmt.Sprintf("unless on (fleet, node) (\n  %s\n)", indent(e.gpusShort())),
	}, "\n")
}

// gpusNeeded is, per server, how many GPUs must have readings: the more of those its pool
// declares and those its rota-exporter reports (a GPU beyond the profile is held to as well),
// either where the other is absent. In parentheses, with the label node alone.
func (e fleetExpr) gpusNeeded() string {
	declared, devices := once(FleetNodeGPUs, "node"), "max by (fleet, node) ("+e.src.sel(GPUDevices)+")"
	return fmt.Sprintf("(\n  %s > on (fleet, node) %s\n  or on (fleet, node) %s\n  or on (fleet, node) %s\n)", declared, devices, devices, declared)
}

// gpusShort selects the servers that need GPU readings (gpusNeeded) without a reading from
// each of those GPUs at every step of the idle window and now.
//
// An external source has no count of the GPUs a server has (rota_gpu_devices is
// rota-exporter's): there a server needs, besides, as many GPUs read as it had at any step of
// the window, or a GPU beyond those its pool declares (on a pool that declares none too) could
// miss readings without starting the window again.
func (e fleetExpr) gpusShort() string {
	count, need := e.node(Expr.GPUBusyCount), e.gpusNeeded()
	for _, x := range e.all {
		if x.src.ext != nil {
			most := "max by (fleet, node) (\n  " + indent(e.IdleMax(count)) + "\n)"
			need = fmt.Sprintf("(\n  %s > on (fleet, node) %s\n  or on (fleet, node) %s\n  or on (fleet, node) %s\n)", indent(need), indent(most), indent(most), indent(need))
			break
		}
	}
	return fmt.Sprintf("%s > 0\nunless on (fleet, node) (\n  %s\n  >= on (fleet, node) %s\n  and on (fleet, node)\n  %s\n  >= %d\n  and on (fleet, node) %s >= on (fleet, node) %s\n)",
		need, indent(e.IdleMin(count)), indent(need), indent(e.IdleSamples(count)), e.IdleSteps(), RecGPUBusyCount, indent(need))
}

// failing selects the servers with a failing collector: any but the GPU collector, or the GPU
// collector on a server whose pool declares GPUs or that reports some.
func (e Expr) failing() string {
	return fmt.Sprintf("%s\nor on (fleet, node) (\n  %s\n  and on (fleet, node) (%s > 0 or on (fleet, node) %s > 0)\n)",
		e.CollectorsFailing(), e.GPUCollectorFailing(), e.GPUDevices(), FleetNodeGPUs)
}

// partialAlert fires for a server with a failing collector or a GPU without a reading.
func (e Expr) partialAlert() string {
	return fmt.Sprintf("%s\nor on (fleet, node)\n%s > 0", e.failing(), e.GPUsUnread(RecGPUBusyCount))
}

// gpusMissingAlert fires for a server that sends CPU readings but fewer GPU readings than
// its pool declares; its value is how many are missing.
func (e Expr) gpusMissingAlert() string {
	declared := once(FleetNodeGPUs, "node", "pool")
	return fmt.Sprintf("(\n  %s\n  - on (fleet, node) group_left () (%s or on (fleet, node) %s * 0)\n) > 0\nand on (fleet, node) %s",
		declared, RecGPUBusyCount, declared, RecCPUs)
}

// underuseAlert fires for a GPU server whose mean GPU busy signal stayed under the threshold
// over the whole window while it works (GPU processes, or CPU above the idle threshold), with a
// reading at every step from every GPU its pool declares or it reports (the mean of the GPUs
// read says nothing of one without readings).
func (e fleetExpr) underuseAlert() string {
	p := e.Policy
	mean := e.node(Expr.GPUBusyMean)
	return fmt.Sprintf("%s\n< %s\nand on (fleet, node)\n%s\n>= %d\nand on (fleet, node)\n%s\n>= on (fleet, node) %s\nand on (fleet, node) (%s > 0 or %s >= %s)",
		e.UnderuseMean(mean), num(p.Underuse.GPUThreshold),
		e.UnderuseSamples(mean), e.UnderuseSteps(),
		e.UnderuseMin(e.node(Expr.GPUBusyCount)), e.gpusNeeded(),
		RecGPUProcesses, RecCPU, num(p.Idle.CPUThreshold))
}

// telemetryAlert fires for a server the BMC says is on, that is not booting or powering off,
// with no CPU sample within the max age from any source the pools read: it compares the
// inventory with the data, so a server that never reported is caught too.
func telemetryAlert(cfg *config.Config) string {
	return fmt.Sprintf("(%s == 1)\nunless on (fleet, node) (%s{state=~\"powering_on|booting|powering_off\"} == 1)\nunless on (fleet, node) %s",
		once(FleetNodePowered, "node", "pool", "region", "department"), FleetNodeState, strings.Join(fresh(cfg), "\nunless on (fleet, node) "))
}

// fresh is, per source the pools read, its servers with a CPU sample within the max age.
func fresh(cfg *config.Config) []string {
	var out []string
	for _, name := range cfg.SourcesInUse() {
		out = append(out, NewExprFor(cfg, name).Fresh())
	}
	return out
}

// fleetLabelAlert fires for a server rota names whose exporter sends fresh data under another
// fleet label only: the fleet's targets labelled on one side and not the other (or with two
// values). rota's series of the server are joined on node alone to the exporter's series that
// no rota of their fleet names (so a correctly labelled fleet beside it, with a server of the
// same name, is not taken for the exporter), their fleet kept as exporter_fleet. A server
// without fresh data at all is RotaTelemetryMissing's. Where two fleets' unmatched exporters
// name one server, topk takes one of them: a join needs one series per node.
func fleetLabelAlert(cfg *config.Config) string {
	exporters := "group by (fleet, node) (\n  " + strings.Join(fresh(cfg), "\n  or ") + "\n)"
	rota := fmt.Sprintf("group by (fleet, node, pool) (%s)", FleetNodePowered)
	unmatched := fmt.Sprintf("label_replace(\n  %s\n  unless on (fleet, node) %s,\n  \"exporter_fleet\", \"$1\", %q, \"(.*)\"\n)",
		indent(exporters), FleetNodePowered, FleetLabel)
	return fmt.Sprintf("(\n  %s\n  unless on (fleet, node) %s\n)\n* on (node) group_left (exporter_fleet) topk by (node) (1,\n  group by (node, exporter_fleet) (\n    %s\n  )\n)",
		rota, indent(exporters), indent(indent(unmatched)))
}

// bootAlerts fire for a server stuck powering on or booting past its pool's boot timeout (one
// rule per pool, labelled with it, and one with the default timeout for pools the config does
// not name), and for a server rota marked failed. The boot is one spell from powering on to up:
// the state label is aggregated away (and rota's instance, once), so passing from powering_on
// to booting, or a leader handover, does not start the hold (for:) again.
func bootAlerts(pools []config.Pool, pass model.Duration) []Rule {
	stuck := func(matcher string, timeout model.Duration) Rule {
		return alert(AlertBootTimeout, "boot", "warning",
			once(fmt.Sprintf("%s{state=~\"powering_on|booting\"%s}", FleetNodeState, matcher), "node", "pool")+" == 1", timeout,
			"{{ $labels.node }} did not come up",
			fmt.Sprintf("{{ $labels.node }} has been powering on or booting for more than its boot timeout (%s).", timeout))
	}
	var names []string
	var out []Rule
	for _, pl := range pools {
		r := stuck(fmt.Sprintf(",pool=%q", pl.Name), pl.BootTimeout)
		r.Labels["pool"] = pl.Name // one rule per pool: the label tells them apart
		out = append(out, r)
		names = append(names, regexp.QuoteMeta(pl.Name))
	}
	other := ""
	if len(names) > 0 {
		other = fmt.Sprintf(",pool!~%q", strings.Join(names, "|"))
	}
	out = append(out, stuck(other, model.Duration(config.DefaultBootTimeout)))
	return append(out, alert(AlertFailed, "boot", "warning", failedAlert(), pass,
		"{{ $labels.node }} failed",
		"rota marked {{ $labels.node }} failed (it did not come up or a power action failed); it retries after a backoff."))
}

// failedAlert selects the servers rota marked failed, once each.
func failedAlert() string {
	return once(FleetNodeState+`{state="failed"}`, "node", "pool", "state") + " == 1"
}
