// Package store is the scaler's durable state: one bbolt file on local disk.
//
// It keeps, per node, the lifecycle state and when it was entered, the intent (the action in
// flight, written before any side effect so that a crash can be finished or rolled back), the
// last power-on and power-off times, the power-offs of the last 24 hours (cycle cap),
// consecutive failures and the retry time, the operator's pin and maintenance flags; globally,
// the pause, each pool's last scale-up and scale-down, and the fleet's recent power-offs
// (disruption budget); and an append-only audit log of actions per node, pruned by Retention.
//
// Every write is one bbolt transaction, fsynced on commit. Records are JSON with a version
// field ("v"), so a later format can migrate old records on read; a record that does not decode
// is an error naming its bucket and key (RecordError), never silently dropped. Open takes the
// file's lock with a timeout: a second rota on the same file fails fast with ErrLocked. Open
// reads every page in use before anything is written: a damaged file is a DamagedError, left
// as it was.
package store
