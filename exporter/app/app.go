package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"
	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/exporter"
	"github.com/rotahq/rota/internal/logflags"
)

// defaultAddress: 10090 is free on the Prometheus "Default port allocations" wiki page, whose
// 9100-9999 range is full; rota's scaler API takes the next one, 10091.
const defaultAddress = ":10090"

// defaultGOGC is the garbage collector's target when the environment sets no GOGC. A scrape
// allocates about 0.2 MB and keeps almost nothing (the live heap stays under 1 MB), so Go's
// default of 100 lets the heap grow to its 4 MB floor between collections; 50 halves that floor,
// which took about 2 MiB off peak RSS (VmHWM) for a few percent more GC CPU, measured with
// scripts/bench-exporter.sh.
const defaultGOGC = 50

// flags holds the parsed command line.
type flags struct {
	web         *web.FlagConfig
	metricsPath string
	procfs      string
	perCPU      bool
	gpuTimeout  time.Duration
	maxRequests int
	maxProcs    int
	noExporter  bool
	log         logflags.Config
	enabled     map[string]*bool
	slurm       exporter.SlurmConfig
}

func parse(args []string, stdout, stderr io.Writer) (*flags, error) {
	app := kingpin.New("rota-exporter", "Publishes CPU, memory and GPU (NVML) readings for rota and Prometheus.")
	app.Version(version.Print("rota-exporter"))
	app.HelpFlag.Short('h')
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)
	f := &flags{web: kingpinflag.AddFlags(app, defaultAddress), enabled: map[string]*bool{}}
	app.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").StringVar(&f.metricsPath)
	app.Flag("web.max-requests", "Maximum number of scrapes served at once; 0 means no limit.").Default("40").IntVar(&f.maxRequests)
	app.Flag("web.disable-exporter-metrics", "Leave out the exporter's own go_* and process_* metrics.").BoolVar(&f.noExporter)
	app.Flag("path.procfs", "procfs mount point.").Default("/proc").StringVar(&f.procfs)
	app.Flag("collector.cpu.per-cpu", "Also report rota_node_logical_cpu_seconds_total per logical CPU.").BoolVar(&f.perCPU)
	app.Flag("collector.gpu.timeout", "Longest a scrape waits for NVML; a GPU not read by then is left out of that scrape and counted in rota_gpu_device_errors_total{reason=\"timeout\"}.").Default("3s").DurationVar(&f.gpuTimeout)
	app.Flag("runtime.gomaxprocs", "The target number of CPUs Go will run on (GOMAXPROCS); 0 leaves Go's default of one per CPU. One, as in node_exporter, is plenty for a scrape's work and costs fewer threads and per-CPU caches than one per CPU.").Envar("GOMAXPROCS").Default("1").IntVar(&f.maxProcs)
	exporter.AddSlurmFlags(app, &f.slurm)
	for _, c := range exporter.Collectors() {
		f.enabled[c.Name] = app.Flag("collector."+c.Name, fmt.Sprintf("Enable the %s collector (default: %t; --no-collector.%s disables it). %s", c.Name, c.Default, c.Name, c.Help)).Default(fmt.Sprint(c.Default)).Bool()
	}
	logflags.Add(app, &f.log, "info")
	if _, err := app.Parse(args); err != nil {
		return nil, err
	}
	if f.gpuTimeout <= 0 {
		return nil, fmt.Errorf("--collector.gpu.timeout must be positive, got %s", f.gpuTimeout)
	}
	if f.maxProcs < 0 {
		return nil, fmt.Errorf("--runtime.gomaxprocs must not be negative, got %d", f.maxProcs)
	}
	return f, nil
}

// Run is rota-exporter's main: it parses args, checks everything that can be wrong in the
// configuration before anything listens, then serves until SIGINT or SIGTERM, and returns the
// exit code (0 after a signal, 1 on any error). lib is the NVML library (nvml.New() in
// production, a go-nvml mock in the lab); now is the clock that times the collectors.
func Run(args []string, stdout, stderr io.Writer, lib nvml.Interface, now func() time.Time) int {
	f, err := parse(args, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "rota-exporter: error: %v, try --help\n", err)
		return 1
	}
	defer tuneRuntime(f.maxProcs)()
	logger := f.log.New(stderr)
	log := logrus.NewEntry(logger)
	if err := web.Validate(*f.web.WebConfigFile); err != nil {
		log.WithError(err).WithField("file", *f.web.WebConfigFile).Error("invalid web configuration")
		return 1
	}
	enabled := map[string]bool{}
	for name, on := range f.enabled {
		enabled[name] = *on
	}
	exp, err := exporter.New(exporter.Config{
		Enabled: enabled, ProcFS: f.procfs, PerCPU: f.perCPU, NVML: lib,
		GPUTimeout: f.gpuTimeout, Now: now, Log: log, Slurm: f.slurm,
	})
	if err != nil {
		log.WithError(err).Error("cannot start collectors")
		return 1
	}
	handler, err := newHandler(f, exp, log)
	if err != nil {
		log.WithError(err).Error("cannot build the web handler")
		return 1
	}
	log.WithFields(logrus.Fields{"version": version.Info(), "build": version.BuildContext(), "collectors": exp.Names()}).Info("starting rota-exporter")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := web.ListenAndServe(srv, f.web, slogFor(log)); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.WithError(err).Error("serving failed")
		return 1
	}
	log.Info("stopped")
	return 0
}

// tuneRuntime sets GOMAXPROCS (unless maxProcs is 0) and, when the environment sets no GOGC,
// the garbage collector's target to defaultGOGC. The function it returns puts both back, for a
// caller that runs Run inside a process that goes on afterwards (a test).
func tuneRuntime(maxProcs int) (restore func()) {
	var undo []func()
	if maxProcs > 0 {
		prev := runtime.GOMAXPROCS(maxProcs)
		undo = append(undo, func() { runtime.GOMAXPROCS(prev) })
	}
	if _, set := os.LookupEnv("GOGC"); !set {
		prev := debug.SetGCPercent(defaultGOGC)
		undo = append(undo, func() { debug.SetGCPercent(prev) })
	}
	return func() {
		for _, u := range undo {
			u()
		}
	}
}

func newHandler(f *flags, exp *exporter.Exporter, log *logrus.Entry) (http.Handler, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(exp, versioncollector.NewCollector("rota_exporter"))
	if !f.noExporter {
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	mux := http.NewServeMux()
	mux.Handle(f.metricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:            promLog{log},
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: f.maxRequests,
		Registry:            reg,
	}))
	if f.metricsPath != "/" {
		landing, err := web.NewLandingPage(web.LandingConfig{
			Name:        "rota-exporter",
			Description: "CPU, memory and GPU readings for rota",
			Version:     version.Info(),
			Links:       []web.LandingLinks{{Address: f.metricsPath, Text: "Metrics"}},
		})
		if err != nil {
			return nil, fmt.Errorf("landing page: %w", err)
		}
		mux.Handle("/", landing)
	}
	return mux, nil
}

// promLog lets promhttp report encoding errors through logrus.
type promLog struct{ log *logrus.Entry }

func (p promLog) Println(v ...any) { p.log.Error(fmt.Sprint(v...)) }
