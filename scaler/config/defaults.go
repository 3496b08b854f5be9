package config

import (
	"fmt"
	"reflect"
	"time"

	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/internal/jobclass"
)

// DefaultListenAddress is rota's HTTP listener when the config names none.
const DefaultListenAddress = "127.0.0.1:10091"

// defaultEvaluationInterval is the time between passes when the config names none.
const defaultEvaluationInterval = time.Minute

// DefaultBootTimeout is a pool's boot_timeout when the config names none.
const DefaultBootTimeout = 10 * time.Minute

func dur(d time.Duration) model.Duration { return model.Duration(d) }

func setDur(d *model.Duration, def time.Duration) {
	if *d == 0 {
		*d = dur(def)
	}
}

func setInt(v *int, def int) {
	if *v == 0 {
		*v = def
	}
}

func setFloat(v *float64, def float64) {
	if *v == 0 {
		*v = def
	}
}

func setString(v *string, def string) {
	if *v == "" {
		*v = def
	}
}

// Default is the config with every default filled and no pools: what the rule generator uses
// when it is given no file. It is not validated (it has no pools).
func Default() *Config {
	c := defaults()
	c.applyPoolDefaults(func(string) bool { return false })
	return c
}

// defaults is the config Parse decodes the file into: every global field holds its documented
// default, so a key the file leaves out keeps it and a key the file sets, to zero included,
// is what the file says (validation then rejects the zeros that make no sense). The defaults
// are those the replays of the shared traces favour (docs/simulation.md): a server with CPU
// under 20% and GPUs idle for 2 minutes, nothing allocated, is powered off when staying on is
// expected to cost more than a cycle (priced with 20 minutes of wear); no dwell times or
// cooldowns, a budget of 12 cycles a day; warm spares for the rise of need within a boot at
// q0.8; work that no capacity can hold wakes a server at once, and more than 10 queued jobs
// may spill to a dearer pool.
func defaults() *Config {
	var c Config
	c.applyDefaults()
	return &c
}

// applyDefaults fills every global field still at its zero value with the documented default
// (on a zero Config: all of them).
func (c *Config) applyDefaults() {
	setString(&c.Prometheus.URL, "http://127.0.0.1:9090")
	setDur(&c.Prometheus.Timeout, 10*time.Second)
	setDur(&c.Prometheus.ScrapeInterval, 15*time.Second)
	setString(&c.Server.ListenAddress, DefaultListenAddress)
	if c.Server.WebhookMaxBodyBytes == 0 {
		c.Server.WebhookMaxBodyBytes = 1 << 20
	}
	setString(&c.Store.Backend, BackendBolt)
	setString(&c.Store.Path, "/var/lib/rota/rota.db")
	setDur(&c.Store.Etcd.LeaseTTL, 10*time.Second)
	setDur(&c.Store.Etcd.DialTimeout, 5*time.Second)
	setDur(&c.Store.Etcd.RequestTimeout, 5*time.Second)
	setString(&c.Jobs.Adapter, "none")
	setDur(&c.Jobs.Timeout, 30*time.Second)
	setDur(&c.Jobs.WatchInterval, 2*time.Second)
	if c.Jobs.Kubernetes.GPUDeviceClasses == nil {
		c.Jobs.Kubernetes.GPUDeviceClasses = []string{DefaultGPUDeviceClass}
	}
	setInt(&c.BMC.Concurrency, 64)
	setDur(&c.BMC.MinCommandInterval, 5*time.Second)
	setDur(&c.BMC.OperationTimeout, 5*time.Minute)
	setDur(&c.BMC.GracefulTimeout, 2*time.Minute)
	setDur(&c.BMC.PowerReadingInterval, 5*time.Minute)

	p := &c.Policy
	setDur(&p.EvaluationInterval, defaultEvaluationInterval)
	setFloat(&p.Idle.CPUThreshold, 0.20)
	setFloat(&p.Idle.GPUThreshold, 0.05)
	setString(&p.GPUSignal, SignalAuto)
	setDur(&p.Idle.Window, 2*time.Minute)
	setInt(&p.Backlog.QueuedJobs, 10)
	setDur(&p.Backlog.For, 2*time.Minute)
	setFloat(&p.Underuse.GPUThreshold, 0.10)
	setDur(&p.Underuse.Window, 30*time.Minute)
	setDur(&p.Telemetry.MaxAge, 2*time.Minute)
	setInt(&p.Node.MaxCyclesPerDay, 12)
	setInt(&p.Disruption.MaxPowerOffs, 40)
	setFloat(&p.Disruption.MaxPowerOffsShare, 0.1)
	setDur(&p.Disruption.Window, 10*time.Minute)
	setInt(&p.Disruption.MaxConcurrent, 40)
	setFloat(&p.Disruption.MaxConcurrentShare, 0.1)
	setDur(&p.Drain.Timeout, 30*time.Minute)
	setDur(&p.Failure.Backoff, 10*time.Minute)
	setDur(&p.Failure.MaxBackoff, 4*time.Hour)
	setInt(&p.Failure.AlertAfter, 3)
	setDur(&p.Spares.Window, time.Hour)
	setFloat(&p.Spares.Factor, 1.0)
	setFloat(&p.Spares.MaxShare, 0.1)
	setFloat(&p.Spares.Quantile, 0.8)
	setDur(&p.BreakEven.WearTime, 20*time.Minute)
	setDur(&p.Forecast.MinHistory, 24*time.Hour)
	setDur(&p.Failure.AlertWindow, 30*time.Minute)
	p.Moves.applyDefaults()
	setString(&c.Accounting.Chargeback.Idle, IdleToOwner)

}

// applyPoolDefaults fills what the file cannot give before it is read: the classes when it
// has no `classes` key (an empty list is for validation to refuse), and each pool's fields it
// left out. given reports whether the file sets a path:
// a duration it sets to zero stays zero, for validation to refuse, rather than silently
// becoming the default (`boot_timeout: 0s` read as 10m).
func (c *Config) applyPoolDefaults(given func(path string) bool) {
	if !given("classes") {
		c.Classes = DefaultClasses()
	}
	for i := range c.TelemetrySources {
		c.TelemetrySources[i].applyDefaults()
	}
	if !given("accounting.stale_after") {
		// An evaluation interval out of its range (a problem of its own) is taken within it
		// here, so that the file's one mistake is said once: three of 100y overflowed to a
		// negative stale_after, and three of 0s was a zero one, each a second problem the
		// file never wrote.
		f, _ := reflect.TypeFor[Policy]().FieldByName("EvaluationInterval")
		every := min(time.Duration(c.Policy.EvaluationInterval), time.Duration(maxOf(f)))
		if every <= 0 {
			every = defaultEvaluationInterval
		}
		setDur(&c.Accounting.StaleAfter, 3*every)
	}
	for i := range c.Pools {
		pl := &c.Pools[i]
		if !given(fmt.Sprintf("pools[%d].boot_timeout", i)) {
			setDur(&pl.BootTimeout, DefaultBootTimeout)
		}
		if t := c.Accounting.Tariff(pl.Cost.Tariff); t != nil && pl.Cost.Tariff != "" {
			setString(&pl.Cost.Currency, t.Currency)
		}
		setString(&pl.Cost.Currency, "USD")
		if pl.Cost.SavesWhenOff == nil {
			t := true
			pl.Cost.SavesWhenOff = &t
		}
		setString(&pl.TelemetrySource, RotaExporter)
		if pl.Max == nil {
			n := len(pl.Nodes)
			pl.Max = &n
		}
	}
}

// DefaultClasses are light (no GPU, up to 8 CPUs), medium (up to 1 GPU) and heavy (the rest).
func DefaultClasses() []Class { return jobclass.Defaults() }
