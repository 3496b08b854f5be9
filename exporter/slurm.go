package exporter

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"gopkg.in/yaml.v3"

	"github.com/rotahq/rota/internal/jobclass"
	"github.com/rotahq/rota/internal/slurmcli"
)

// CollectorSlurm is the head node's Slurm queue collector (off by default).
const CollectorSlurm = "slurm"

// SlurmConfig says how the Slurm collector reaches Slurm and classifies pending work.
type SlurmConfig struct {
	// Conf is SLURM_CONF for sinfo and squeue (empty: Slurm's default); BinDir holds them
	// (empty: PATH).
	Conf   string
	BinDir string
	// Timeout bounds one whole read (sinfo, then squeue); positive. See DefaultSlurmTimeout.
	Timeout time.Duration
	// ClassesFile is rota's config file, of which only the classes: section is read; empty
	// uses jobclass.Defaults().
	ClassesFile string
}

// DefaultSlurmTimeout bounds a scrape's read of Slurm, both commands together. A killed command
// may keep its pipes up to a second more (slurmcli's WaitDelay), so a scrape answers within 9 s,
// inside Prometheus's default scrape timeout of 10 s: past it Prometheus drops the whole scrape,
// and rota_exporter_collector_success{collector="slurm"} 0 would never be seen.
const DefaultSlurmTimeout = 8 * time.Second

// SlurmCollector reports Slurm's queue and nodes from one whole read per scrape, through the
// same reader, the same test of what is demand (slurmcli.Job.WantsServers) and the same
// classes (jobclass) as rota's Slurm adapter, so the alert rules and the scaler count the same
// demand. A read that fails, prints anything unexpected or does not finish within the timeout
// fails the scrape (rota_exporter_collector_success{collector="slurm"} 0) and sends nothing.
type SlurmCollector struct {
	read    func(context.Context) (slurmcli.View, error)
	classes []jobclass.Class
	timeout time.Duration

	jobs, pendingJobs, pendingCPUs, pendingGPUs, nodes *prometheus.Desc
}

// NewSlurmCollector reads Slurm with read (slurmcli.Client.Read), given at most timeout (a
// context deadline) for the whole read, and names pending work's class with the classes given
// (not empty).
func NewSlurmCollector(read func(context.Context) (slurmcli.View, error), classes []jobclass.Class, timeout time.Duration) *SlurmCollector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "slurm", name), help, labels, nil)
	}
	return &SlurmCollector{
		read:        read,
		classes:     classes,
		timeout:     timeout,
		jobs:        desc("jobs", "Slurm jobs by partition (the first a job names) and state.", "partition", "state"),
		pendingJobs: desc("pending_jobs", "Pending Slurm jobs that more servers could start, by partition and rota job class.", "partition", "class"),
		pendingCPUs: desc("pending_cpus", "CPUs asked for by pending Slurm jobs that more servers could start (all their nodes), by partition and class.", "partition", "class"),
		pendingGPUs: desc("pending_gpus", "GPUs asked for by pending Slurm jobs that more servers could start (all their nodes), by partition and class.", "partition", "class"),
		nodes:       desc("nodes", "Slurm nodes by state (one word per node: idle, mixed, allocated, draining, drained, down, powered_down, ...).", "state"),
	}
}

// NewSlurmCollectorFromConfig builds the collector on Slurm's own commands.
func NewSlurmCollectorFromConfig(cfg SlurmConfig, log *logrus.Entry) (*SlurmCollector, error) {
	classes, err := LoadClasses(cfg.ClassesFile)
	if err != nil {
		return nil, err
	}
	// No bound per command: the collector's deadline bounds both together.
	c := slurmcli.Client{Run: slurmcli.Commands{Conf: cfg.Conf, BinDir: cfg.BinDir}.Run}
	return NewSlurmCollector(c.Read, classes, cfg.Timeout), nil
}

// LoadClasses reads the classes: section of rota's config file (the rest is ignored); an empty
// path, or a file without the key, gives jobclass.Defaults(); a key with no class is refused,
// as rota refuses it.
func LoadClasses(path string) ([]jobclass.Class, error) {
	if path == "" {
		return jobclass.Defaults(), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading classes: %w", err)
	}
	// The rest of the file is rota's business; the classes are read strictly (a misspelt
	// max_gpus must not silently put GPU work in the light class).
	var doc struct {
		Classes yaml.Node `yaml:"classes"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("reading classes from %s: %w", path, err)
	}
	if doc.Classes.Kind == 0 {
		return jobclass.Defaults(), nil
	}
	// Decoded within the whole file, so that an alias of an anchor elsewhere in it (a pool's
	// partitions) reads as rota reads it; the rest is taken as it comes.
	var strict struct {
		Classes []jobclass.Class `yaml:"classes"`
		Rest    map[string]any   `yaml:",inline"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&strict); err != nil {
		return nil, fmt.Errorf("reading classes from %s: %w", path, err)
	}
	classes := strict.Classes
	if len(classes) == 0 {
		return nil, fmt.Errorf("reading classes from %s: %s", path, jobclass.EmptyList)
	}
	for i, c := range classes {
		if c.Name == "" {
			return nil, fmt.Errorf("reading classes from %s: class %d has no name", path, i+1)
		}
	}
	return classes, nil
}

// Update implements Collector.
func (c *SlurmCollector) Update(ch chan<- prometheus.Metric) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	v, err := c.read(ctx)
	if err != nil {
		return err
	}
	// Partitions are keyed by their label value (labelValue): Slurm does not hold its names to
	// UTF-8, and a label value that is not ends the exporter; names that differ only in such
	// bytes count as one.
	type pl struct{ partition, label string }
	jobs := map[pl]int{}
	for _, j := range v.Jobs {
		jobs[pl{labelValue(j.Partition), j.State}]++
	}
	for k, n := range jobs {
		ch <- prometheus.MustNewConstMetric(c.jobs, prometheus.GaugeValue, float64(n), k.partition, k.label)
	}

	// Every partition sinfo shows gets a series per class, zero included, so rules see 0
	// rather than nothing.
	var pending [3]map[pl]int
	for i := range pending {
		pending[i] = map[pl]int{}
	}
	for _, n := range v.Nodes {
		for _, p := range n.Partitions {
			p = labelValue(p)
			for _, cl := range c.classes {
				if _, ok := pending[0][pl{p, cl.Name}]; !ok {
					pending[0][pl{p, cl.Name}] = 0
				}
			}
		}
	}
	for _, j := range v.Jobs {
		if !j.WantsServers() {
			continue
		}
		k := pl{labelValue(j.Partition), jobclass.Classify(c.classes, j.Shape())}
		pending[0][k]++
		pending[1][k] += j.Nodes * j.CPUs
		pending[2][k] += j.Nodes * j.GPUs
	}
	for k := range pending[0] {
		ch <- prometheus.MustNewConstMetric(c.pendingJobs, prometheus.GaugeValue, float64(pending[0][k]), k.partition, k.label)
		ch <- prometheus.MustNewConstMetric(c.pendingCPUs, prometheus.GaugeValue, float64(pending[1][k]), k.partition, k.label)
		ch <- prometheus.MustNewConstMetric(c.pendingGPUs, prometheus.GaugeValue, float64(pending[2][k]), k.partition, k.label)
	}

	states := map[string]int{}
	for _, s := range slurmcli.NodeSummaries() {
		states[s] = 0
	}
	for _, n := range v.Nodes {
		states[n.State.Summary()]++
	}
	for s, n := range states {
		ch <- prometheus.MustNewConstMetric(c.nodes, prometheus.GaugeValue, float64(n), s)
	}
	return nil
}

// AddSlurmFlags adds the Slurm collector's flags to rota-exporter's command line.
func AddSlurmFlags(app *kingpin.Application, c *SlurmConfig) {
	app.Flag("collector.slurm.conf", "slurm.conf for sinfo and squeue (SLURM_CONF); empty: Slurm's default.").Envar("SLURM_CONF").StringVar(&c.Conf)
	app.Flag("collector.slurm.bin-dir", "Folder holding sinfo and squeue; empty: PATH.").StringVar(&c.BinDir)
	app.Flag("collector.slurm.timeout", "Longest one read of Slurm (sinfo and squeue together) may take; a scrape whose read did not finish fails. Keep it under Prometheus's scrape timeout, less a second.").Default(DefaultSlurmTimeout.String()).DurationVar(&c.Timeout)
	app.Flag("collector.slurm.config-file", "rota's config file, of which only the classes: section is read to name pending work's class; empty: the default classes (light, medium, heavy).").StringVar(&c.ClassesFile)
}
