package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// ErrLocked is returned by Open when another process (another rota) holds the file's lock.
var ErrLocked = errors.New("store is locked by another process (is another rota running on this file?)")

// Bucket names.
const (
	bucketNodes  = "nodes"
	bucketGlobal = "global"
	bucketAudit  = "audit" // one sub-bucket per node, keyed by a per-node sequence
	keyGlobal    = "global"
)

// Options tune Open; the zero value takes the defaults.
type Options struct {
	// LockTimeout is how long Open waits for the file's lock (default 1s).
	LockTimeout time.Duration
	// Retention bounds the audit log.
	Retention Retention
	// ReadOnly opens an existing store without writing to it (a backup being checked); a file
	// that lacks rota's buckets is an error.
	ReadOnly bool
	// Create makes a new, empty store when nothing exists at the path (rota's first start).
	// Without it a missing file is an error. A file that exists is never replaced: one that is
	// empty, cut short or otherwise damaged is a *DamagedError, whatever Create says.
	Create bool
}

// Retention bounds the audit log per node: the newest Keep records (default 1000), none older
// than MaxAge (default 30 days) before the newest record's time.
type Retention struct {
	Keep   int
	MaxAge time.Duration
}

// Store is rota's state over a Backend: the bbolt file Open opens, or etcd (New with
// etcdstore's backend). Safe for concurrent use.
type Store struct {
	be      Backend
	ret     Retention
	created bool
	torn    int
}

// New is a store over be, with opts' retention (the other options are the bbolt file's).
// created says the backend was made empty for this start (Created).
func New(be Backend, opts Options, created bool) *Store {
	return &Store{be: be, ret: opts.Retention.withDefaults(), created: created, torn: -1}
}

func (r Retention) withDefaults() Retention {
	if r.Keep <= 0 {
		r.Keep = 1000
	}
	if r.MaxAge <= 0 {
		r.MaxAge = 30 * 24 * time.Hour
	}
	return r
}

// Open opens the store at path (creating it only with opts.Create). The file is checked before
// bbolt maps it, and every page in use is read before anything is written to it: an empty,
// cut-short, overwritten or otherwise damaged file is a *DamagedError, not a crash, and is left
// as it was. Opening a whole store writes nothing to it.
func Open(path string, opts Options) (*Store, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = time.Second
	}
	created, torn, err := precheck(path, opts)
	if err != nil {
		return nil, err
	}
	if !created {
		if err := verify(path, opts.LockTimeout); err != nil {
			return nil, err
		}
	}
	db, err := openBolt(path, opts)
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("opening store %s: %w", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	if err := buckets(db, opts.ReadOnly); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	s := New(&boltBackend{db: db}, opts, created)
	s.torn = torn
	return s, nil
}

// openBolt is bolt.Open, with a panic (a page that verify passed and yet does not read) a
// *DamagedError. verify has read the pages bbolt reads here, so none is expected; should one
// come, bbolt keeps the file open and locked until the process ends (rota stops on it).
func openBolt(path string, opts Options) (db *bolt.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, &DamagedError{Path: path, Problem: fmt.Sprintf("bbolt failed opening it: %v", r)}
		}
	}()
	return bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.LockTimeout, ReadOnly: opts.ReadOnly})
}

// precheck opens path for reading and checks it (checkFile); a missing file is created only
// with opts.Create (created true). Anything but a regular file (a folder, a named pipe, a
// device) is refused before it is opened: opening a named pipe would wait for a writer forever.
func precheck(path string, opts Options) (created bool, torn int, err error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && opts.Create && !opts.ReadOnly:
		return true, -1, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, -1, fmt.Errorf("opening store %s: no such file", path)
	case err != nil:
		return false, -1, fmt.Errorf("opening store %s: %w", path, err)
	}
	if err := notAFile(path, st.Mode()); err != nil {
		return false, -1, err
	}
	f, err := os.Open(path)
	if err != nil {
		return false, -1, fmt.Errorf("opening store %s: %w", path, err)
	}
	defer f.Close()
	_, torn, err = checkFile(path, f)
	return false, torn, err
}

// Created reports whether Open made a new, empty store (Options.Create on a missing file).
func (s *Store) Created() bool { return s.created }

// Recovered says, when one meta page did not check at Open, what bbolt fell back on: the
// other page, the last complete commit (a commit cut short by a crash leaves this, and loses
// only that commit, which never returned). Empty when both pages were whole.
func (s *Store) Recovered() string {
	if s.torn < 0 {
		return ""
	}
	return fmt.Sprintf("meta page %d did not check (a commit cut short by a crash); opened at the other, the last complete commit", s.torn)
}

// buckets creates rota's buckets where missing, or read-only checks they are there. A store
// that has them all is not written to: a bbolt commit rewrites the freelist and a meta page even
// when nothing changed.
func buckets(db *bolt.DB, readOnly bool) error {
	names := []string{bucketNodes, bucketGlobal, bucketAudit}
	var missing string
	err := db.View(func(tx *bolt.Tx) error {
		for _, b := range names {
			if tx.Bucket([]byte(b)) == nil {
				missing = b
				return nil
			}
		}
		return nil
	})
	switch {
	case err != nil:
		return err
	case missing == "":
		return nil
	case readOnly:
		return fmt.Errorf("not a rota store: no bucket %q", missing)
	}
	return db.Update(func(tx *bolt.Tx) error {
		for _, b := range names {
			if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil {
				return fmt.Errorf("creating bucket %q: %w", b, err)
			}
		}
		return nil
	})
}

// Close releases the backend (the file and its lock).
func (s *Store) Close() error { return s.be.Close() }

// Update runs fn in one read-write transaction, committed (a bbolt file: fsynced; etcd: only
// while this rota leads) if fn returns nil.
func (s *Store) Update(fn func(*Tx) error) error {
	return s.be.Update(func(kv KV) error { return fn(&Tx{kv: kv, ret: s.ret}) })
}

// View runs fn in one read-only transaction.
func (s *Store) View(fn func(*Tx) error) error {
	return s.be.View(func(kv KV) error { return fn(&Tx{kv: kv, ret: s.ret}) })
}

// Backend is what the store keeps its records in.
func (s *Store) Backend() Backend { return s.be }

// Fence returns nil when this rota may send a command now (Backend.Fence): the executor asks
// right before each BMC or job-manager command.
func (s *Store) Fence(ctx context.Context) error { return s.be.Fence(ctx) }

// UpdateNode reads node's record, lets fn change it and writes it back, in one transaction.
func (s *Store) UpdateNode(name string, fn func(*Node) error) error {
	return s.Update(func(tx *Tx) error {
		n, err := tx.Node(name)
		if err != nil {
			return err
		}
		if err := fn(&n); err != nil {
			return err
		}
		return tx.PutNode(name, n)
	})
}

// UpdateGlobal is UpdateNode for the global record.
func (s *Store) UpdateGlobal(fn func(*Global) error) error {
	return s.Update(func(tx *Tx) error {
		g, err := tx.Global()
		if err != nil {
			return err
		}
		if err := fn(&g); err != nil {
			return err
		}
		return tx.PutGlobal(g)
	})
}

// Node returns node's record (the zero Node if there is none).
func (s *Store) Node(name string) (n Node, err error) {
	err = s.View(func(tx *Tx) error { n, err = tx.Node(name); return err })
	return n, err
}

// Nodes returns every node's record by name.
func (s *Store) Nodes() (m map[string]Node, err error) {
	err = s.View(func(tx *Tx) error { m, err = tx.Nodes(); return err })
	return m, err
}

// Global returns the global record.
func (s *Store) Global() (g Global, err error) {
	err = s.View(func(tx *Tx) error { g, err = tx.Global(); return err })
	return g, err
}

// Backup writes a consistent copy of the whole store to w while rota runs (a hot backup), as a
// bbolt file whatever the backend: the copy opens as a store, for a single rota or for
// `rotactl store migrate` back into etcd.
func (s *Store) Backup(w io.Writer) (int64, error) {
	n, err := s.backup(w)
	if err != nil {
		return n, fmt.Errorf("backing up store: %w", err)
	}
	return n, nil
}

func (s *Store) backup(w io.Writer) (int64, error) {
	if b, ok := s.be.(*boltBackend); ok {
		return b.WriteTo(w)
	}
	dir, err := os.MkdirTemp("", "rota-backup-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "rota.db")
	dst, err := Open(path, Options{Create: true, Retention: s.ret})
	if err != nil {
		return 0, err
	}
	if _, err := Copy(dst, s); err != nil {
		_ = dst.Close()
		return 0, err
	}
	if err := dst.Close(); err != nil {
		return 0, err
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return io.Copy(w, f)
}
