package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
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
	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/internal/flagname"
	"github.com/rotahq/rota/internal/logflags"
	"github.com/rotahq/rota/internal/webconfig"
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
	maxConns    int
	maxProcs    int
	noExporter  bool
	pprof       bool
	log         logflags.Config
	slurm       exporter.SlurmConfig
	// enabled holds each --collector.<name> switch; explicit, the ones the command line set
	// (either way), which --collector.disable-defaults leaves as they are.
	enabled         map[string]*bool
	explicit        map[string]bool
	disableDefaults bool
}

// newApp declares every flag of rota-exporter; parsing fills the flags it returns.
func newApp(stdout, stderr io.Writer) (*kingpin.Application, *flags) {
	app := kingpin.New("rota-exporter", "Publishes CPU, memory and GPU (NVML) readings for rota and Prometheus.")
	app.Version(version.Print("rota-exporter"))
	app.HelpFlag.Short('h')
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)
	f := &flags{web: kingpinflag.AddFlags(app, defaultAddress), enabled: map[string]*bool{}, explicit: map[string]bool{}}
	app.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").StringVar(&f.metricsPath)
	app.Flag("web.max-requests", "Maximum number of scrapes served at once; 0 means no limit.").Default("40").IntVar(&f.maxRequests)
	webconfig.AddMaxConnectionsFlag(app, &f.maxConns)
	app.Flag("web.disable-exporter-metrics", "Leave out the exporter's own go_* and process_* metrics.").BoolVar(&f.noExporter)
	app.Flag("web.enable-pprof", "Serve Go's profiles under /debug/pprof/ (and link them from the landing page). Off by default: they show the process's internals to whoever can reach the port.").BoolVar(&f.pprof)
	app.Flag("path.procfs", "procfs mount point.").Default("/proc").StringVar(&f.procfs)
	app.Flag("collector.cpu.per-cpu", "Also report rota_node_logical_cpu_seconds_total per logical CPU.").BoolVar(&f.perCPU)
	app.Flag("collector.gpu.timeout", "Longest a scrape waits for NVML; a GPU not read by then is left out of that scrape and counted in rota_gpu_device_errors_total{reason=\"timeout\"}.").Default("3s").DurationVar(&f.gpuTimeout)
	app.Flag("runtime.gomaxprocs", "The target number of CPUs Go will run on (GOMAXPROCS); 0 leaves Go's default of one per CPU. One, as in node_exporter, is plenty for a scrape's work and costs fewer threads and per-CPU caches than one per CPU.").Envar("GOMAXPROCS").Default("1").IntVar(&f.maxProcs)
	exporter.AddSlurmFlags(app, &f.slurm)
	app.Flag("collector.disable-defaults", "Turn every collector off but those enabled by name on the command line (--collector.<name>).").BoolVar(&f.disableDefaults)
	for _, c := range exporter.Collectors() {
		f.enabled[c.Name] = app.Flag("collector."+c.Name, fmt.Sprintf("Enable the %s collector (default: %t; --no-collector.%s disables it). %s", c.Name, c.Default, c.Name, c.Help)).
			Default(fmt.Sprint(c.Default)).Action(func(*kingpin.ParseContext) error {
			f.explicit[c.Name] = true
			return nil
		}).Bool()
	}
	logflags.Add(app, &f.log, "info")
	flagname.Wrap(app)
	return app, f
}

func parse(args []string, stdout, stderr io.Writer) (*flags, error) {
	app, f := newApp(stdout, stderr)
	if _, err := app.Parse(args); err != nil {
		return nil, err
	}
	if f.gpuTimeout <= 0 {
		return nil, fmt.Errorf("--collector.gpu.timeout must be positive, got %s", f.gpuTimeout)
	}
	if f.slurm.Timeout <= 0 {
		return nil, fmt.Errorf("--collector.slurm.timeout must be positive, got %s", f.slurm.Timeout)
	}
	if err := checkTelemetryPath(f.metricsPath, f.pprof); err != nil {
		return nil, err
	}
	if f.maxRequests < 0 {
		// It meant no limit, silently, while a negative --web.max-connections is refused.
		return nil, fmt.Errorf("--web.max-requests must not be negative (0 means no limit), got %d", f.maxRequests)
	}
	if f.maxProcs < 0 {
		return nil, fmt.Errorf("--runtime.gomaxprocs must not be negative, got %d", f.maxProcs)
	}
	return f, nil
}

// checkTelemetryPath refuses a --web.telemetry-path that is not one plain path the exporter can
// serve: ServeMux panicked, with a goroutine dump, on one without a leading "/" ("metrics") or
// with a space (read as a method), and on one --web.enable-pprof's /debug/pprof/ takes; braces
// made a wildcard that served the metrics under any path below.
func checkTelemetryPath(p string, pprof bool) error {
	switch {
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("--web.telemetry-path must start with /, got %s", errtext.Quote(p))
	case strings.ContainsAny(p, "{} \t\r\n"):
		return fmt.Errorf("--web.telemetry-path must be a plain path, without spaces or braces, got %s", errtext.Quote(p))
	case pprof && strings.HasPrefix(p, "/debug/pprof/"):
		return fmt.Errorf("--web.telemetry-path %s is under /debug/pprof/, which --web.enable-pprof serves", errtext.Quote(p))
	}
	return nil
}

// collectors says which collectors run: each one's switch, except that with
// --collector.disable-defaults only those the command line turned on run.
func (f *flags) collectors() map[string]bool {
	enabled := map[string]bool{}
	for name, on := range f.enabled {
		enabled[name] = *on && (!f.disableDefaults || f.explicit[name])
	}
	return enabled
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
	exp, err := exporter.New(exporter.Config{
		Enabled: f.collectors(), ProcFS: f.procfs, PerCPU: f.perCPU, NVML: lib,
		GPUTimeout: f.gpuTimeout, Now: now, Log: log, Slurm: f.slurm,
	})
	if err != nil {
		log.WithError(err).Error("cannot start collectors")
		return 1
	}
	conns := webconfig.NewConnections("rota_exporter")
	handler, err := newHandler(f, exp, conns, log)
	if err != nil {
		log.WithError(err).Error("cannot build the web handler")
		return 1
	}
	log.WithFields(logrus.Fields{"version": version.Info(), "build": version.BuildContext(), "collectors": exp.Names()}).Info("starting rota-exporter")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	listeners, err := listen(f.web, f.maxConns, conns)
	if err != nil {
		log.WithError(err).Error("cannot listen")
		return 1
	}
	srv := newServer(f, handler)
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := web.ServeMultiple(listeners, srv, f.web, slogFor(log)); err != nil && !errors.Is(err, http.ErrServerClosed) {
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

// newServer is the exporter's HTTP server, with the bounds rota's listener has but two. A
// scrape is a GET without a body whose answer is read at once, so a client has 10 seconds for
// its whole request, and the slowest collector's timeout and a minute more to take the answer;
// it has 2 minutes idle between scrapes (more than usual scrape intervals) as with rota.
func newServer(f *flags, handler http.Handler) *http.Server {
	s := webconfig.NewServer(handler, nil)
	s.ReadTimeout = s.ReadHeaderTimeout
	s.WriteTimeout = max(f.gpuTimeout, f.slurm.Timeout) + time.Minute
	return s
}

func newHandler(f *flags, exp *exporter.Exporter, conns *webconfig.Connections, log *logrus.Entry) (http.Handler, error) {
	own := prometheus.NewRegistry() // the exporter's own go_*, process_* and connection series
	if !f.noExporter {
		own.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), conns)
	}
	mux := http.NewServeMux()
	mux.Handle(f.metricsPath, refuseBody(limitRequests(f.maxRequests, metricsHandler(exp, own, log))))
	if f.pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	if f.metricsPath != "/" {
		landing, err := web.NewLandingPage(web.LandingConfig{
			Name:        "rota-exporter",
			Description: "CPU, memory and GPU readings for rota",
			Version:     version.Info(),
			Links:       []web.LandingLinks{{Address: f.metricsPath, Text: "Metrics"}},
			Profiling:   strconv.FormatBool(f.pprof), // links to /debug/pprof/ only where served
		})
		if err != nil {
			return nil, fmt.Errorf("landing page: %w", err)
		}
		mux.Handle("/", landing)
	}
	return mux, nil
}

// metricsHandler serves every collector's metrics, or with collect[] or exclude[] in the query
// those of the collectors named (or all others), as node_exporter does; the build info and the
// exporter's own series come with either. A filter naming a collector that does not run is a
// 400.
func metricsHandler(exp *exporter.Exporter, own prometheus.Gatherer, log *logrus.Entry) http.Handler {
	handlerFor := func(e *exporter.Exporter) http.Handler {
		reg := prometheus.NewRegistry()
		reg.MustRegister(e, versioncollector.NewCollector("rota_exporter"))
		return promhttp.HandlerFor(prometheus.Gatherers{reg, own}, promhttp.HandlerOpts{
			ErrorLog:      promLog{log},
			ErrorHandling: promhttp.ContinueOnError,
		})
	}
	all := handlerFor(exp)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		collect, exclude := q["collect[]"], q["exclude[]"]
		if len(collect) == 0 && len(exclude) == 0 {
			all.ServeHTTP(w, r)
			return
		}
		some, err := exp.Filter(collect, exclude)
		if err != nil {
			log.WithError(err).Debug("bad collector filter in a scrape")
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		handlerFor(some).ServeHTTP(w, r)
	})
}

// refuseBody answers 400 to a scrape that sends a body, and closes its connection, before it
// takes one of the --web.max-requests slots: net/http reads an unread body before it writes
// the answer, so a GET whose chunked body never ends held its slot for as long as its client
// kept the connection open, and 40 such connections made every scrape a 503.
func refuseBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 {
			w.Header().Set("Connection", "close")
			http.Error(w, "a scrape sends no body", http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// limitRequests answers 503 to a request beyond max served at once (0: no limit), as promhttp's
// MaxRequestsInFlight does, for filtered and whole scrapes alike.
func limitRequests(max int, next http.Handler) http.Handler {
	if max <= 0 {
		return next
	}
	slots := make(chan struct{}, max)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
			next.ServeHTTP(w, r)
		default:
			http.Error(w, fmt.Sprintf("Limit of concurrent requests reached (%d), try again later.", max), http.StatusServiceUnavailable)
		}
	})
}

// promLog lets promhttp report encoding errors through logrus.
type promLog struct{ log *logrus.Entry }

func (p promLog) Println(v ...any) { p.log.Error(fmt.Sprint(v...)) }
