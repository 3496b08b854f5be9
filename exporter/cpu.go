package exporter

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// CPUCollector reports CPU seconds by mode, summed over all CPUs, and the CPU count, from
// /proc/stat; per-CPU series are opt-in. Utilisation over any window is then PromQL:
//
//	1 - sum(rate(rota_node_cpu_seconds_total{mode=~"idle|iowait"}[5m]))
//	  / sum(rate(rota_node_cpu_seconds_total[5m]))
//
// The counters it publishes never go backwards, though the kernel's may (see cpuCounters):
// a drop would read as a counter reset and make a busy server look idle.
type CPUCollector struct {
	stat    string // path of /proc/stat
	perCPU  bool
	now     func() time.Time
	seconds *prometheus.Desc
	cpus    *prometheus.Desc
	logical *prometheus.Desc

	mu       sync.Mutex // held over a read and its update, so reads apply in the order taken
	counters cpuCounters
}

// NewCPUCollector reads stat under the procfs mount point procFS (parseCPUStat), at the times
// now gives (which bound the idle time a CPU can gain between reads); perCPU adds one series per
// logical CPU and mode.
func NewCPUCollector(procFS string, perCPU bool, now func() time.Time) *CPUCollector {
	return &CPUCollector{
		stat:   filepath.Join(procFS, "stat"),
		perCPU: perCPU,
		now:    now,
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

// Update implements Collector.
func (c *CPUCollector) Update(ch chan<- prometheus.Metric) error {
	total, ids, perCPU, err := c.read()
	if err != nil {
		return err
	}
	for m, v := range total {
		ch <- prometheus.MustNewConstMetric(c.seconds, prometheus.CounterValue, v, cpuModeNames[m])
	}
	ch <- prometheus.MustNewConstMetric(c.cpus, prometheus.GaugeValue, float64(len(ids)))
	if !c.perCPU {
		return nil
	}
	for i, id := range ids {
		cpu := strconv.FormatInt(id, 10)
		for m, v := range perCPU[i] {
			ch <- prometheus.MustNewConstMetric(c.logical, prometheus.CounterValue, v, cpu, cpuModeNames[m])
		}
	}
	return nil
}

// read takes one reading of /proc/stat into the counters and returns what to publish: the
// summed counters and, per online CPU (by id), its own.
func (c *CPUCollector) read() (cpuValues, []int64, []cpuValues, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := c.now()
	b, err := os.ReadFile(c.stat)
	if err != nil {
		return cpuValues{}, nil, nil, fmt.Errorf("reading cpu statistics: %w", err)
	}
	total, cpus, err := parseCPUStat(b)
	if err != nil {
		return cpuValues{}, nil, nil, fmt.Errorf("reading cpu statistics: %w", err)
	}
	if len(cpus) == 0 {
		return cpuValues{}, nil, nil, fmt.Errorf("reading cpu statistics: %w: no per-cpu lines in stat", errMalformed)
	}
	c.counters.update(total, cpus, at)
	ids, perCPU := c.counters.onlineCPUs()
	return c.counters.total, ids, perCPU, nil
}
