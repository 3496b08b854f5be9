package store

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/rotahq/rota/scaler/learn"
)

// bucketLearned holds what rota learned of each pool (package learn), one record per pool.
// Stores written before it existed have no such bucket; it is made on the first write.
const bucketLearned = "learned"

// learnedV1 is the on-disk form: the record version, the statistics' own format version
// (learn.Version) and the statistics.
type learnedV1 struct {
	V      int         `json:"v"`
	Format int         `json:"format"`
	Pool   *learn.Pool `json:"pool"`
}

// Learned returns pool's statistics, or nil when there are none. Statistics of an older
// format are none (they are relearned); a record that does not decode, of a newer format, or
// whose tables do not check is a *RecordError, and the record is left as it is.
func (t *Tx) Learned(pool string) (*learn.Pool, error) {
	return getRecord(t.kv, bucketLearned, pool, decodeLearned)
}

// decodeFormatted decodes a record of something learned into r, whose own format, at
// *format once decoded, this build reads at want: older is true for an older one (it is
// relearned), a newer one is an error naming what.
func decodeFormatted(b []byte, r any, format *int, want int, what string) (older bool, err error) {
	if _, err := version(b); err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, r); err != nil {
		return false, fmt.Errorf("decoding: %w", err)
	}
	if *format > want {
		return false, fmt.Errorf("%w: %s format %d (this build reads %d)", ErrVersion, what, *format, want)
	}
	return *format < want, nil
}

func decodeLearned(b []byte) (*learn.Pool, error) {
	var r learnedV1
	switch older, err := decodeFormatted(b, &r, &r.Format, learn.Version, "statistics"); {
	case err != nil || older:
		return nil, err
	case r.Pool == nil:
		return nil, fmt.Errorf("decoding: no statistics")
	}
	if err := r.Pool.Check(); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	return r.Pool, nil
}

// PutLearned writes pool's statistics.
func (t *Tx) PutLearned(pool string, p *learn.Pool) error {
	if pool == "" || p == nil {
		return fmt.Errorf("writing statistics of pool %q: pool and statistics are required", pool)
	}
	return putRecord(t.kv, bucketLearned, pool, "statistics of pool "+pool, learnedV1{V: recordVersion, Format: learn.Version, Pool: p})
}

// Learned reads every pool's statistics of names; a pool whose record is damaged is in bad
// with its error (and not in the statistics).
func (s *Store) Learned(names []string) (stats learn.Stats, bad map[string]error, err error) {
	stats.Pools, bad, err = readPools(s, names, (*Tx).Learned)
	return stats, bad, err
}

// readPools reads one record of each pool of names with get: those that are none are left out,
// those that do not read are in bad with their error.
func readPools[T any](s *Store, names []string, get func(*Tx, string) (*T, error)) (got map[string]*T, bad map[string]error, err error) {
	got = map[string]*T{}
	err = s.View(func(tx *Tx) error {
		for _, n := range names {
			v, verr := get(tx, n)
			switch {
			case verr != nil:
				if bad == nil {
					bad = map[string]error{}
				}
				bad[n] = verr
			case v != nil:
				got[n] = v
			}
		}
		return nil
	})
	return got, bad, err
}

// writePools writes each record of recs but those in skip with put, each pool in a transaction
// of its own: a pool's statistics are some 50 KB, and an etcd transaction holds at most
// 1.5 MiB (--max-request-bytes) and 100 writes, so all pools in one would be refused on a
// fleet of some 30 pools. It stops at the first that fails.
func writePools[T any](s *Store, recs map[string]*T, skip map[string]error, put func(*Tx, string, *T) error) error {
	for _, n := range slices.Sorted(maps.Keys(recs)) {
		if _, no := skip[n]; no {
			continue
		}
		if err := s.Update(func(tx *Tx) error { return put(tx, n, recs[n]) }); err != nil {
			return err
		}
	}
	return nil
}

// PutLearned writes the statistics of every pool of stats but those in skip, a transaction
// each.
func (s *Store) PutLearned(stats learn.Stats, skip map[string]error) error {
	return writePools(s, stats.Pools, skip, (*Tx).PutLearned)
}

// bucketIdle holds each pool's learned idle periods (learn.Idle, policy.break_even.idle_periods),
// one record per pool, apart from the statistics: either reads, or is relearned, alone.
const bucketIdle = "learned_idle"

// idleV1 is the on-disk form of a pool's idle periods: the record version, their format
// (learn.IdleVersion) and their non-zero cells only (most of the table is zero).
type idleV1 struct {
	V      int               `json:"v"`
	Format int               `json:"format"`
	Counts []learn.IdleCount `json:"counts"`
}

// LearnedIdle returns pool's idle periods, or nil when there are none. Like Learned, those of
// an older format are none; a record that does not decode, of a newer format, or whose cells
// do not check is a *RecordError, and the record is left as it is.
func (t *Tx) LearnedIdle(pool string) (*learn.Idle, error) {
	return getRecord(t.kv, bucketIdle, pool, decodeIdle)
}

func decodeIdle(b []byte) (*learn.Idle, error) {
	var r idleV1
	if older, err := decodeFormatted(b, &r, &r.Format, learn.IdleVersion, "idle periods"); err != nil || older {
		return nil, err
	}
	d, err := learn.IdleFromCounts(r.Counts)
	if err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	return d, nil
}

// PutLearnedIdle writes pool's idle periods.
func (t *Tx) PutLearnedIdle(pool string, d *learn.Idle) error {
	if pool == "" || d == nil {
		return fmt.Errorf("writing idle periods of pool %q: pool and periods are required", pool)
	}
	return putRecord(t.kv, bucketIdle, pool, "idle periods of pool "+pool, idleV1{V: recordVersion, Format: learn.IdleVersion, Counts: d.Counts()})
}

// LearnedIdle reads every pool's idle periods of names, as Learned reads the statistics.
func (s *Store) LearnedIdle(names []string) (idle map[string]*learn.Idle, bad map[string]error, err error) {
	return readPools(s, names, (*Tx).LearnedIdle)
}

// PutLearnedIdle writes the idle periods of every pool of idle but those in skip, a
// transaction each.
func (s *Store) PutLearnedIdle(idle map[string]*learn.Idle, skip map[string]error) error {
	return writePools(s, idle, skip, (*Tx).PutLearnedIdle)
}
