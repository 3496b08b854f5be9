package exporter

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/procfs"
)

// CPUCollector reports CPU seconds by mode, summed over all CPUs, and the CPU count, from
// /proc/stat; per-CPU series are opt-in. Utilisation over any window is then PromQL:
//
//	1 - sum(rate(rota_node_cpu_seconds_total{mode=~"idle|iowait"}[5m]))
//	  / sum(rate(rota_node_cpu_seconds_total[5m]))
type CPUCollector struct {
	fs      procfs.FS
	perCPU  bool
	seconds *prometheus.Desc
	cpus    *prometheus.Desc
	logical *prometheus.Desc
}

// NewCPUCollector reads /proc/stat under fs; perCPU adds one series per logical CPU and mode.
func NewCPUCollector(fs procfs.FS, perCPU bool) *CPUCollector {
	return &CPUCollector{
		fs:     fs,
		perCPU: perCPU,
		seconds: prometheus.NewDesc(prometheus.BuildFQName(namespace, "node", "cpu_seconds_total"),
			"Seconds all CPUs spent in each mode, summed over CPUs (guest time is inside user and nice).",
			[]string{"mode"}, nil),
		cpus: prometheus.NewDesc(prometheus.BuildFQName(namespace, "node", "cpus"),
			"Number of logical CPUs.", nil, nil),
		logical: prometheus.NewDesc(prometheus.BuildFQName(namespace, "node", "logical_cpu_seconds_total"),
			"Seconds each logical CPU spent in each mode (only with --collector.cpu.per-cpu).",
			[]string{"cpu", "mode"}, nil),
	}
}

// cpuMode is one mode's seconds.
type cpuMode struct {
	mode    string
	seconds float64
}

// cpuModes lists a CPUStat's modes. Guest and guest_nice are left out: the kernel already counts
// them inside user and nice, so summing every mode stays the CPU's total time.
func cpuModes(s procfs.CPUStat) [8]cpuMode {
	return [8]cpuMode{
		{"user", s.User}, {"nice", s.Nice}, {"system", s.System}, {"idle", s.Idle},
		{"iowait", s.Iowait}, {"irq", s.IRQ}, {"softirq", s.SoftIRQ}, {"steal", s.Steal},
	}
}

// Update implements Collector.
func (c *CPUCollector) Update(ch chan<- prometheus.Metric) error {
	st, err := c.fs.Stat()
	if err != nil {
		return fmt.Errorf("reading cpu statistics: %w", err)
	}
	if len(st.CPU) == 0 {
		return fmt.Errorf("reading cpu statistics: no per-cpu lines in stat")
	}
	for _, m := range cpuModes(st.CPUTotal) {
		ch <- prometheus.MustNewConstMetric(c.seconds, prometheus.CounterValue, m.seconds, m.mode)
	}
	ch <- prometheus.MustNewConstMetric(c.cpus, prometheus.GaugeValue, float64(len(st.CPU)))
	if !c.perCPU {
		return nil
	}
	ids := make([]int64, 0, len(st.CPU))
	for id := range st.CPU {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		cpu := strconv.FormatInt(id, 10)
		for _, m := range cpuModes(st.CPU[id]) {
			ch <- prometheus.MustNewConstMetric(c.logical, prometheus.CounterValue, m.seconds, cpu, m.mode)
		}
	}
	return nil
}
