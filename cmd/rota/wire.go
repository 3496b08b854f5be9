package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/wire"
	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/jobs"
	jobsexec "github.com/rotahq/rota/scaler/jobs/exec"
	"github.com/rotahq/rota/scaler/jobs/kubernetes"
	"github.com/rotahq/rota/scaler/jobs/none"
	"github.com/rotahq/rota/scaler/jobs/slurm"
)

// tokens reads the API and webhook token files named by the config (at start, and again on
// SIGHUP).
func tokens(s config.Server) (apiToken, webhookToken api.Token, err error) {
	if s.APITokenFile != "" {
		if apiToken, err = api.ReadTokenFile(s.APITokenFile); err != nil {
			return api.Token{}, api.Token{}, fmt.Errorf("server.api_token_file: %w", err)
		}
	}
	if !s.WebhookAuthDisabled {
		if webhookToken, err = api.ReadTokenFile(s.WebhookTokenFile); err != nil {
			return api.Token{}, api.Token{}, fmt.Errorf("server.webhook_token_file: %w", err)
		}
	}
	return apiToken, webhookToken, nil
}

// newPower builds the BMC controller for every node of the inventory.
func newPower(cfg *config.Config, log *logrus.Entry, clock bmc.Clock, reg prometheus.Registerer) (*bmc.Controller, error) {
	c, err := wire.Power(cfg, log.WithField("component", "bmc"), clock, reg, 0)
	if err != nil {
		return nil, fmt.Errorf("bmc: %w", err)
	}
	return c, nil
}

// newJobs builds the job-manager adapter named by jobs.adapter.
func newJobs(cfg *config.Config, clk clock.Real, log *logrus.Entry) (jobs.Manager, error) {
	log = log.WithField("component", "jobs")
	switch cfg.Jobs.Adapter {
	case "none":
		log.Warn("jobs.adapter is none: idleness rests on telemetry alone, and a job that uses no CPU or GPU for the whole idle window can lose its server; use a real adapter where jobs run")
		return none.Manager{}, nil
	case "exec":
		return jobsexec.New(jobsexec.Options{
			Commands: cfg.Jobs.Exec,
			Timeout:  time.Duration(cfg.Jobs.Timeout),
			Classify: cfg.Classify,
			Log:      log,
		})
	case "slurm":
		return slurm.NewFromConfig(cfg, log), nil
	case "kubernetes":
		return kubernetes.NewFromConfig(cfg, clk, log)
	}
	return nil, errors.New("jobs.adapter " + cfg.Jobs.Adapter + " is not built in")
}

// newWatch is the adapter's pending-work watch: Slurm's pending-queue read, exec's
// watch_command when configured; nil when the adapter has none or jobs.watch_interval is 0.
func newWatch(cfg *config.Config, jm jobs.Manager) jobs.Watcher {
	if cfg.Jobs.WatchInterval <= 0 {
		return nil
	}
	switch m := jm.(type) {
	case *jobsexec.Manager:
		return m.Watcher()
	case jobs.Watcher:
		return m
	}
	return nil
}

// prepareJobs readies Slurm before the first pass, each step bounded by jobs.timeout, logged
// and never fatal (the loop works without them): the node weights from the pools' cost when
// jobs.slurm.weights is on, and a check of the pools' profiles against what Slurm reports.
func prepareJobs(cfg *config.Config, jm jobs.Manager, log *logrus.Entry) {
	sm, ok := jm.(*slurm.Manager)
	if !ok {
		return
	}
	log = log.WithField("component", "jobs")
	timeout := time.Duration(cfg.Jobs.Timeout)
	if cfg.Jobs.Slurm.Weights {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := sm.SetWeights(ctx, slurm.Weights(cfg))
		cancel()
		if err != nil {
			log.WithError(err).Warn("slurm node weights not set")
		} else {
			log.Info("slurm node weights set from the pools' cost (keep them in slurm.conf: rotactl slurm weights)")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	problems, err := sm.Check(ctx, cfg)
	cancel()
	if err != nil {
		log.WithError(err).Warn("pools' profiles not checked against slurm")
	}
	for _, p := range problems {
		log.WithField("problem", p).Warn("a pool's profile disagrees with slurm: rota may wake a server a job cannot use")
	}
}
