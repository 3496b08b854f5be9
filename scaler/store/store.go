package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
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

// Store is the open state file. Safe for concurrent use (bbolt serialises writers).
type Store struct {
	db      *bolt.DB
	ret     Retention
	created bool
	torn    int
}

// Open opens the store at path (creating it only with opts.Create). The file is checked before
// bbolt maps it: an empty, cut-short or overwritten file is a *DamagedError, not a crash.
func Open(path string, opts Options) (*Store, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = time.Second
	}
	if opts.Retention.Keep <= 0 {
		opts.Retention.Keep = 1000
	}
	if opts.Retention.MaxAge <= 0 {
		opts.Retention.MaxAge = 30 * 24 * time.Hour
	}
	created, torn, err := precheck(path, opts)
	if err != nil {
		return nil, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.LockTimeout, ReadOnly: opts.ReadOnly})
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
	return &Store{db: db, ret: opts.Retention, created: created, torn: torn}, nil
}

// precheck opens path for reading and checks it (checkFile); a missing file is created only
// with opts.Create (created true).
func precheck(path string, opts Options) (created bool, torn int, err error) {
	f, err := os.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && opts.Create && !opts.ReadOnly:
		return true, -1, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, -1, fmt.Errorf("opening store %s: no such file", path)
	case err != nil:
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

// buckets creates rota's buckets where missing, or read-only checks they are there.
func buckets(db *bolt.DB, readOnly bool) error {
	names := []string{bucketNodes, bucketGlobal, bucketAudit}
	if readOnly {
		return db.View(func(tx *bolt.Tx) error {
			for _, b := range names {
				if tx.Bucket([]byte(b)) == nil {
					return fmt.Errorf("not a rota store: no bucket %q", b)
				}
			}
			return nil
		})
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

// Close releases the file and its lock.
func (s *Store) Close() error { return s.db.Close() }

// Update runs fn in one read-write transaction, committed (and fsynced) if fn returns nil.
func (s *Store) Update(fn func(*Tx) error) error {
	return s.db.Update(func(tx *bolt.Tx) error { return fn(&Tx{tx: tx, ret: s.ret}) })
}

// View runs fn in one read-only transaction.
func (s *Store) View(fn func(*Tx) error) error {
	return s.db.View(func(tx *bolt.Tx) error { return fn(&Tx{tx: tx, ret: s.ret}) })
}

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

// Backup writes a consistent copy of the whole file to w while rota runs (a hot backup; the
// copy opens as a store).
func (s *Store) Backup(w io.Writer) (int64, error) {
	var n int64
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("backing up store: %w", err)
	}
	return n, nil
}
