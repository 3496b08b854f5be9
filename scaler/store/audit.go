package store

import (
	"fmt"
)

// AppendAudit adds r to its node's audit log and prunes that log to the Retention: records
// beyond the newest Keep, and records older than MaxAge before r.Time, are deleted.
func (t *Tx) AppendAudit(r AuditRecord) error {
	if r.Node == "" {
		return fmt.Errorf("appending audit record: node is required")
	}
	v, err := encode(auditV1{V: recordVersion, AuditRecord: r})
	if err != nil {
		return fmt.Errorf("appending audit record for %s: %w", r.Node, err)
	}
	seq, err := t.kv.Append(bucketAudit, r.Node, v)
	if err != nil {
		return fmt.Errorf("appending audit record for %s: %w", r.Node, err)
	}
	return t.prune(r, seq)
}

// prune deletes the oldest records of one node's log. Sequence numbers grow, so the records
// kept are always a contiguous newest range: the walk from the oldest end finds where it
// starts, and one trim deletes what lies before.
func (t *Tx) prune(newest AuditRecord, seq uint64) error {
	cutoff := newest.Time.Add(-t.ret.MaxAge)
	keep, passed := seq, false
	err := t.kv.Walk(bucketAudit, newest.Node, false, func(s uint64, v []byte) (bool, error) {
		if s+uint64(t.ret.Keep) > seq {
			r, err := decodeAudit(v)
			if err != nil {
				return false, &RecordError{Bucket: bucketAudit + "/" + newest.Node, Key: fmt.Sprint(s), Err: err}
			}
			if !r.Time.Before(cutoff) {
				keep = s
				return false, nil
			}
		}
		passed = true
		return true, nil
	})
	if err != nil || !passed {
		return err
	}
	if err := t.kv.Trim(bucketAudit, newest.Node, keep); err != nil {
		return fmt.Errorf("pruning audit log of %s: %w", newest.Node, err)
	}
	return nil
}

// Audit returns up to limit of node's audit records, newest first (limit <= 0: all).
func (t *Tx) Audit(node string, limit int) ([]AuditRecord, error) {
	var out []AuditRecord
	err := t.kv.Walk(bucketAudit, node, true, func(s uint64, v []byte) (bool, error) {
		if limit > 0 && len(out) >= limit {
			return false, nil
		}
		r, err := decodeAudit(v)
		if err != nil {
			return false, &RecordError{Bucket: bucketAudit + "/" + node, Key: fmt.Sprint(s), Err: err}
		}
		out = append(out, r)
		return true, nil
	})
	return out, err
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
