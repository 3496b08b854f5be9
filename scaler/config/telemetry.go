package config

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"

	"github.com/rotahq/rota/internal/errtext"
)

// RotaExporter is the built-in telemetry source: rota-exporter on every server, scraped with
// the target labels node and pool (rotactl inventory targets). A pool that names no source
// uses it.
const RotaExporter = "rota-exporter"

// The GPU busy signals policy.gpu_signal chooses from.
const (
	// SignalAuto is SM activity on the GPUs that report it, utilisation on the others.
	SignalAuto = "auto"
	// SignalUtilization is the share of time any kernel ran (it reads 100% for a job stuck in
	// a collective, so it says little about how busy a GPU is).
	SignalUtilization = "utilization"
	// SignalSMActive is the share of SM cycles with work resident (NVML GPM on Hopper and
	// later, DCGM_FI_PROF_SM_ACTIVE); a GPU without it has no busy reading.
	SignalSMActive = "sm_active"
)

// TelemetrySource is telemetry a fleet already has instead of rota-exporter: node_exporter for
// the CPUs and dcgm-exporter for the GPUs. Each names its series (the defaults are the
// exporters' own names, in their own units) and the label that holds the server's name.
type TelemetrySource struct {
	Name         string             `yaml:"name"`
	NodeExporter NodeExporterSeries `yaml:"node_exporter"`
	DCGM         DCGMSeries         `yaml:"dcgm_exporter"`
}

// NodeLabel says how a source's series name their server: the value of Label, or the first
// group of Regex (anchored at both ends, as in relabelling) matched against it.
type NodeLabel struct {
	Label string `yaml:"node_label"`
	Regex string `yaml:"node_regex"`
}

// NodeExporterSeries are node_exporter's series rota reads.
type NodeExporterSeries struct {
	NodeLabel `yaml:",inline"`
	// CPUSeconds is the per-CPU, per-mode counter (node_cpu_seconds_total).
	CPUSeconds string `yaml:"cpu_seconds"`
}

// DCGMSeries are dcgm-exporter's series rota reads, one series per GPU each (label gpu).
type DCGMSeries struct {
	NodeLabel `yaml:",inline"`
	// Utilization is in percent (DCGM_FI_DEV_GPU_UTIL).
	Utilization string `yaml:"utilization"`
	// SMActive is a ratio (DCGM_FI_PROF_SM_ACTIVE, a profiling field dcgm-exporter must be
	// told to collect).
	SMActive string `yaml:"sm_active"`
	// MemoryUsed and MemoryFree are in MiB (DCGM_FI_DEV_FB_USED, DCGM_FI_DEV_FB_FREE).
	MemoryUsed string `yaml:"memory_used"`
	MemoryFree string `yaml:"memory_free"`
	// Processes counts compute processes per GPU; dcgm-exporter has no such field by default,
	// so it is empty (none) unless a fleet exports one.
	Processes string `yaml:"processes"`
	// Power is each GPU's draw in watts (DCGM_FI_DEV_POWER_USAGE), for the books.
	Power string `yaml:"power"`
}

// DefaultNodeRegex takes the host part of host:port (node_exporter's instance label) or a
// plain host name.
const DefaultNodeRegex = `([^:]+)(?::[0-9]+)?`

func (s *TelemetrySource) applyDefaults() {
	ne, d := &s.NodeExporter, &s.DCGM
	setString(&ne.Label, "instance")
	setString(&ne.Regex, DefaultNodeRegex)
	setString(&ne.CPUSeconds, "node_cpu_seconds_total")
	setString(&d.Label, "Hostname")
	setString(&d.Regex, DefaultNodeRegex)
	setString(&d.Utilization, "DCGM_FI_DEV_GPU_UTIL")
	setString(&d.SMActive, "DCGM_FI_PROF_SM_ACTIVE")
	setString(&d.MemoryUsed, "DCGM_FI_DEV_FB_USED")
	setString(&d.MemoryFree, "DCGM_FI_DEV_FB_FREE")
	setString(&d.Power, "DCGM_FI_DEV_POWER_USAGE")
}

// Source is the name of the telemetry source the pool reads; a pool built without defaults
// (in Go, not from a file) reads rota-exporter.
func (p *Pool) Source() string {
	if p.TelemetrySource == "" {
		return RotaExporter
	}
	return p.TelemetrySource
}

// TelemetrySource returns the source named name, or nil (also for RotaExporter, which has no
// settings).
func (c *Config) TelemetrySource(name string) *TelemetrySource {
	for i := range c.TelemetrySources {
		if c.TelemetrySources[i].Name == name {
			return &c.TelemetrySources[i]
		}
	}
	return nil
}

// SourcesInUse lists the telemetry sources the pools use, RotaExporter first when any pool
// (or none: the rules of a config without pools) uses it, then the others in config order.
func (c *Config) SourcesInUse() []string {
	used := map[string]bool{}
	for i := range c.Pools {
		used[c.Pools[i].Source()] = true
	}
	var out []string
	if len(c.Pools) == 0 || used[RotaExporter] {
		out = append(out, RotaExporter)
	}
	for _, s := range c.TelemetrySources {
		if used[s.Name] {
			out = append(out, s.Name)
		}
	}
	return out
}

// PoolsOf lists the names of the pools that use the telemetry source.
func (c *Config) PoolsOf(source string) []string {
	var out []string
	for i := range c.Pools {
		if c.Pools[i].Source() == source {
			out = append(out, c.Pools[i].Name)
		}
	}
	return out
}

var (
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
)

func (c *Config) validateTelemetry(p *problems) {
	switch c.Policy.GPUSignal {
	case SignalAuto, SignalUtilization, SignalSMActive:
	default:
		p.add("policy.gpu_signal", "%s is not one of %s, %s, %s", errtext.Quote(c.Policy.GPUSignal), SignalAuto, SignalUtilization, SignalSMActive)
	}
	names := map[string]bool{}
	for i := range c.TelemetrySources {
		s := &c.TelemetrySources[i]
		path := fmt.Sprintf("telemetry_sources[%d]", i)
		switch {
		case !IsName(s.Name):
			p.add(path+".name", "%s is not a name (%s)", errtext.Quote(s.Name), nameRule)
		case s.Name == RotaExporter:
			p.add(path+".name", "%s is the built-in source; pick another name", errtext.Quote(s.Name))
		case names[s.Name]:
			p.add(path+".name", "%s is used twice", errtext.Quote(s.Name))
		}
		names[s.Name] = true
		nodeLabel(p, path+".node_exporter", s.NodeExporter.NodeLabel)
		nodeLabel(p, path+".dcgm_exporter", s.DCGM.NodeLabel)
		d := s.DCGM
		for _, f := range []struct{ key, v string }{
			{"node_exporter.cpu_seconds", s.NodeExporter.CPUSeconds},
			{"dcgm_exporter.utilization", d.Utilization}, {"dcgm_exporter.sm_active", d.SMActive},
			{"dcgm_exporter.memory_used", d.MemoryUsed}, {"dcgm_exporter.memory_free", d.MemoryFree},
			{"dcgm_exporter.processes", d.Processes}, {"dcgm_exporter.power", d.Power},
		} {
			if f.v != "" && !metricName.MatchString(f.v) {
				p.add(path+"."+f.key, "%s is not a metric name", errtext.Quote(f.v))
			}
		}
	}
	for i := range c.Pools {
		if src := c.Pools[i].Source(); src != RotaExporter && !names[src] {
			p.add(fmt.Sprintf("pools[%d].telemetry_source", i), "no telemetry source named %s (the built-in one is %s)", errtext.Quote(src), RotaExporter)
		}
	}
}

// anchor anchors a regex at both ends, as Prometheus anchors label_replace's.
func anchor(re string) string { return "^(?:" + re + ")$" }

func nodeLabel(p *problems, path string, l NodeLabel) {
	if !labelName.MatchString(l.Label) {
		p.add(path+".node_label", "%s is not a label name", errtext.Quote(l.Label))
	}
	re, err := regexp.Compile(anchor(l.Regex))
	var syn *syntax.Error
	switch {
	case errors.As(err, &syn):
		// The error holds the expression it could not read, which may be the whole regex.
		p.add(path+".node_regex", "does not compile: %s: %s", syn.Code, errtext.Quote(syn.Expr))
	case err != nil:
		p.add(path+".node_regex", "does not compile: %s", errtext.Cut(err.Error(), errtext.Max))
	case re.NumSubexp() < 1:
		p.add(path+".node_regex", "%s has no group to take the node name from", errtext.Quote(l.Regex))
	}
}
