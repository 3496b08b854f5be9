package store

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// AppendAudit adds r to its node's audit log and prunes that log to the Retention: records
// beyond the newest Keep, and records older than MaxAge before r.Time, are deleted.
func (t *Tx) AppendAudit(r AuditRecord) error {
	if r.Node == "" {
		return fmt.Errorf("appending audit record: node is required")
	}
	b, err := t.tx.Bucket([]byte(bucketAudit)).CreateBucketIfNotExists([]byte(r.Node))
	if err != nil {
		return fmt.Errorf("appending audit record for %s: %w", r.Node, err)
	}
	seq, err := b.NextSequence()
	if err != nil {
		return fmt.Errorf("appending audit record for %s: %w", r.Node, err)
	}
	v, err := encode(auditV1{V: recordVersion, AuditRecord: r})
	if err != nil {
		return fmt.Errorf("appending audit record for %s: %w", r.Node, err)
	}
	if err := b.Put(seqKey(seq), v); err != nil {
		return fmt.Errorf("appending audit record for %s: %w", r.Node, err)
	}
	return t.prune(b, r, seq)
}

// prune deletes the oldest records of one node's log. Keys are a sequence, so the records kept
// are always a contiguous newest range and pruning walks from the oldest end only.
func (t *Tx) prune(b *bolt.Bucket, newest AuditRecord, seq uint64) error {
	cutoff := newest.Time.Add(-t.ret.MaxAge)
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.First() {
		s, err := seqOf(newest.Node, k)
		if err != nil {
			return err
		}
		if s+uint64(t.ret.Keep) > seq {
			r, err := decodeAudit(v)
			if err != nil {
				return &RecordError{Bucket: bucketAudit + "/" + newest.Node, Key: fmt.Sprint(s), Err: err}
			}
			if !r.Time.Before(cutoff) {
				return nil
			}
		}
		if err := c.Delete(); err != nil {
			return fmt.Errorf("pruning audit log of %s: %w", newest.Node, err)
		}
	}
	return nil
}

// Audit returns up to limit of node's audit records, newest first (limit <= 0: all).
func (t *Tx) Audit(node string, limit int) ([]AuditRecord, error) {
	b := t.tx.Bucket([]byte(bucketAudit)).Bucket([]byte(node))
	if b == nil {
		return nil, nil
	}
	var out []AuditRecord
	c := b.Cursor()
	for k, v := c.Last(); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Prev() {
		s, err := seqOf(node, k)
		if err != nil {
			return nil, err
		}
		r, err := decodeAudit(v)
		if err != nil {
			return nil, &RecordError{Bucket: bucketAudit + "/" + node, Key: fmt.Sprint(s), Err: err}
		}
		out = append(out, r)
	}
	return out, nil
}

// Audit is Tx.Audit in its own read transaction.
func (s *Store) Audit(node string, limit int) (out []AuditRecord, err error) {
	err = s.View(func(tx *Tx) error { out, err = tx.Audit(node, limit); return err })
	return out, err
}

// AppendAudit is Tx.AppendAudit in its own transaction.
func (s *Store) AppendAudit(r AuditRecord) error {
	return s.Update(func(tx *Tx) error { return tx.AppendAudit(r) })
}

func seqKey(seq uint64) []byte {
	k := make([]byte, 8)
	binary.BigEndian.PutUint64(k, seq)
	return k
}

func seqOf(node string, k []byte) (uint64, error) {
	if len(k) != 8 {
		return 0, &RecordError{Bucket: bucketAudit + "/" + node, Key: fmt.Sprintf("%x", k), Err: fmt.Errorf("key is not a sequence number")}
	}
	return binary.BigEndian.Uint64(k), nil
}
