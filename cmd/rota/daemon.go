package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/webconfig"
	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor"
	"github.com/rotahq/rota/scaler/loop"
	"github.com/rotahq/rota/scaler/plan"
	"github.com/rotahq/rota/scaler/promfacts"
	"github.com/rotahq/rota/scaler/store"
)

// daemon is rota's pieces, built and ready to run.
type daemon struct {
	cfg config.Server
	// configFile is where the config in force, loaded, was read: SIGHUP reads the file again
	// to say whether it changed.
	configFile string
	loaded     *config.Config
	web        *webconfig.File
	state      *state
	loop       *loop.Loop
	server     *api.Server
	listener   net.Listener
	log        *logrus.Entry
	// checkTelemetry reports, once at start, the series a telemetry mapping names that
	// Prometheus lacks.
	checkTelemetry func(context.Context)
}

// build makes every piece from the config, in dependency order; on error whatever was opened
// is closed again. configFile is where cfg was read; web and maxConnections are the listener's
// flags.
func build(ctx context.Context, configFile string, cfg *config.Config, web *webconfig.File, maxConnections int, log *logrus.Entry, clk clock.Real) (d *daemon, err error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		versioncollector.NewCollector("rota"),
	)
	apiToken, webhookToken, err := tokens(cfg.Server)
	if err != nil {
		return nil, err
	}
	state, err := openState(ctx, cfg, log, clk, reg)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = state.closeFn()
		}
	}()
	st := state.store
	power, err := newPower(cfg, log, clk, reg)
	if err != nil {
		return nil, err
	}
	jm, err := newJobs(cfg, clk, log)
	if err != nil {
		return nil, err
	}
	prepareJobs(cfg, jm, log)
	facts, err := promfacts.New(cfg, log.WithField("component", "promfacts"))
	if err != nil {
		return nil, fmt.Errorf("prometheus: %w", err)
	}
	ex, err := executor.New(executor.Options{
		Store: st, Power: power, Jobs: jm, Config: cfg, Clock: clk,
		Log: log.WithField("component", "executor"), Registerer: reg,
		Ready: exporterReady(facts, clk), Fault: faultHook(log),
	})
	if err != nil {
		return nil, err
	}
	lp, err := loop.New(loop.Options{
		Config: cfg, Store: st, Executor: ex, Power: power, Jobs: jm, Telemetry: facts,
		Planner: plan.Plan, Clock: clk, Log: log.WithField("component", "loop"), Registerer: reg,
		Watch: newWatch(cfg, jm), Leadership: state.lead,
		Meter: power, Numbers: facts, GPUs: facts,
	})
	if err != nil {
		return nil, err
	}
	srv, err := api.NewServer(api.Options{
		Backend: lp, Registry: reg,
		APIToken: apiToken, WebhookToken: webhookToken,
		WebhookAuthDisabled: cfg.Server.WebhookAuthDisabled,
		WebhookMaxBodyBytes: cfg.Server.WebhookMaxBodyBytes,
		Ready:               ready(lp),
		Clock:               clk,
		Web:                 web,
		MaxConnections:      maxConnections,
		Log:                 log.WithField("component", "api"),
	})
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", cfg.Server.ListenAddress)
	if err != nil {
		return nil, fmt.Errorf("server.listen_address: %w", err)
	}
	log.WithFields(logrus.Fields{"address": l.Addr().String(), "max_connections": maxConnections}).Info("listening")
	tlsConfig, err := web.TLS()
	if err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("--web.config.file: %w", err)
	}
	warnExposed(log, cfg.Server, l.Addr(), tlsConfig != nil)
	return &daemon{cfg: cfg.Server, configFile: configFile, loaded: cfg, web: web, state: state, loop: lp, server: srv, listener: l, log: log,
		checkTelemetry: telemetryCheck(facts, clk, log)}, nil
}

// run runs the server, and the loop while this rota leads, until ctx ends, re-reading the
// token files on every value of hup. The loop stops first (it waits for the actions under way; an action cut short leaves
// its intent in the store for the next start's repair pass), then the server, so rotactl
// answers until the end; the store closes last.
func (d *daemon) run(ctx context.Context, hup <-chan os.Signal) error {
	srvCtx, stopServer := context.WithCancel(context.Background())
	defer stopServer()
	srvErr := make(chan error, 1)
	go func() { srvErr <- d.server.Serve(srvCtx, d.listener) }()
	go d.reloadTokens(srvCtx, hup)
	go d.checkTelemetry(ctx)

	loopCtx, stopLoop := context.WithCancel(ctx)
	defer stopLoop()
	loopErr := make(chan error, 1)
	go func() { loopErr <- d.state.lead.Run(loopCtx, d.loop.Run) }()

	var errs []error
	select {
	case err := <-srvErr:
		// The listener failed: stop the loop too.
		errs = append(errs, err)
		stopLoop()
		errs = append(errs, <-loopErr)
	case err := <-loopErr:
		errs = append(errs, err)
		d.log.Info("loop stopped; stopping the server")
		stopServer()
		errs = append(errs, <-srvErr)
	}
	if err := d.state.closeFn(); err != nil {
		errs = append(errs, fmt.Errorf("closing store: %w", err))
	}
	return errors.Join(errs...)
}

// warnExposed warns, loudly, about a listener that is not loopback when the webhook takes
// unauthenticated calls (anyone who reaches the address can nudge rota's passes) or when it
// speaks plain HTTP (the bearer tokens cross the network in clear).
func warnExposed(log *logrus.Entry, s config.Server, addr net.Addr, tlsOn bool) {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || tcp.IP.IsLoopback() {
		return
	}
	l := log.WithField("address", addr.String())
	if s.WebhookAuthDisabled {
		l.Warn("WEBHOOK AUTH IS DISABLED on a listener that is not loopback: anyone who reaches " +
			"this address can post alerts to rota; set server.webhook_token_file, or listen on 127.0.0.1")
	}
	if !tlsOn {
		l.Warn("plain HTTP on a listener that is not loopback: the API and webhook tokens cross the network in clear; " +
			"give --web.config.file a tls_server_config, or listen on 127.0.0.1")
	}
}

// openStore opens the store at path, making a new one only when nothing is there (the first
// start). A file that is there but empty or damaged stops rota with what is wrong and the two
// ways on: restore a backup, or move the file away to start afresh.
func openStore(path string, log *logrus.Entry) (*store.Store, error) {
	st, err := store.Open(path, store.Options{Create: true})
	var de *store.DamagedError
	if errors.As(err, &de) {
		return nil, fmt.Errorf("store: %w; rota will not start on it. To restore a backup (rotactl backup), "+
			"put it at %s; to start with a new, empty store instead (pins, maintenance, the pause and the "+
			"audit log are lost; each server's state is read again from its BMC), move the file away", err, path)
	}
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if st.Created() {
		log.WithField("path", path).Warn("no store at store.path: created a new, empty one (first start)")
	}
	if r := st.Recovered(); r != "" {
		log.WithField("path", path).Warn("store: " + r)
	}
	return st, nil
}

// exporterReady is the executor's readiness check after a boot: Prometheus scrapes the
// server's exporter and has a fresh sample from it (promfacts.Reader.Ready).
func exporterReady(facts *promfacts.Reader, clk clock.Real) executor.ReadyFunc {
	return func(ctx context.Context, node string) (bool, error) {
		return facts.Ready(ctx, node, clk.Now())
	}
}

// telemetryCheck logs, as warnings, every series a telemetry source's mapping names that
// Prometheus does not have (unknown telemetry: those servers are never idle on it), or that
// the check could not be made. Each pass looks again; rotactl explain names what it finds.
func telemetryCheck(facts *promfacts.Reader, clk clock.Real, log *logrus.Entry) func(context.Context) {
	return func(ctx context.Context) {
		lines, err := facts.CheckTelemetry(ctx, clk.Now())
		if err != nil {
			log.WithError(err).Warn("could not check the telemetry sources' series at start; each pass checks again")
			return
		}
		for _, l := range lines {
			log.Warn(l)
		}
	}
}

// ready is rota's readiness: a leader has finished one pass (its repair included), so its
// status answers with facts; a follower of an HA pair or trio is ready once it serves (it
// answers the read API from the store).
func ready(b api.Backend) func() error {
	return func() error {
		st, err := b.Status(context.Background())
		switch {
		case err != nil:
			return err
		case st.HA != nil && !st.HA.Leading:
			return nil
		case st.LastPass.IsZero():
			return errors.New("the first pass has not finished")
		}
		return nil
	}
}

// reloadTokens re-reads the token files and the web config's basic-auth users on every value
// of hup until ctx ends; what cannot be read leaves what is in force. It also says whether the
// config file changed, which it does not reload.
func (d *daemon) reloadTokens(ctx context.Context, hup <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		d.checkConfigFile()
		apiToken, webhookToken, err := tokens(d.cfg)
		if err == nil {
			err = d.server.SetTokens(apiToken, webhookToken)
		}
		if err != nil {
			d.log.WithError(err).Error("token files not reloaded; the tokens in force stay")
		} else {
			d.log.Info("token files reloaded")
		}
		if d.web == nil {
			continue
		}
		if err := d.web.ReloadUsers(); err != nil {
			d.log.WithError(err).Error("web config users not reloaded; the users in force stay")
			continue
		}
		d.log.Info("web config users reloaded")
	}
}

// checkConfigFile reads the config file again and says, as an error, that it is invalid (rota
// would not start on it), or, as a warning, that it differs from the config in force: SIGHUP
// reloads neither, and `systemctl reload rota` after an edit of rota.yml used to log only
// "token files reloaded", as if the edit were in force.
func (d *daemon) checkConfigFile() {
	l := d.log.WithField("config", d.configFile)
	cfg, err := config.Load(d.configFile)
	switch {
	case err != nil:
		l.WithError(err).Error("the config file is not valid: rota would not start on it; the config in force stays")
	case !sameConfig(cfg, d.loaded):
		l.Warn("the config file changed since start; SIGHUP reloads only the token files and the web config's users: restart rota to apply the rest (systemctl restart rota)")
	}
}

// sameConfig reports whether a and b hold the same settings (a config is plain data).
func sameConfig(a, b *config.Config) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
