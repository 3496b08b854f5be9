package alerts

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/scaler/config"
)

// Expr builds rota's PromQL from the config's windows and thresholds. Per-server expressions
// return one series per server with the labels node and pool.
//
// Window expressions (IdleMax, IdleSamples, ...) take a source expression: the rules pass a
// recorded series, the scaler the raw expression that series records; both are evaluated at the
// same resolution (the scrape interval), so they agree.
type Expr struct {
	// Step is the scrape interval: the resolution of window subqueries. Rate windows are 4x.
	Step   model.Duration
	Policy config.Policy
}

// NewExpr returns the builders for cfg.
func NewExpr(cfg *config.Config) Expr {
	return Expr{Step: cfg.Prometheus.ScrapeInterval, Policy: cfg.Policy}
}

// RateWindow is the range of rate(): four scrapes, so one failed scrape leaves a value.
func (e Expr) RateWindow() model.Duration { return 4 * e.Step }

const byNode = "by (node, pool)"

// CPUUtilization is each server's busy share of its CPUs (0..1): everything but idle and
// iowait, over the rate window. rate() absorbs a counter reset when the exporter restarts.
func (e Expr) CPUUtilization() string {
	w := e.RateWindow()
	return fmt.Sprintf("1 - sum %s (rate(%s{mode=~\"idle|iowait\"}[%s]))\n  / sum %s (rate(%s[%s]))",
		byNode, NodeCPUSeconds, w, byNode, NodeCPUSeconds, w)
}

// GPUUtilizationMax is the busiest GPU of each server (0..1).
func (e Expr) GPUUtilizationMax() string { return agg("max", GPUUtilization) }

// GPUUtilizationMean is the mean use of each server's GPUs (0..1).
func (e Expr) GPUUtilizationMean() string { return agg("avg", GPUUtilization) }

// GPUProcesses is the number of compute processes on each server's GPUs.
func (e Expr) GPUProcesses() string { return agg("sum", GPUProcesses) }

// GPUMemoryUsed is the GPU memory in use on each server, in bytes.
func (e Expr) GPUMemoryUsed() string { return agg("sum", GPUMemoryUsed) }

// GPUMemoryRatio is the share of each server's GPU memory in use.
func (e Expr) GPUMemoryRatio() string {
	return agg("sum", GPUMemoryUsed) + " / " + agg("sum", GPUMemoryTotal)
}

// NewestSample is the time (Unix seconds) of each server's newest exporter sample.
func (e Expr) NewestSample() string {
	return fmt.Sprintf("max %s (timestamp(%s))", byNode, NodeCPUs)
}

// ExporterNewestSample is, for one server, the time (Unix seconds) of its newest CPU counter
// sample while Prometheus scrapes its exporter successfully (up is 1); no series when the
// target is down or unknown. The scaler's readiness check after a boot compares it with
// policy.telemetry.max_age.
func (e Expr) ExporterNewestSample(node string) string {
	sel := fmt.Sprintf("{node=%q}", node)
	return fmt.Sprintf("max %s (timestamp(%s%s))\n  and on (node, pool) (up%s == 1)", byNode, NodeCPUSeconds, sel, sel)
}

// CollectorsFailing counts each server's failing collectors, for servers with at least one. A
// GPU collector that fails on a server reporting no GPUs (no NVML library: a CPU server) does
// not count.
func (e Expr) CollectorsFailing() string {
	return fmt.Sprintf("count %s (\n  %s{collector!=\"gpu\"} == 0\n  or (%s{collector=\"gpu\"} == 0 and on (node) %s > 0)\n)",
		byNode, CollectorSuccess, CollectorSuccess, GPUDevices)
}

// GPUDevices is the number of GPUs each server reports (0 without an NVML library).
func (e Expr) GPUDevices() string { return agg("max", GPUDevices) }

// GPUsUnread is, per server, how many of the GPUs it reports have no utilisation reading (a GPU
// lost from NVML); 0 when all are read.
func (e Expr) GPUsUnread() string {
	devices := e.GPUDevices()
	return fmt.Sprintf("%s\n  - (count %s (%s) or %s * 0)", devices, byNode, GPUUtilization, devices)
}

// IdleMax is the highest value of src over the idle window.
func (e Expr) IdleMax(src string) string {
	return overTime("max", src, e.Policy.Idle.Window, e.Step)
}

// IdleSamples counts the steps of the idle window at which src had a value.
func (e Expr) IdleSamples(src string) string {
	return overTime("count", src, e.Policy.Idle.Window, e.Step)
}

// IdleSteps is the count IdleSamples gives when src covers the whole idle window.
func (e Expr) IdleSteps() int { return steps(e.Policy.Idle.Window, e.Step) }

// UnderuseMean is the mean of src over the underuse window.
func (e Expr) UnderuseMean(src string) string {
	return overTime("avg", src, e.Policy.Underuse.Window, e.Step)
}

// UnderuseSamples counts the steps of the underuse window at which src had a value.
func (e Expr) UnderuseSamples(src string) string {
	return overTime("count", src, e.Policy.Underuse.Window, e.Step)
}

// UnderuseSteps is the count UnderuseSamples gives when src covers the whole underuse window.
func (e Expr) UnderuseSteps() int { return steps(e.Policy.Underuse.Window, e.Step) }

// Fresh selects the servers with at least one exporter sample within the telemetry max age.
func (e Expr) Fresh() string {
	return fmt.Sprintf("count_over_time(%s[%s])", NodeCPUs, e.Policy.Telemetry.MaxAge)
}

func agg(op, metric string) string { return fmt.Sprintf("%s %s (%s)", op, byNode, metric) }

// overTime is op_over_time of a subquery of src at step resolution. Subquery steps are aligned
// to multiples of step and the range excludes its start, so a series present throughout gives
// exactly window/step points: a count below that means missing or partial data.
func overTime(op, src string, window, step model.Duration) string {
	if strings.ContainsAny(src, " ()") {
		src = "(" + indent(src) + ")"
	}
	return fmt.Sprintf("%s_over_time(%s[%s:%s])", op, src, window, step)
}

func steps(window, step model.Duration) int {
	if step <= 0 {
		return 0
	}
	return int(window / step)
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n  ") }

// num formats a threshold the shortest way that reads back exactly.
func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
