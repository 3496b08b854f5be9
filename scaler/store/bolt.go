package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
)

// boltBackend is a bbolt file: the Backend of a single rota. Its file lock is its fence.
type boltBackend struct {
	db *bolt.DB
}

func (b *boltBackend) Update(fn func(KV) error) error { return b.guard(b.db.Update, fn) }

func (b *boltBackend) View(fn func(KV) error) error { return b.guard(b.db.View, fn) }

// guard runs fn in a transaction of run (db.Update or db.View). Open read every page, so a
// panic inside bbolt now (in a KV method, or the commit) is a page damaged since: it is a
// *DamagedError, not a crash that a restart policy would repeat, and the transaction is rolled
// back (bbolt does so on a panic). A read past the end of the mapping (the file cut short under
// rota) panics the same way instead of killing the process (SetPanicOnFault). A panic in fn's
// own code, outside bbolt, is a bug and is not caught.
func (b *boltBackend) guard(run func(func(*bolt.Tx) error) error, fn func(KV) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	inFn := false
	defer func() {
		if r := recover(); r != nil {
			if inFn {
				panic(r)
			}
			err = damagedAt(b.db, r)
		}
	}()
	return run(func(tx *bolt.Tx) error {
		inFn = true
		err := fn(boltKV{tx})
		inFn = false
		return err
	})
}

// damagedAt is the *DamagedError for a panic r inside bbolt on db.
func damagedAt(db *bolt.DB, r any) error {
	return &DamagedError{Path: db.Path(), Problem: fmt.Sprintf("a page does not read (bbolt: %v); it read whole when rota opened it", r)}
}

// caught, deferred by each KV method, turns a panic inside bbolt into its error (guard).
func caught(tx *bolt.Tx, err *error) {
	if r := recover(); r != nil {
		*err = damagedAt(tx.DB(), r)
	}
}

// Fence: the file's lock already keeps every other rota out.
func (b *boltBackend) Fence(context.Context) error { return nil }

func (b *boltBackend) Close() error { return b.db.Close() }

// WriteTo writes a consistent copy of the whole file to w (a hot backup).
func (b *boltBackend) WriteTo(w io.Writer) (int64, error) {
	var n int64
	err := b.db.View(func(tx *bolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}

// boltKV keeps buckets as top-level bbolt buckets, made on their first write (a store older
// than a bucket reads as having none), and each log as a bucket of one sub-bucket per name,
// keyed by the sub-bucket's sequence (8 bytes, big-endian).
type boltKV struct{ tx *bolt.Tx }

func (k boltKV) Get(bucket, key string) (_ []byte, err error) {
	defer caught(k.tx, &err)
	b := k.tx.Bucket([]byte(bucket))
	if b == nil {
		return nil, nil
	}
	return b.Get([]byte(key)), nil
}

func (k boltKV) Put(bucket, key string, value []byte) (err error) {
	defer caught(k.tx, &err)
	b, err := k.tx.CreateBucketIfNotExists([]byte(bucket))
	if err != nil {
		return err
	}
	return b.Put([]byte(key), value)
}

func (k boltKV) Delete(bucket, key string) (err error) {
	defer caught(k.tx, &err)
	b := k.tx.Bucket([]byte(bucket))
	if b == nil {
		return nil
	}
	return b.Delete([]byte(key))
}

func (k boltKV) ForEach(bucket string, fn func(key string, value []byte) error) (err error) {
	defer caught(k.tx, &err)
	b := k.tx.Bucket([]byte(bucket))
	if b == nil {
		return nil
	}
	return b.ForEach(func(key, v []byte) error { return fn(string(key), v) })
}

func (k boltKV) log(log, name string) *bolt.Bucket {
	b := k.tx.Bucket([]byte(log))
	if b == nil {
		return nil
	}
	return b.Bucket([]byte(name))
}

func (k boltKV) Append(log, name string, value []byte) (_ uint64, err error) {
	defer caught(k.tx, &err)
	lb, err := k.tx.CreateBucketIfNotExists([]byte(log))
	if err != nil {
		return 0, err
	}
	b, err := lb.CreateBucketIfNotExists([]byte(name))
	if err != nil {
		return 0, err
	}
	seq, err := b.NextSequence()
	if err != nil {
		return 0, err
	}
	return seq, b.Put(seqKey(seq), value)
}

func (k boltKV) Walk(log, name string, newestFirst bool, fn func(seq uint64, value []byte) (bool, error)) (err error) {
	defer caught(k.tx, &err)
	b := k.log(log, name)
	if b == nil {
		return nil
	}
	c := b.Cursor()
	first, next := c.First, c.Next
	if newestFirst {
		first, next = c.Last, c.Prev
	}
	for key, v := first(); key != nil; key, v = next() {
		seq, err := seqOf(log, name, key)
		if err != nil {
			return err
		}
		if more, err := fn(seq, v); err != nil || !more {
			return err
		}
	}
	return nil
}

func (k boltKV) Trim(log, name string, below uint64) (err error) {
	defer caught(k.tx, &err)
	b := k.log(log, name)
	if b == nil {
		return nil
	}
	c := b.Cursor()
	for key, _ := c.First(); key != nil; key, _ = c.First() {
		seq, err := seqOf(log, name, key)
		if err != nil {
			return err
		}
		if seq >= below {
			return nil
		}
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

func (k boltKV) Names(log string) (_ []string, err error) {
	defer caught(k.tx, &err)
	b := k.tx.Bucket([]byte(log))
	if b == nil {
		return nil, nil
	}
	var out []string
	err = b.ForEach(func(key, v []byte) error {
		if v == nil { // a sub-bucket
			out = append(out, string(key))
		}
		return nil
	})
	return out, err
}

func seqKey(seq uint64) []byte {
	k := make([]byte, 8)
	binary.BigEndian.PutUint64(k, seq)
	return k
}

func seqOf(log, name string, k []byte) (uint64, error) {
	if len(k) != 8 {
		return 0, &RecordError{Bucket: log + "/" + name, Key: fmt.Sprintf("%x", k), Err: fmt.Errorf("key is not a sequence number")}
	}
	return binary.BigEndian.Uint64(k), nil
}
