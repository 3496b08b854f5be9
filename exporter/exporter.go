package exporter

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/procfs"
	"github.com/sirupsen/logrus"
)

const namespace = "rota"

// Collector reads one source and sends its metrics. Update is called once per scrape, alongside
// the other collectors, and concurrently with itself when two scrapes overlap: implementations
// are safe for concurrent use. An error marks the collector failed for that scrape
// (rota_exporter_collector_success 0); the metrics it already sent are kept.
type Collector interface {
	Update(ch chan<- prometheus.Metric) error
}

// CollectorInfo names a collector for the command line (--collector.<Name>).
type CollectorInfo struct {
	Name    string
	Help    string
	Default bool
}

// Collector names.
const (
	CollectorCPU    = "cpu"
	CollectorMemory = "memory"
	CollectorGPU    = "gpu"
)

// Collectors lists every collector this package provides, in a stable order.
func Collectors() []CollectorInfo {
	return []CollectorInfo{
		{Name: CollectorCPU, Help: "CPU seconds by mode and CPU count, from /proc/stat.", Default: true},
		{Name: CollectorMemory, Help: "Total and available memory, from /proc/meminfo.", Default: true},
		{Name: CollectorGPU, Help: "GPU utilisation, memory, power, energy, temperature and processes, through NVML.", Default: true},
		{Name: CollectorSlurm, Help: "Slurm's queue and nodes (head node only), through sinfo and squeue.", Default: false},
	}
}

// Config says which collectors to build and from what.
type Config struct {
	// Enabled holds the collectors to run, by name (see Collectors).
	Enabled map[string]bool
	// ProcFS is the procfs mount point (/proc on a real server, a fixture folder in tests).
	ProcFS string
	// PerCPU adds rota_node_logical_cpu_seconds_total{cpu,mode}.
	PerCPU bool
	// NVML is the GPU library: nvml.New() in production, a go-nvml mock in tests and the lab.
	NVML nvml.Interface
	// GPUTimeout bounds how long one scrape waits for NVML (see GPUCollector).
	GPUTimeout time.Duration
	// Now is the clock used to time collectors and GPM samples.
	Now func() time.Time
	// Log receives the collectors' logs.
	Log *logrus.Entry
	// Slurm is how the Slurm collector reaches Slurm (see SlurmConfig).
	Slurm SlurmConfig
}

// Errors New returns for a bad Config.
var (
	// ErrUnknownCollector: a name Collectors does not list.
	ErrUnknownCollector = errors.New("unknown collector")
	// ErrNoNVML: the GPU collector is enabled but Config.NVML is nil.
	ErrNoNVML = errors.New("no NVML library given")
)

// New builds the enabled collectors and checks that each can read its source once, so a bad
// --path.procfs fails at start rather than at the first scrape. The GPU collector starts NVML
// in the background and never fails New: a server without a GPU driver is a normal server.
func New(cfg Config) (*Exporter, error) {
	known := map[string]bool{}
	for _, c := range Collectors() {
		known[c.Name] = true
	}
	for name := range cfg.Enabled {
		if !known[name] {
			return nil, fmt.Errorf("%w %q", ErrUnknownCollector, name)
		}
	}
	// In Collectors' order, GPU last: NVML starts only once the procfs readers proved sound.
	collectors := map[string]Collector{}
	for _, info := range Collectors() {
		if !cfg.Enabled[info.Name] {
			continue
		}
		c, err := build(info.Name, cfg)
		if err != nil {
			return nil, fmt.Errorf("collector %s: %w", info.Name, err)
		}
		collectors[info.Name] = c
	}
	return NewExporter(collectors, cfg.Now, cfg.Log), nil
}

func build(name string, cfg Config) (Collector, error) {
	if name == CollectorSlurm {
		return NewSlurmCollectorFromConfig(cfg.Slurm, cfg.Log.WithField("collector", name))
	}
	if name == CollectorGPU {
		if cfg.NVML == nil {
			return nil, ErrNoNVML
		}
		gpu := NewGPUCollector(cfg.NVML, cfg.GPUTimeout, cfg.Now, cfg.Log.WithField("collector", name))
		gpu.Start() // NVML initialises while the web server starts.
		return gpu, nil
	}
	var c Collector
	if name == CollectorCPU {
		c = NewCPUCollector(cfg.ProcFS, cfg.PerCPU, cfg.Now)
	} else {
		fs, err := procfs.NewFS(cfg.ProcFS)
		if err != nil {
			return nil, fmt.Errorf("opening procfs at %s: %w", cfg.ProcFS, err)
		}
		c = NewMemoryCollector(fs)
	}
	// A first read proves the source is there and parses; its metrics are dropped.
	if err := probe(c); err != nil {
		return nil, err
	}
	return c, nil
}

// probe runs one Update and drops its metrics.
func probe(c Collector) error {
	ch := make(chan prometheus.Metric)
	errc := make(chan error, 1)
	go func() {
		errc <- c.Update(ch)
		close(ch)
	}()
	for range ch {
	}
	return <-errc
}

// Exporter is a prometheus.Collector that runs its collectors concurrently on every scrape and
// reports, per collector, whether it succeeded and how long it took. Safe for concurrent use.
type Exporter struct {
	names      []string
	collectors map[string]Collector
	now        func() time.Time
	log        *logrus.Entry
	success    *prometheus.Desc
	duration   *prometheus.Desc
}

// NewExporter wraps already built collectors (keyed by name); now times them.
func NewExporter(collectors map[string]Collector, now func() time.Time, log *logrus.Entry) *Exporter {
	names := make([]string, 0, len(collectors))
	for n := range collectors {
		names = append(names, n)
	}
	sort.Strings(names)
	return &Exporter{
		names:      names,
		collectors: collectors,
		now:        now,
		log:        log,
		success: prometheus.NewDesc(prometheus.BuildFQName(namespace, "exporter", "collector_success"),
			"1 if the collector's last scrape succeeded, 0 if it failed (source missing, NVML unavailable or timed out).",
			[]string{"collector"}, nil),
		duration: prometheus.NewDesc(prometheus.BuildFQName(namespace, "exporter", "collector_duration_seconds"),
			"How long the collector's last scrape took.", []string{"collector"}, nil),
	}
}

// Names returns the names of the collectors that run, sorted.
func (e *Exporter) Names() []string { return append([]string(nil), e.names...) }

// ErrFilter: a scrape's collect[] or exclude[] names a collector that does not run, or gives
// both.
var ErrFilter = errors.New("bad collector filter")

// Filter returns an Exporter that runs, of e's collectors, only those named in collect, or all
// but those named in exclude: node_exporter's collect[] and exclude[] scrape parameters. The
// collectors are e's own (their state is shared). A name that does not run here, or both lists
// given, is an ErrFilter.
func (e *Exporter) Filter(collect, exclude []string) (*Exporter, error) {
	if len(collect) > 0 && len(exclude) > 0 {
		return nil, fmt.Errorf("%w: collect[] and exclude[] together", ErrFilter)
	}
	named := map[string]bool{}
	for _, n := range append(collect, exclude...) {
		if _, ok := e.collectors[n]; !ok {
			return nil, fmt.Errorf("%w: collector %.64q is not enabled (enabled: %v)", ErrFilter, n, e.names)
		}
		named[n] = true
	}
	keep := map[string]Collector{}
	for n, c := range e.collectors {
		if named[n] == (len(collect) > 0) {
			keep[n] = c
		}
	}
	return NewExporter(keep, e.now, e.log), nil
}

// Describe sends the meta-metrics' descriptors only: the collectors' own series vary with the
// hardware (GPU count), so the Exporter is an unchecked collector, as node_exporter's is.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) {
	ch <- e.success
	ch <- e.duration
}

// Collect runs every collector and sends their metrics and the meta-metrics.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	var wg sync.WaitGroup
	for _, name := range e.names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.run(name, ch)
		}()
	}
	wg.Wait()
}

func (e *Exporter) run(name string, ch chan<- prometheus.Metric) {
	start := e.now()
	err := e.collectors[name].Update(ch)
	took := e.now().Sub(start)
	ok := 1.0
	if err != nil {
		ok = 0
		e.log.WithField("collector", name).WithError(err).Debug("collector failed")
	}
	ch <- prometheus.MustNewConstMetric(e.duration, prometheus.GaugeValue, took.Seconds(), name)
	ch <- prometheus.MustNewConstMetric(e.success, prometheus.GaugeValue, ok, name)
}
