package exporter

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/procfs"
)

// ErrMissingField is returned when a source file lacks a field a collector needs.
var ErrMissingField = errors.New("field missing")

// MemoryCollector reports total and available memory from /proc/meminfo. MemAvailable is the
// kernel's estimate of what new work can use without swapping (Linux 3.14 and later).
type MemoryCollector struct {
	fs        procfs.FS
	total     *prometheus.Desc
	available *prometheus.Desc
}

// NewMemoryCollector reads /proc/meminfo under fs.
func NewMemoryCollector(fs procfs.FS) *MemoryCollector {
	return &MemoryCollector{
		fs: fs,
		total: prometheus.NewDesc(prometheus.BuildFQName(namespace, "node", "memory_total_bytes"),
			"Physical memory (MemTotal).", nil, nil),
		available: prometheus.NewDesc(prometheus.BuildFQName(namespace, "node", "memory_available_bytes"),
			"Memory available for new work without swapping (MemAvailable).", nil, nil),
	}
}

// Update implements Collector.
func (c *MemoryCollector) Update(ch chan<- prometheus.Metric) error {
	mi, err := c.fs.Meminfo()
	if err != nil {
		return fmt.Errorf("reading meminfo: %w", err)
	}
	if mi.MemTotalBytes == nil {
		return fmt.Errorf("reading meminfo: MemTotal: %w", ErrMissingField)
	}
	if mi.MemAvailableBytes == nil {
		return fmt.Errorf("reading meminfo: MemAvailable: %w", ErrMissingField)
	}
	ch <- prometheus.MustNewConstMetric(c.total, prometheus.GaugeValue, float64(*mi.MemTotalBytes))
	ch <- prometheus.MustNewConstMetric(c.available, prometheus.GaugeValue, float64(*mi.MemAvailableBytes))
	return nil
}
