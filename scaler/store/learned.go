package store

import (
	"encoding/json"
	"fmt"

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

func decodeLearned(b []byte) (*learn.Pool, error) {
	if _, err := version(b); err != nil {
		return nil, err
	}
	var r learnedV1
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	switch {
	case r.Format < learn.Version:
		return nil, nil
	case r.Format > learn.Version:
		return nil, fmt.Errorf("%w: statistics format %d (this build reads %d)", ErrVersion, r.Format, learn.Version)
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
	stats.Pools = map[string]*learn.Pool{}
	err = s.View(func(tx *Tx) error {
		for _, n := range names {
			p, perr := tx.Learned(n)
			switch {
			case perr != nil:
				if bad == nil {
					bad = map[string]error{}
				}
				bad[n] = perr
			case p != nil:
				stats.Pools[n] = p
			}
		}
		return nil
	})
	return stats, bad, err
}

// PutLearned writes the statistics of every pool of stats but those in skip, in one
// transaction.
func (s *Store) PutLearned(stats learn.Stats, skip map[string]error) error {
	return s.Update(func(tx *Tx) error {
		for n, p := range stats.Pools {
			if _, no := skip[n]; no {
				continue
			}
			if err := tx.PutLearned(n, p); err != nil {
				return err
			}
		}
		return nil
	})
}
