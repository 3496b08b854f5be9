package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/alecthomas/kingpin/v2"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/store"
	"github.com/rotahq/rota/scaler/store/etcdstore"
)

type migrateFlags struct {
	configFile string
	to         string
	from       string
	output     string
}

// registerStore adds `rotactl store migrate --to etcd|bbolt`.
func registerStore(app *kingpin.Application, cmds map[string]command) {
	f := &migrateFlags{}
	st := app.Command("store", "rota's store.")
	c := st.Command("migrate", "Move a stopped fleet's store between a bbolt file and etcd. The config is the fleet's with store.backend etcd; no rota may run.")
	c.Flag("config.file", "rota's config file (store.backend etcd: the etcd the store moves into or out of).").Default("/etc/rota/rota.yml").StringVar(&f.configFile)
	c.Flag("to", "Where the store goes: etcd (from --from, default store.path) or bbolt (into --output, default store.path).").Required().EnumVar(&f.to, "etcd", "bbolt")
	c.Flag("from", "The bbolt file to move into etcd (default store.path).").StringVar(&f.from)
	c.Flag("output", "The bbolt file to write from etcd (default store.path); it must not exist.").StringVar(&f.output)
	cmds[c.FullCommand()] = func(ctx context.Context, e env) int { return runMigrate(ctx, e, f) }
}

func runMigrate(ctx context.Context, e env, f *migrateFlags) int {
	cfg, err := config.Load(f.configFile)
	if err != nil {
		fmt.Fprintln(e.stderr, "rotactl:", err)
		return 1
	}
	if cfg.Store.Backend != config.BackendEtcd {
		fmt.Fprintf(e.stderr, "rotactl: %s: store.backend is %s; migrate reads the etcd settings of a fleet with store.backend etcd\n", f.configFile, cfg.Store.Backend)
		return 2
	}
	cli, err := etcdstore.ConnectConfig(ctx, cfg.Store.Etcd)
	if err != nil {
		fmt.Fprintln(e.stderr, "rotactl:", err)
		return 1
	}
	defer cli.Close()
	file := cfg.Store.Path
	var n int
	if f.to == "etcd" {
		if f.from != "" {
			file = f.from
		}
		n, err = toEtcd(ctx, e, cfg, cli, file)
	} else {
		if f.output != "" {
			file = f.output
		}
		n, err = toBolt(ctx, e, cfg, cli, file)
	}
	if err != nil {
		fmt.Fprintln(e.stderr, "rotactl: store not migrated:", err)
		return 1
	}
	if f.to == "etcd" {
		fmt.Fprintf(e.stdout, "moved %d records and audit entries from %s into etcd under %s (fleet %s)\n", n, file, cfg.Store.Etcd.EtcdPrefix(), cfg.Store.Etcd.Fleet)
	} else {
		fmt.Fprintf(e.stdout, "moved %d records and audit entries from etcd under %s into %s\n", n, cfg.Store.Etcd.EtcdPrefix(), file)
	}
	return 0
}

func etcdOpts(e env, cfg *config.Config) etcdstore.OpenOptions {
	return etcdstore.OpenOptions{Prefix: cfg.Store.Etcd.EtcdPrefix(), Fleet: cfg.Store.Etcd.Fleet, By: "rotactl",
		RequestTimeout: time.Duration(cfg.Store.Etcd.RequestTimeout), Clock: e.clock}
}

// toEtcd imports the bbolt file (opened read-only: a rota holding it is refused).
func toEtcd(ctx context.Context, e env, cfg *config.Config, cli *clientv3.Client, file string) (int, error) {
	src, err := store.Open(file, store.Options{ReadOnly: true, LockTimeout: time.Second})
	if err != nil {
		return 0, err
	}
	defer src.Close()
	return etcdstore.Import(ctx, cli, etcdOpts(e, cfg), src)
}

// toBolt writes the etcd store of a stopped fleet into a new bbolt file.
func toBolt(ctx context.Context, e env, cfg *config.Config, cli *clientv3.Client, file string) (int, error) {
	src, err := openEtcdReadOnly(ctx, e, cfg, cli)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	return writeBolt(src, file)
}

// writeBolt copies src into a new bbolt file at file. The copy is written beside it, in a
// folder of its own, and linked to file only once it is whole and closed: a copy that fails
// leaves no file behind, and one cut short (rotactl killed, the host lost) leaves at most the
// folder .FILE.migrating-*, never a partial store at file that a rota would start on.
func writeBolt(src *store.Store, file string) (int, error) {
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("%s exists; migrate writes a new file only", file)
	}
	dir, err := os.MkdirTemp(filepath.Dir(file), "."+filepath.Base(file)+".migrating-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, filepath.Base(file))
	dst, err := store.Open(tmp, store.Options{Create: true})
	if err != nil {
		return 0, err
	}
	n, err := store.Copy(dst, src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	// A link, not a rename: a file that appeared at file meanwhile is kept, and refused.
	switch err := os.Link(tmp, file); {
	case errors.Is(err, os.ErrExist):
		return 0, fmt.Errorf("%s exists; migrate writes a new file only", file)
	case err != nil:
		return 0, err
	}
	return n, nil
}

// openEtcdReadOnly opens the fleet's etcd store for reading, when no rota runs on it:
// rotactl never acts on a store beside a running rota.
func openEtcdReadOnly(ctx context.Context, e env, cfg *config.Config, cli *clientv3.Client) (*store.Store, error) {
	if err := noRotaRuns(ctx, cfg, cli); err != nil {
		return nil, err
	}
	o := etcdOpts(e, cfg)
	o.Guard = etcdstore.ReadOnly{}
	s, _, err := etcdstore.Open(ctx, cli, o)
	return s, err
}

// noRotaRuns refuses while any rota of the fleet takes part in its etcd election.
func noRotaRuns(ctx context.Context, cfg *config.Config, cli *clientv3.Client) error {
	prefix := cfg.Store.Etcd.EtcdPrefix()
	switch n, err := etcdstore.Candidates(ctx, cli, prefix); {
	case err != nil:
		return err
	case n > 0:
		return fmt.Errorf("%d rotas take part in the election under %s: a rota runs (stop every rota of the fleet first)", n, prefix)
	}
	return nil
}

// openStopped opens the store the config names for writing, only while no rota holds it (a
// bbolt file's lock, kept until it is closed; etcd: no rota in the fleet's election, and each
// write conditioned on none having joined), and returns how to close it: rotactl never writes
// beside a running rota. Close it soon: a rota starting meanwhile waits for the file's lock
// only briefly.
func openStopped(ctx context.Context, e env, cfg *config.Config) (*store.Store, func(), error) {
	if cfg.Store.Backend != config.BackendEtcd {
		s, err := store.Open(cfg.Store.Path, store.Options{LockTimeout: time.Second})
		if err != nil {
			return nil, nil, err
		}
		return s, func() { _ = s.Close() }, nil
	}
	cli, err := etcdstore.ConnectConfig(ctx, cfg.Store.Etcd)
	if err != nil {
		return nil, nil, err
	}
	var s *store.Store
	if err = noRotaRuns(ctx, cfg, cli); err == nil {
		s, err = etcdstore.OpenStopped(ctx, cli, etcdOpts(e, cfg))
	}
	if err != nil {
		_ = cli.Close()
		return nil, nil, err
	}
	return s, func() { _ = s.Close(); _ = cli.Close() }, nil
}
