package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"

	bolt "go.etcd.io/bbolt"
)

// boltBackend is a bbolt file: the Backend of a single rota. Its file lock is its fence.
type boltBackend struct {
	db *bolt.DB
}

func (b *boltBackend) Update(fn func(KV) error) error {
	return b.db.Update(func(tx *bolt.Tx) error { return fn(boltKV{tx}) })
}

func (b *boltBackend) View(fn func(KV) error) error {
	return b.db.View(func(tx *bolt.Tx) error { return fn(boltKV{tx}) })
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

func (k boltKV) Get(bucket, key string) ([]byte, error) {
	b := k.tx.Bucket([]byte(bucket))
	if b == nil {
		return nil, nil
	}
	return b.Get([]byte(key)), nil
}

func (k boltKV) Put(bucket, key string, value []byte) error {
	b, err := k.tx.CreateBucketIfNotExists([]byte(bucket))
	if err != nil {
		return err
	}
	return b.Put([]byte(key), value)
}

func (k boltKV) ForEach(bucket string, fn func(key string, value []byte) error) error {
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

func (k boltKV) Append(log, name string, value []byte) (uint64, error) {
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

func (k boltKV) Walk(log, name string, newestFirst bool, fn func(seq uint64, value []byte) (bool, error)) error {
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

func (k boltKV) Trim(log, name string, below uint64) error {
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

func (k boltKV) Names(log string) ([]string, error) {
	b := k.tx.Bucket([]byte(log))
	if b == nil {
		return nil, nil
	}
	var out []string
	err := b.ForEach(func(key, v []byte) error {
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
