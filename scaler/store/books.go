package store

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/rotahq/rota/scaler/cost"
)

// The books (package cost): one record, rewritten after every pass.
const (
	bucketBooks = "books"
	keyBooks    = "books"
)

// Books is the cost counters as closed up to At.
type Books struct {
	At       time.Time      `json:"at"`
	Counters []cost.Counter `json:"counters"`
}

type booksV1 struct {
	V int `json:"v"`
	Books
}

// Books returns the books (the zero Books when none were ever written).
func (s *Store) Books() (b Books, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte(bucketBooks))
		if bk == nil {
			return nil // a store from before the books, opened read-only
		}
		raw := bk.Get([]byte(keyBooks))
		if raw == nil {
			return nil
		}
		if _, err := version(raw); err != nil {
			return &RecordError{Bucket: bucketBooks, Key: keyBooks, Err: err}
		}
		var r booksV1
		if err := json.Unmarshal(raw, &r); err != nil {
			return &RecordError{Bucket: bucketBooks, Key: keyBooks, Err: fmt.Errorf("decoding: %w", err)}
		}
		b = r.Books
		return nil
	})
	return b, err
}

// PutBooks writes the books in one transaction (fsynced on commit).
func (s *Store) PutBooks(b Books) error {
	raw, err := encode(booksV1{V: recordVersion, Books: b})
	if err != nil {
		return fmt.Errorf("writing the books: %w", err)
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists([]byte(bucketBooks))
		if err != nil {
			return fmt.Errorf("writing the books: %w", err)
		}
		if err := bk.Put([]byte(keyBooks), raw); err != nil {
			return fmt.Errorf("writing the books: %w", err)
		}
		return nil
	})
}
