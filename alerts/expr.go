package alerts

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/scaler/config"
)

// Expr builds rota's PromQL for one telemetry source from the config's windows and thresholds.
// Per-server expressions return one series per server with the labels fleet and node (and
// pool, for rota-exporter, whose series carry it): several fleets in one Prometheus, each
// target labelled with its fleet, keep apart even where their servers' names are the same.
//
// Window expressions (IdleMax, IdleSamples, ...) take a per-server expression over the raw
// series (CPUUtilization, GPUBusyMax, ...), which the rules and the scaler both pass: a subquery
// evaluates it at every step of the window (the scrape interval) against the raw samples, so a
// window sees every scrape and every gap whatever Prometheus' evaluation interval. A recorded
// series would do only when the rules are evaluated at every scrape: it has points at the
// evaluations alone, and a window over it misses what happened between them.
type Expr struct {
	// Step is the scrape interval: the resolution of window subqueries. Rate windows are 4x.
	Step   model.Duration
	Policy config.Policy
	src    source
}

// NewExpr returns the builders for cfg's rota-exporter pools.
func NewExpr(cfg *config.Config) Expr { return NewExprFor(cfg, config.RotaExporter) }

// NewExprFor returns the builders for the pools of cfg that read the named telemetry source.
func NewExprFor(cfg *config.Config, source string) Expr {
	return Expr{Step: cfg.Prometheus.ScrapeInterval, Policy: cfg.Policy, src: newSource(cfg, source)}
}

// InFleet returns the builders with fleet="NAME" in every selector, so their answers are the
// named fleet's alone (the scaler's prometheus.fleet); empty selects no fleet. The rules do
// not take it: they keep every fleet apart by the label.
func (e Expr) InFleet(name string) Expr {
	e.src.fleet = name
	return e
}

// Source is the name of the telemetry source the expressions read.
func (e Expr) Source() string { return e.src.name }

// RateWindow is the range of rate(): four scrapes, so one failed scrape leaves a value.
func (e Expr) RateWindow() model.Duration { return 4 * e.Step }

const byNode = "by (fleet, node, pool)"

// CPUUtilization is each server's busy share of its CPUs (0..1): everything but idle and
// iowait, over the rate window. rate() absorbs a counter reset when the exporter restarts.
// Counters that did not move at all over the rate window (an exporter serving the same values
// again) are no reading: the share would be 0/0, NaN, which a window's max passes over.
// The busy modes' rate is divided by all modes', not subtracted from 1 as idle's share: 1 - 0.8
// is 0.19999999999999996 in floating point, so a server exactly at a threshold of 0.2 (or 0.1)
// read under it, idle.
//
// It has a value only where the server was scraped at this step and at the step before: rate()
// alone bridges a missed scrape or two from the samples around them (a range keeps no stale
// marker), so a window counting its values would count the gap as covered. With the check, a
// missed scrape is a missed step, and so is the first scrape after it (its interval spans the
// gap), as after a start.
func (e Expr) CPUUtilization() string {
	s, w := e.src, e.RateWindow()
	rate := func(matchers ...string) string {
		return s.cpu(fmt.Sprintf("rate(%s[%s])", s.sel(s.cpuSeconds(), matchers...), w))
	}
	return fmt.Sprintf("(\n  sum %s (%s)\n    / (sum %s (%s) > 0)\n)\nand on (fleet, node) %s\nand on (fleet, node) %s",
		s.by(), rate(`mode!~"idle|iowait"`), s.by(), rate(), e.cpuSample(""), e.cpuSample(" offset "+e.Step.String()))
}

// cpuSample is the CPU counters rate() reads, as an instant selector (a failed scrape's stale
// marker ends it at once), offset by the modifier given. node_exporter's are taken in mode idle
// alone, which every CPU has: one series per CPU, not one per CPU and mode.
func (e Expr) cpuSample(offset string) string {
	s := e.src
	if s.ext == nil {
		return s.sel(s.cpuSeconds()) + offset
	}
	return s.cpu(s.sel(s.cpuSeconds(), `mode="idle"`) + offset)
}

// CPUs is the number of CPUs each server reports now. A scrape that fails ends it at once
// (Prometheus marks the series stale), unlike rates, which find samples for a while after.
// node_exporter's CPUs are counted once each (group by cpu): a second scrape job of it, or
// its target under another instance naming the same host, adds none.
func (e Expr) CPUs() string {
	s := e.src
	if s.ext == nil {
		return agg("max", s.sel(NodeCPUs))
	}
	return fmt.Sprintf("count by (fleet, node) (group by (fleet, node, cpu) (%s))", s.cpu(s.sel(s.cpuSeconds(), `mode="idle"`)))
}

// NewestSample is the time (Unix seconds) of each server's newest CPU sample.
func (e Expr) NewestSample() string {
	s := e.src
	if s.ext == nil {
		return fmt.Sprintf("max %s (timestamp(%s))", byNode, s.sel(NodeCPUs))
	}
	return fmt.Sprintf("max by (fleet, node) (%s)", s.cpu(fmt.Sprintf("timestamp(%s)", s.sel(s.cpuSeconds(), `mode="idle"`))))
}

// ExporterNewestSample is, for one server, the time (Unix seconds) of its newest CPU sample
// while Prometheus scrapes its exporter; no series when the target is down or unknown. The
// scaler's readiness check after a boot compares it with policy.telemetry.max_age. For
// rota-exporter it asks that up is 1; an external source's series name the server in a label
// of their own, so the answer has every server's newest sample (a failed scrape marks the
// series stale, so a down target has none) and the caller picks the server.
func (e Expr) ExporterNewestSample(node string) string {
	if e.src.ext != nil {
		return e.NewestSample()
	}
	sel := fmt.Sprintf("node=%q", node)
	return fmt.Sprintf("max %s (timestamp(%s))\n  and on (fleet, node, pool) (%s == 1)", byNode, e.src.selector(NodeCPUSeconds, sel), e.src.selector("up", sel))
}

// Fresh selects the servers with a CPU sample within the telemetry max age. It reads the raw
// series, not a recorded one: a recorded series would live on for Prometheus's lookback (5m)
// after samples stop without a stale marker (federation, remote read).
func (e Expr) Fresh() string {
	s, age := e.src, e.Policy.Telemetry.MaxAge
	if s.ext == nil {
		return fmt.Sprintf("count_over_time(%s[%s])", s.sel(NodeCPUs), age)
	}
	return fmt.Sprintf("count by (fleet, node) (%s)", s.cpu(fmt.Sprintf("count_over_time(%s[%s])", s.sel(s.cpuSeconds(), `mode="idle"`), age)))
}

// GPUUtilizationMax is the busiest GPU of each server by utilisation (0..1).
func (e Expr) GPUUtilizationMax() string { return e.agg("max", e.src.gpuUtilization()) }

// GPUUtilizationMean is the mean utilisation of each server's GPUs (0..1).
func (e Expr) GPUUtilizationMean() string { return e.agg("avg", e.src.gpuUtilization()) }

// GPUBusyMax is the busiest GPU of each server by the policy's busy signal (0..1).
func (e Expr) GPUBusyMax() string { return e.agg("max", e.src.gpuBusy()) }

// GPUBusyMean is the mean busy signal of each server's GPUs (0..1).
func (e Expr) GPUBusyMean() string { return e.agg("avg", e.src.gpuBusy()) }

// GPUBusyCount is how many of each server's GPUs have a busy reading now.
func (e Expr) GPUBusyCount() string { return e.agg("count", e.src.gpuBusy()) }

// GPUPower is the power drawn by each server's GPUs, in watts, and GPUPowerCount how many of
// its GPUs have a reading (the books take the sum only when every GPU the pool declares has
// one).
func (e Expr) GPUPower() string      { return e.agg("sum", e.src.gpuPower()) }
func (e Expr) GPUPowerCount() string { return e.agg("count", e.src.gpuPower()) }

// GPUProcesses is the number of compute processes on each server's GPUs; empty when the
// source has no process count.
func (e Expr) GPUProcesses() string {
	if p := e.src.gpuProcesses(); p != "" {
		return e.agg("sum", p)
	}
	return ""
}

// GPUMemoryUsed is the GPU memory in use on each server, in bytes.
func (e Expr) GPUMemoryUsed() string { return e.agg("sum", e.src.gpuMemoryUsed()) }

// GPUMemoryRatio is the share of each server's GPU memory in use.
func (e Expr) GPUMemoryRatio() string {
	return e.agg("sum", e.src.gpuMemoryUsed()) + "\n  / " + e.agg("sum", e.src.gpuMemoryTotal())
}

// CollectorsFailing counts each server's failing rota-exporter collectors other than the GPU
// collector, for servers with at least one.
func (e Expr) CollectorsFailing() string {
	return fmt.Sprintf("count %s (%s == 0)", byNode, e.src.sel(CollectorSuccess, `collector!="gpu"`))
}

// GPUCollectorFailing is 1 for each server whose rota-exporter GPU collector fails (NVML did
// not start: rota_gpu_devices is then 0). That is missing data on a server whose pool
// declares GPUs or that reports some, and nothing on a CPU server without an NVML library.
func (e Expr) GPUCollectorFailing() string {
	return fmt.Sprintf("count %s (%s == 0)", byNode, e.src.sel(CollectorSuccess, `collector="gpu"`))
}

// GPUDevices is the number of GPUs each server's rota-exporter reports (0 without NVML).
func (e Expr) GPUDevices() string { return agg("max", e.src.sel(GPUDevices)) }

// GPUsUnread is, per server, how many of the GPUs its rota-exporter reports have no busy
// reading (a GPU lost from NVML); 0 when all are read. busyCount is the per-server count of
// GPUs with a reading (GPUBusyCount, or its recorded series).
func (e Expr) GPUsUnread(busyCount string) string {
	devices := e.GPUDevices()
	return fmt.Sprintf("%s\n  - (%s or %s * 0)", devices, busyCount, devices)
}

// IdleMax is the highest value of src over the idle window.
func (e Expr) IdleMax(src string) string {
	return overTime("max", src, e.Policy.Idle.Window, e.Step)
}

// IdleMin is the lowest value of src over the idle window.
func (e Expr) IdleMin(src string) string {
	return overTime("min", src, e.Policy.Idle.Window, e.Step)
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

// UnderuseMin is the lowest value of src over the underuse window.
func (e Expr) UnderuseMin(src string) string {
	return overTime("min", src, e.Policy.Underuse.Window, e.Step)
}

// UnderuseSamples counts the steps of the underuse window at which src had a value.
func (e Expr) UnderuseSamples(src string) string {
	return overTime("count", src, e.Policy.Underuse.Window, e.Step)
}

// UnderuseSteps is the count UnderuseSamples gives when src covers the whole underuse window.
func (e Expr) UnderuseSteps() int { return steps(e.Policy.Underuse.Window, e.Step) }

// Mapped lists the series the source's mapping names (none for rota-exporter); gpus says
// whether a pool reading the source has GPUs.
func (e Expr) Mapped(gpus bool) []Mapped { return e.src.mapped(gpus) }

// SeriesPresent answers one series per server-naming series of m in Prometheus: none means
// the mapping names a series Prometheus does not have (unknown telemetry).
func (e Expr) SeriesPresent(m Mapped) string {
	return fmt.Sprintf("count(%s)", e.src.selector(m.Metric, fmt.Sprintf("%s!=\"\"", m.Label)))
}

// agg aggregates a per-GPU expression per server.
func (e Expr) agg(op, perGPU string) string {
	return fmt.Sprintf("%s %s (%s)", op, e.src.by(), perGPU)
}

func agg(op, metric string) string { return fmt.Sprintf("%s %s (%s)", op, byNode, metric) }

// overTime is op_over_time of a subquery of src at step resolution. Subquery steps are aligned
// to multiples of step and the range excludes its start, so a series present throughout gives
// exactly window/step points: a count below that means missing or partial data.
func overTime(op, src string, window, step model.Duration) string {
	switch {
	case strings.Contains(src, "\n"):
		src = "(\n  " + indent(src) + "\n)"
	case strings.ContainsAny(src, " ()"):
		src = "(" + src + ")"
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
