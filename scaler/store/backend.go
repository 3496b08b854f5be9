package store

import (
	"context"
	"errors"
)

// Backend is where a Store keeps its records: a bbolt file (Open, the default for one rota) or
// etcd (package etcdstore, for a highly available pair or trio). The Store writes the records'
// format, their versions, the audit log's retention and every check; a backend only keeps bytes.
//
// Guarantees every backend gives: Update applies everything fn wrote, or nothing, and
// serialises writers; View sees one consistent state; both are safe for concurrent use.
type Backend interface {
	// Update runs fn in one read-write transaction and applies its writes atomically if fn
	// returns nil. An etcd backend applies them only while this rota leads (ErrNotLeader
	// otherwise): the write is fenced by the leader's lease.
	Update(fn func(KV) error) error
	// View runs fn in one read-only transaction.
	View(fn func(KV) error) error
	// Fence returns nil when this process may send a command to a BMC or the job manager now:
	// always for a bbolt file (its lock keeps other rotas out); for etcd, only while this rota
	// holds the leader's lease, as etcd confirms at the call. The executor calls it right
	// before every command.
	Fence(ctx context.Context) error
	// Close releases the backend.
	Close() error
}

// KV is one transaction of a Backend: buckets of keyed values, and logs (append-only
// sequences of values per name, for the audit log). Valid only inside the function given to
// Update or View; writes are refused in View. Reads see the transaction's own writes.
type KV interface {
	// Get returns the value of key in bucket, nil when there is none: a key holding an empty
	// value is an empty, non-nil value (a damaged record, not a missing one).
	Get(bucket, key string) ([]byte, error)
	// Put sets key of bucket to value.
	Put(bucket, key string, value []byte) error
	// Delete removes key of bucket; a key not there is no error.
	Delete(bucket, key string) error
	// ForEach calls fn for every key of bucket, in no particular order; an error from fn stops
	// it and is returned.
	ForEach(bucket string, fn func(key string, value []byte) error) error
	// Append adds value to the end of the log name of log and returns its sequence number,
	// greater than every other entry's.
	Append(log, name string, value []byte) (uint64, error)
	// Walk calls fn for each entry of the log name of log in sequence order, newest first when
	// newestFirst, until fn returns false or an error.
	Walk(log, name string, newestFirst bool, fn func(seq uint64, value []byte) (bool, error)) error
	// Trim deletes the entries of the log name of log whose sequence number is below seq.
	Trim(log, name string, below uint64) error
	// Names returns the names with entries in log.
	Names(log string) ([]string, error)
}

// ErrNotLeader is wrapped by a write or a fence refused because this rota does not hold the
// leader's lease: it is a follower, was deposed, or cannot reach etcd.
var ErrNotLeader = errors.New("this rota does not hold the leader's lease")
