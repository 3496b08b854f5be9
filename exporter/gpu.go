package exporter

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
)

// Errors the GPU collector returns from Update (rota_exporter_collector_success 0).
var (
	// ErrGPUUnavailable: NVML did not initialise (no driver, no library, no GPU) or could not
	// list the devices. Permanent until the exporter restarts.
	ErrGPUUnavailable = errors.New("nvml unavailable")
	// ErrGPUTimeout: NVML did not answer within the collector's timeout.
	ErrGPUTimeout = errors.New("nvml timed out")
)

// Reasons on rota_gpu_device_errors_total.
const (
	reasonError   = "error"
	reasonTimeout = "timeout"
)

// GPUCollector reports per-GPU readings through NVML.
//
// Bounded scrapes: every NVML call runs in a background read, and Update waits for the reads at
// most timeout. A device whose read is not done by then is reported as failed for this scrape
// (its series are left out, rota_gpu_device_errors_total{reason="timeout"} goes up) and the scrape
// returns. At most one read per device is in flight: a read still stuck in NVML is waited on
// again by the next scrape, never started twice, so hung calls cannot pile up goroutines.
// Concurrent scrapes share the reads in flight.
//
// No stale reading is ever reported: a scrape reports a read only if no scrape ended between
// the start of the scrape that began the read and its own start (so the read began at most
// timeout before it). A stuck read that finishes during a later scrape predates the scrape it
// was begun for, and its readings, taken before that scrape ended, may say idle of a GPU busy
// since: that later scrape starts a fresh read once the stuck one is done and reports the
// fresh one, or a timeout.
//
// Unavailable NVML: a failed Init is logged once and never followed by another NVML call (after a
// failed Init any call can kill the process); every scrape then reports rota_gpu_devices 0 and
// fails the collector, and the other collectors carry on.
type GPUCollector struct {
	lib     nvml.Interface
	timeout time.Duration
	now     func() time.Time
	log     *logrus.Entry

	mu      sync.Mutex
	inv     *pending[inventory] // started once, by Start or the first Update
	reads   []*gpuRead          // per device: the last read started
	gpm     []*gpmState         // per device: GPM sampling, touched only by its read
	failing []bool              // per device: failed last time (to log changes only)
	ended   uint64              // scrapes (Updates) ended so far

	errors  *prometheus.CounterVec
	devices *prometheus.Desc
	info    *prometheus.Desc
	metrics [gpuMetricCount]gpuDesc
}

// gpuDesc describes one per-GPU metric.
type gpuDesc struct {
	desc      *prometheus.Desc
	valueType prometheus.ValueType
}

// NewGPUCollector reads GPUs through lib (nvml.New() or a go-nvml mock); a scrape waits at most
// timeout for NVML; now times GPM samples (see gpmState). It makes no NVML call until Start or
// the first Update.
func NewGPUCollector(lib nvml.Interface, timeout time.Duration, now func() time.Time, log *logrus.Entry) *GPUCollector {
	gpu := []string{"gpu", "uuid"}
	desc := func(name, help string, labels []string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "gpu", name), help, labels, nil)
	}
	return &GPUCollector{
		lib:     lib,
		timeout: timeout,
		now:     now,
		log:     log,
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "gpu", Name: "device_errors_total",
			Help: "Scrapes in which a GPU could not be read, by reason (error: NVML returned an error, e.g. GPU lost; timeout: NVML did not answer in time).",
		}, []string{"gpu", "uuid", "reason"}),
		devices: desc("devices", "GPUs NVML reports; 0 when NVML is unavailable.", nil),
		info:    desc("info", "Static attributes of a GPU; always 1.", []string{"gpu", "uuid", "name", "pci_bus_id", "driver_version"}),
		metrics: [gpuMetricCount]gpuDesc{
			gpuUtilization: {desc("utilization_ratio", "Fraction of the last sample period in which a kernel ran on the GPU (0 to 1).", gpu), prometheus.GaugeValue},
			gpuMemoryUsed:  {desc("memory_used_bytes", "GPU memory allocated.", gpu), prometheus.GaugeValue},
			gpuMemoryTotal: {desc("memory_total_bytes", "GPU memory installed.", gpu), prometheus.GaugeValue},
			gpuProcesses:   {desc("compute_processes", "Compute processes running on the GPU; 0 means idle whatever its clocks say.", gpu), prometheus.GaugeValue},
			gpuPower:       {desc("power_watts", "GPU power draw.", gpu), prometheus.GaugeValue},
			gpuEnergy:      {desc("energy_joules_total", "Energy the GPU used since the driver loaded.", gpu), prometheus.CounterValue},
			gpuTemperature: {desc("temperature_celsius", "GPU core temperature.", gpu), prometheus.GaugeValue},
			gpuSMActive: {desc("sm_active_ratio", "Share of the GPU's SMs busy between the exporter's last two GPM samples, at least 1 s apart: normally the time since the previous scrape (NVML GPM, Hopper and later; DCGM's SM_ACTIVE).", gpu),
				prometheus.GaugeValue},
			gpuSMOccupancy: {desc("sm_occupancy_ratio", "Warps resident on the SMs as a share of the most they hold, between the last two GPM samples (NVML GPM).", gpu),
				prometheus.GaugeValue},
			gpuTensorActive: {desc("tensor_active_ratio", "Share of the time between the last two GPM samples any tensor core pipe was busy (NVML GPM).", gpu),
				prometheus.GaugeValue},
		},
	}
}

// inventory is what NVML says once, at start.
type inventory struct {
	driverVersion string
	count         int
	// uuids label each GPU's error counter, which must exist (at 0) before a read of the
	// GPU ever succeeds; unknownUUID where the UUID could not be read at start.
	uuids []string
}

// unknownUUID labels the error counter of a GPU whose UUID NVML did not give at start.
const unknownUUID = "unknown"

// Start begins initialising NVML in the background, so the first scrape finds it ready.
// Idempotent; Update calls it too.
func (c *GPUCollector) Start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inv == nil {
		c.inv = start(c.initialise)
	}
}

// initHint says what a failed Init most likely means, and what to do.
func initHint(ret nvml.Return) string {
	switch ret {
	case nvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return "the NVML library and the loaded driver differ: a driver upgraded without a reboot or a module reload; restart the exporter once they match"
	case nvml.ERROR_NO_PERMISSION:
		return "no permission to open the GPU devices (/dev/nvidia*): run the exporter as a user that may"
	}
	return "no driver or no GPU; restart the exporter after installing one"
}

func (c *GPUCollector) initialise() (inventory, error) {
	if ret := c.lib.Init(); ret != nvml.SUCCESS {
		// No NVML call may follow a failed Init: it can kill the process.
		c.log.WithField("nvml", ret.Error()).Warn("GPU collector unavailable: NVML did not initialise (" + initHint(ret) + ")")
		return inventory{}, fmt.Errorf("%w: init: %w", ErrGPUUnavailable, ret)
	}
	driver, ret := c.lib.SystemGetDriverVersion()
	if ret != nvml.SUCCESS {
		c.log.WithField("nvml", ret.Error()).Warn("GPU collector unavailable: reading the driver version failed")
		return inventory{}, fmt.Errorf("%w: driver version: %w", ErrGPUUnavailable, ret)
	}
	n, ret := c.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		c.log.WithField("nvml", ret.Error()).Warn("GPU collector unavailable: counting devices failed")
		return inventory{}, fmt.Errorf("%w: device count: %w", ErrGPUUnavailable, ret)
	}
	inv := inventory{driverVersion: labelValue(driver), count: n, uuids: make([]string, n)}
	for i := range n {
		inv.uuids[i] = c.uuid(i)
	}
	c.log.WithFields(logrus.Fields{"devices": n, "driver_version": driver}).Info("NVML ready")
	return inv, nil
}

// uuid reads GPU i's UUID for its error counter; a GPU that cannot say is logged and labelled
// unknownUUID (its reads will fail and be counted under it).
func (c *GPUCollector) uuid(i int) string {
	dev, ret := c.lib.DeviceGetHandleByIndex(i)
	if ret == nvml.SUCCESS {
		var uuid string
		if uuid, ret = dev.GetUUID(); ret == nvml.SUCCESS {
			return labelValue(uuid)
		}
	}
	c.log.WithFields(logrus.Fields{"gpu": i, "nvml": ret.Error()}).Warn("GPU UUID unreadable at start; its error counter is labelled uuid=\"unknown\"")
	return unknownUUID
}

// Update implements Collector.
func (c *GPUCollector) Update(ch chan<- prometheus.Metric) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	c.Start()
	c.mu.Lock()
	inv := c.inv
	ended := c.ended // which reads are fresh enough for this scrape (see GPUCollector)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.ended++
		c.mu.Unlock()
	}()
	if !wait(ctx, inv.done) {
		ch <- prometheus.MustNewConstMetric(c.devices, prometheus.GaugeValue, 0)
		return fmt.Errorf("%w: initialising", ErrGPUTimeout)
	}
	if inv.err != nil {
		ch <- prometheus.MustNewConstMetric(c.devices, prometheus.GaugeValue, 0)
		return inv.err
	}
	ch <- prometheus.MustNewConstMetric(c.devices, prometheus.GaugeValue, float64(inv.val.count))
	for i, r := range c.startReads(inv.val, ended) {
		p, done := c.await(ctx, i, r, ended)
		switch {
		case !done:
			c.failed(i, inv.val.uuids[i], reasonTimeout, fmt.Errorf("%w after %s", ErrGPUTimeout, c.timeout))
		case p.err != nil:
			c.failed(i, inv.val.uuids[i], reasonError, p.err)
		default:
			c.recovered(i)
			c.send(ch, i, inv.val.driverVersion, p.val)
		}
	}
	c.errors.Collect(ch)
	return nil
}

// gpuRead is one background read of a GPU, begun for a scrape that started after ended
// scrapes had ended.
type gpuRead struct {
	*pending[gpuReading]
	ended uint64
}

// await waits until GPU i has a read fresh for a scrape that started after ended scrapes had
// ended, starting from p: a stale read (see GPUCollector) is waited out, then replaced by a
// fresh one. It returns false if none finished before ctx ended.
func (c *GPUCollector) await(ctx context.Context, i int, p *gpuRead, ended uint64) (*gpuRead, bool) {
	for {
		if !wait(ctx, p.done) {
			return nil, false
		}
		if p.ended >= ended {
			return p, true
		}
		if ctx.Err() != nil {
			return nil, false
		}
		c.mu.Lock()
		p = c.startRead(i, ended)
		c.mu.Unlock()
	}
}

// startReads returns a read per device, from startRead.
func (c *GPUCollector) startReads(inv inventory, ended uint64) []*gpuRead {
	n := inv.count
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reads == nil {
		c.reads = make([]*gpuRead, n)
		c.failing = make([]bool, n)
		c.gpm = make([]*gpmState, n)
		// Every error series exists from the start at 0, so increase() sees the first error.
		for i := range n {
			c.gpm[i] = &gpmState{}
			c.errors.WithLabelValues(strconv.Itoa(i), inv.uuids[i], reasonError)
			c.errors.WithLabelValues(strconv.Itoa(i), inv.uuids[i], reasonTimeout)
		}
	}
	out := make([]*gpuRead, n)
	for i := range n {
		out[i] = c.startRead(i, ended)
	}
	return out
}

// startRead returns GPU i's read in flight if it has one, else starts a new one for a scrape
// that began after ended scrapes had ended. This is the "at most one NVML read in flight per
// device" rule. c.mu is held.
func (c *GPUCollector) startRead(i int, ended uint64) *gpuRead {
	if c.reads[i] == nil || c.reads[i].finished() {
		gpm := c.gpm[i]
		c.reads[i] = &gpuRead{start(func() (gpuReading, error) { return readDevice(c.lib, i, gpm, c.now) }), ended}
	}
	return c.reads[i]
}

func (c *GPUCollector) failed(i int, uuid, reason string, err error) {
	c.errors.WithLabelValues(strconv.Itoa(i), uuid, reason).Inc()
	c.mu.Lock()
	first := !c.failing[i]
	c.failing[i] = true
	c.mu.Unlock()
	if first {
		c.log.WithFields(logrus.Fields{"gpu": i, "reason": reason}).WithError(err).Warn("GPU read failed; its series are left out until it recovers")
	}
}

func (c *GPUCollector) recovered(i int) {
	c.mu.Lock()
	was := c.failing[i]
	c.failing[i] = false
	c.mu.Unlock()
	if was {
		c.log.WithField("gpu", i).Info("GPU read recovered")
	}
}

func (c *GPUCollector) send(ch chan<- prometheus.Metric, i int, driver string, r gpuReading) {
	idx := strconv.Itoa(i)
	ch <- prometheus.MustNewConstMetric(c.info, prometheus.GaugeValue, 1, idx, r.uuid, r.name, r.pciBusID, driver)
	for _, s := range r.samples {
		m := c.metrics[s.metric]
		ch <- prometheus.MustNewConstMetric(m.desc, m.valueType, s.value, idx, r.uuid)
	}
}

// pending is a call running in the background; done is closed when val and err are set.
type pending[T any] struct {
	done chan struct{}
	val  T
	err  error
}

// start runs f in a goroutine of its own. A panic (a mock missing a function, a library bug)
// becomes the call's error instead of killing the exporter.
func start[T any](f func() (T, error)) *pending[T] {
	p := &pending[T]{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		defer func() {
			if r := recover(); r != nil {
				p.err = fmt.Errorf("nvml call panicked: %v", r)
			}
		}()
		p.val, p.err = f()
	}()
	return p
}

func (p *pending[T]) finished() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait reports whether done closed before ctx ended; a call that finished exactly at the
// deadline still counts as finished.
func wait(ctx context.Context, done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	case <-ctx.Done():
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
}
