package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/ha"
	"github.com/rotahq/rota/scaler/store"
	"github.com/rotahq/rota/scaler/store/etcdstore"
)

// leadership is how the daemon runs its loop: only while it leads (ha.Elector on etcd;
// ha.Standalone, always, on a bbolt file).
type leadership interface {
	Run(ctx context.Context, lead func(context.Context) error) error
	Leading() bool
	Status() api.HAStatus
}

// state is the store and leadership the daemon runs on; closeFn releases them (the store
// first).
type state struct {
	store   *store.Store
	lead    leadership
	closeFn func() error
}

// openState opens the store the config names: the bbolt file, or etcd with the election.
func openState(ctx context.Context, cfg *config.Config, log *logrus.Entry, clk clock.Real, reg prometheus.Registerer) (*state, error) {
	name := instanceName(cfg.Store.Etcd.Name)
	if cfg.Store.Backend != config.BackendEtcd {
		st, err := openStore(cfg.Store.Path, log)
		if err != nil {
			return nil, err
		}
		lead, err := ha.NewStandalone(name, reg)
		if err != nil {
			_ = st.Close()
			return nil, err
		}
		return &state{store: st, lead: lead, closeFn: st.Close}, nil
	}
	return openEtcd(ctx, cfg, name, log, clk, reg)
}

// openEtcd connects to etcd, checks the fleet marker under the prefix and builds the elector
// every write and command is fenced on. Any failure (etcd unreachable, TLS refused, another
// fleet's prefix) stops rota before it acts.
func openEtcd(ctx context.Context, cfg *config.Config, name string, log *logrus.Entry, clk clock.Real, reg prometheus.Registerer) (*state, error) {
	e := cfg.Store.Etcd
	cli, err := etcdstore.ConnectConfig(ctx, e)
	if err != nil {
		return nil, err
	}
	prefix := e.EtcdPrefix()
	el, err := ha.New(ha.Options{
		Client: cli, Prefix: prefix, Fleet: e.Fleet, Self: ha.Info{Name: name, URL: e.AdvertiseURL, Config: cfg.FleetDigest()},
		TTL: time.Duration(e.LeaseTTL), RequestTimeout: time.Duration(e.RequestTimeout),
		Clock: clk, Log: log.WithField("component", "ha"), Registerer: reg,
	})
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	st, created, err := etcdstore.Open(ctx, cli, etcdstore.OpenOptions{
		Prefix: prefix, Fleet: e.Fleet, By: name, Guard: el,
		RequestTimeout: time.Duration(e.RequestTimeout), Clock: clk, Create: true,
	})
	if err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	l := log.WithFields(logrus.Fields{"prefix": prefix, "fleet": e.Fleet, "name": name})
	if created {
		l.Warn("no fleet state under store.etcd.prefix: wrote the fleet marker of a new, empty store (first start)")
	}
	l.Info("store in etcd; joining the leader election")
	return &state{store: st, lead: el, closeFn: func() error {
		return errors.Join(st.Close(), cli.Close())
	}}, nil
}

// instanceName is this rota's name in the election: the config's, else the host name.
func instanceName(configured string) string {
	if configured != "" {
		return configured
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "rota"
}
