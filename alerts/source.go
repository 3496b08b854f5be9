package alerts

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/scaler/config"
)

// source is where one set of pools reads its telemetry: rota-exporter, whose series carry the
// target labels node and pool, or a fleet's node_exporter and dcgm-exporter, whose series name
// their server in a label of their own that label_replace copies into node.
type source struct {
	name   string
	signal string
	// ext is nil for rota-exporter.
	ext *config.TelemetrySource
	// pools are the pools reading this source, for the rules of an external source (the
	// rules join the pool label on from rota's own fleet series); others are the pools
	// reading another source, which rota-exporter's selectors leave out.
	pools, others []string
	// fleet, where set (the scaler's prometheus.fleet), is the value of the target label
	// fleet every selector asks for; the rules leave it empty and keep every fleet apart.
	fleet string
}

func newSource(cfg *config.Config, name string) source {
	s := source{name: name, signal: cfg.Policy.GPUSignal, ext: cfg.TelemetrySource(name), pools: cfg.PoolsOf(name)}
	for i := range cfg.Pools {
		if cfg.Pools[i].Source() != name {
			s.others = append(s.others, cfg.Pools[i].Name)
		}
	}
	return s
}

// by is the grouping of per-server aggregations.
func (s source) by() string {
	if s.ext == nil {
		return byNode
	}
	return "by (fleet, node)"
}

// sel selects metric with the matchers given; rota-exporter's selectors leave out the pools of
// other sources, so two sources never record the same server twice.
func (s source) sel(metric string, matchers ...string) string {
	if s.ext == nil && len(s.others) > 0 {
		matchers = append(matchers, fmt.Sprintf("pool!~%q", quoteAll(s.others)))
	}
	return s.selector(metric, matchers...)
}

// selector is metric with the matchers given, in the source's fleet (Selector): every selector
// of the expressions is built here, so none reads another fleet.
func (s source) selector(metric string, matchers ...string) string {
	return Selector(s.fleet, metric, matchers...)
}

// Selector is metric with the matchers given, and fleet="NAME" first where fleet is set (the
// scaler's prometheus.fleet): every query rota and rotactl send selects through it, so none
// reads another fleet; empty selects no fleet.
func Selector(fleet, metric string, matchers ...string) string {
	if fleet != "" {
		matchers = append([]string{fmt.Sprintf("%s=%q", FleetLabel, fleet)}, matchers...)
	}
	if len(matchers) == 0 {
		return metric
	}
	return metric + "{" + strings.Join(matchers, ",") + "}"
}

// relabel copies the server's name from the source's own label into node.
func relabel(expr string, l config.NodeLabel) string {
	return fmt.Sprintf("label_replace(%s, \"node\", \"$1\", %q, %q)", expr, l.Label, l.Regex)
}

// cpu wraps an expression over node_exporter's series so it carries node.
func (s source) cpu(expr string) string {
	if s.ext == nil {
		return expr
	}
	return relabel(expr, s.ext.NodeExporter.NodeLabel)
}

// cpuSeconds is the per-CPU, per-mode counter.
func (s source) cpuSeconds() string {
	if s.ext == nil {
		return NodeCPUSeconds
	}
	return s.ext.NodeExporter.CPUSeconds
}

// gpu is one reading per GPU of metric (label gpu), scaled to rota's unit. Each GPU's series
// are taken once (a second scrape job of the same exporter, or its target again under another
// instance, adds nothing: counted twice, one GPU's readings would stand for another's that has
// none), and only readings of zero or more count (NaN, -Inf or a negative value is no reading,
// so a GPU reading garbage is a GPU without readings, never an idle one).
func (s source) gpu(metric string, scale string) string {
	out := fmt.Sprintf("max by (fleet, node, pool, gpu) (%s >= 0)", s.sel(metric))
	if s.ext != nil {
		out = fmt.Sprintf("max by (fleet, node, gpu) (%s >= 0)", relabel(s.selector(metric), s.ext.DCGM.NodeLabel))
	}
	if scale != "" {
		out += " " + scale
	}
	return out
}

// gpuUtilization is each GPU's utilisation (0..1).
func (s source) gpuUtilization() string {
	if s.ext == nil {
		return s.gpu(GPUUtilization, "")
	}
	return s.gpu(s.ext.DCGM.Utilization, "/ 100")
}

// gpuSMActive is each GPU's SM activity (0..1).
func (s source) gpuSMActive() string {
	if s.ext == nil {
		return s.gpu(GPUSMActive, "")
	}
	return s.gpu(s.ext.DCGM.SMActive, "")
}

// gpuBusy is each GPU's busy signal as the policy chooses it. Under auto, a GPU that reports
// SM activity is judged by it, any other by its utilisation (the series of one GPU match on
// every label, so "or" takes one per GPU).
func (s source) gpuBusy() string {
	switch s.signal {
	case config.SignalUtilization:
		return s.gpuUtilization()
	case config.SignalSMActive:
		return s.gpuSMActive()
	}
	return paren(s.gpuSMActive()) + " or " + paren(s.gpuUtilization())
}

// gpuMemoryUsed and gpuMemoryTotal are each GPU's memory in bytes (dcgm-exporter: MiB, and
// the total is used plus free).
func (s source) gpuMemoryUsed() string {
	if s.ext == nil {
		return s.gpu(GPUMemoryUsed, "")
	}
	return s.gpu(s.ext.DCGM.MemoryUsed, "* 1048576")
}

func (s source) gpuMemoryTotal() string {
	if s.ext == nil {
		return s.gpu(GPUMemoryTotal, "")
	}
	return fmt.Sprintf("(%s + %s) * 1048576", s.gpu(s.ext.DCGM.MemoryUsed, ""), s.gpu(s.ext.DCGM.MemoryFree, ""))
}

// gpuPower is each GPU's power draw in watts.
func (s source) gpuPower() string {
	if s.ext == nil {
		return s.gpu(GPUPower, "")
	}
	return s.gpu(s.ext.DCGM.Power, "")
}

// gpuProcesses is each GPU's compute processes; empty when the source has none.
func (s source) gpuProcesses() string {
	if s.ext == nil {
		return s.gpu(GPUProcesses, "")
	}
	if s.ext.DCGM.Processes == "" {
		return ""
	}
	return s.gpu(s.ext.DCGM.Processes, "")
}

// withPool gives a per-server expression of an external source the label pool, from rota's
// fleet series of the same fleet, keeping only the servers of the pools that read the source. rota-exporter's
// series have pool from their target labels already.
//
// The fleet series is taken once per server and pool (max by), as during a leader handover two
// rotas (apart by instance) both send it, and the join needs one. Where rota's own scrape has
// no sample now (one missed scrape: a stale marker), its newest sample within hold is taken,
// so a window evaluating expr at every step does not lose the server for rota's gap.
func (s source) withPool(expr string, hold model.Duration) string {
	if s.ext == nil {
		return expr
	}
	sel := s.selector(FleetNodeGPUs, fmt.Sprintf("pool=~%q", quoteAll(s.pools)))
	return fmt.Sprintf("(\n  %s\n)\n* on (fleet, node) group_left (pool) (\n  0 * (%s or on (fleet, node) %s) + 1\n)",
		indent(expr), once(sel, "node", "pool"), once(fmt.Sprintf("last_over_time(%s[%s])", sel, hold), "node", "pool"))
}

// Mapped is one series an external source's mapping names.
type Mapped struct {
	// What the series carries (cpu, gpu utilisation, ...), its metric name and the label
	// that must name the server.
	What, Metric, Label string
	// GPU: only the servers of pools with GPUs need it.
	GPU bool
	// Blocking: while the series is absent, the servers of the source's pools have no data
	// (never idle). The others are reported only: a busy signal the policy can do without
	// (under auto, a GPU without SM activity is judged by its utilisation, and one without
	// either has no reading, which coverage catches), GPU memory (read by no decision).
	Blocking bool
}

// mapped lists the series the source's mapping names; gpus says whether a pool reading it
// has GPUs (else its GPU series are not needed). rota-exporter names none: its missing series
// are missing data, caught server by server.
func (s source) mapped(gpus bool) []Mapped {
	if s.ext == nil {
		return nil
	}
	ne, d := s.ext.NodeExporter, s.ext.DCGM
	out := []Mapped{{What: "cpu", Metric: ne.CPUSeconds, Label: ne.Label, Blocking: true}}
	if !gpus {
		return out
	}
	out = append(out,
		Mapped{"gpu utilisation", d.Utilization, d.Label, true, s.signal == config.SignalUtilization},
		Mapped{"gpu sm activity", d.SMActive, d.Label, true, s.signal == config.SignalSMActive},
		Mapped{"gpu memory used", d.MemoryUsed, d.Label, true, false},
		Mapped{"gpu memory free", d.MemoryFree, d.Label, true, false})
	if d.Processes != "" {
		// Absent, the process count would read as none: a server with work would look empty.
		out = append(out, Mapped{"gpu processes", d.Processes, d.Label, true, true})
	}
	return out
}

// paren brackets an expression that is more than a selector.
func paren(expr string) string {
	if strings.Contains(expr, " ") {
		return "(" + expr + ")"
	}
	return expr
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = regexp.QuoteMeta(n)
	}
	return strings.Join(q, "|")
}
