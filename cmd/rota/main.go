// Command rota is the scaler daemon: it reads its one config file, then every
// policy.evaluation_interval (or sooner, when Alertmanager's webhook nudges it) observes the
// fleet, plans, and drains, powers off and powers on servers. It serves /metrics, the operator
// API that rotactl calls, and the Alertmanager webhook on one listener (with TLS and basic auth
// for /metrics from --web.config.file). SIGHUP re-reads the token files and the web config's
// users, and logs whether the config file changed (it takes effect at a restart). SIGTERM or SIGINT stops it: the loop finishes the actions in flight (or leaves
// their intent in the store for the next start's repair pass), then the listener closes.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"
	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/flagname"
	"github.com/rotahq/rota/internal/logflags"
	"github.com/rotahq/rota/internal/webconfig"
	"github.com/rotahq/rota/scaler/config"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// flags holds the parsed command line.
type flags struct {
	configFile     string
	webConfigFile  string
	maxConnections int
	log            logflags.Config
}

func parse(args []string, stdout, stderr io.Writer) (*flags, error) {
	app := kingpin.New("rota", "The rota scaler: powers bare-metal servers on and off from Prometheus signals.")
	app.Version(version.Print("rota"))
	app.HelpFlag.Short('h')
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)
	f := &flags{}
	app.Flag("config.file", "rota's configuration file.").Default("/etc/rota/rota.yml").StringVar(&f.configFile)
	app.Flag("web.config.file", "exporter-toolkit web configuration file for the listener: tls_server_config (TLS for every endpoint) and basic_auth_users (then required by /metrics). See https://github.com/prometheus/exporter-toolkit/blob/master/docs/web-configuration.md").Default("").StringVar(&f.webConfigFile)
	webconfig.AddMaxConnectionsFlag(app, &f.maxConnections)
	logflags.Add(app, &f.log, "info")
	flagname.Wrap(app)
	if _, err := app.Parse(args); err != nil {
		return nil, err
	}
	return f, nil
}

// run is main with its outputs passed in; it returns the exit code: 0 after a clean stop, 1 when
// the config or a piece cannot be set up or fails, 2 for a bad command line.
func run(args []string, stdout, stderr io.Writer) int {
	f, err := parse(args, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "rota: error: %v, try --help\n", err)
		return 2
	}
	log := logrus.NewEntry(f.log.New(stderr))
	cfg, err := config.Load(f.configFile)
	if err != nil {
		// A *config.ValidationError lists every problem, one per line, each with its path.
		fmt.Fprintf(stderr, "rota: %v\n", err)
		return 1
	}
	var web *webconfig.File
	if f.webConfigFile != "" {
		if web, err = webconfig.Load(f.webConfigFile); err != nil {
			fmt.Fprintf(stderr, "rota: --web.config.file: %v\n", err)
			return 1
		}
	}
	log.WithFields(logrus.Fields{"version": version.Info(), "config": f.configFile}).Info("starting rota")

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	d, err := build(ctx, f.configFile, cfg, web, f.maxConnections, log, clock.Real{})
	if err != nil {
		log.WithError(err).Error("cannot start")
		return 1
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if err := d.run(ctx, hup); err != nil {
		log.WithError(err).Error("stopped on error")
		return 1
	}
	log.Info("stopped")
	return 0
}
