package store

import (
	"errors"
	"fmt"
)

// defaultBatch is how many writes a copy puts in one transaction of a backend that sets no
// limit of its own (a bbolt file).
const defaultBatch = 10000

// writeLimiter is a Backend that takes at most MaxWrites writes in one transaction (etcd).
type writeLimiter interface{ MaxWrites() int }

// Copy writes every record and audit entry of src into dst, which must hold none, and returns
// how many it wrote (rotactl store migrate; the backup of an etcd store). Each value is checked
// as it is read: one that does not decode stops the copy with a *RecordError naming it. dst
// is written in batches (an etcd transaction takes a hundred writes), so a copy that fails
// part-way leaves part of src in dst; the audit logs keep their order, not their sequence
// numbers.
func Copy(dst, src *Store) (int, error) {
	if err := dst.empty(); err != nil {
		return 0, err
	}
	b := &batch{dst: dst, max: defaultBatch}
	if l, ok := dst.be.(writeLimiter); ok {
		b.max = l.MaxWrites()
	}
	err := src.be.View(func(kv KV) error {
		for _, rb := range recordBuckets() {
			err := kv.ForEach(rb.name, func(k string, v []byte) error {
				if err := rb.check(v); err != nil {
					return &RecordError{Bucket: rb.name, Key: k, Err: err}
				}
				return b.add(func(d KV) error { return d.Put(rb.name, k, v) })
			})
			if err != nil {
				return err
			}
		}
		names, err := kv.Names(bucketAudit)
		if err != nil {
			return err
		}
		for _, n := range names {
			err := kv.Walk(bucketAudit, n, false, func(seq uint64, v []byte) (bool, error) {
				if _, err := decodeAudit(v); err != nil {
					return false, &RecordError{Bucket: bucketAudit + "/" + n, Key: fmt.Sprint(seq), Err: err}
				}
				return true, b.add(func(d KV) error { _, err := d.Append(bucketAudit, n, v); return err })
			})
			if err != nil {
				return err
			}
		}
		return b.flush()
	})
	if err != nil {
		return b.n, fmt.Errorf("copying the store: %w", err)
	}
	return b.n, nil
}

// errNotEmpty stops the walk of empty at the first record.
var errNotEmpty = errors.New("the destination store is not empty")

// empty returns an error when the store holds any record or audit entry.
func (s *Store) empty() error {
	return s.be.View(func(kv KV) error {
		for _, rb := range recordBuckets() {
			err := kv.ForEach(rb.name, func(k string, _ []byte) error {
				return fmt.Errorf("%w: it holds %s/%s", errNotEmpty, rb.name, k)
			})
			if err != nil {
				return err
			}
		}
		names, err := kv.Names(bucketAudit)
		if err == nil && len(names) > 0 {
			err = fmt.Errorf("%w: it holds the audit log of %s", errNotEmpty, names[0])
		}
		return err
	})
}

// batch gathers writes into transactions of at most max writes. The values it holds are the
// source's, valid while its read transaction lasts: flush runs inside it.
type batch struct {
	dst    *Store
	max, n int
	writes []func(KV) error
}

func (b *batch) add(w func(KV) error) error {
	b.writes = append(b.writes, w)
	if len(b.writes) >= b.max {
		return b.flush()
	}
	return nil
}

func (b *batch) flush() error {
	if len(b.writes) == 0 {
		return nil
	}
	err := b.dst.be.Update(func(kv KV) error {
		for _, w := range b.writes {
			if err := w(kv); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	b.n += len(b.writes)
	b.writes = b.writes[:0]
	return nil
}
