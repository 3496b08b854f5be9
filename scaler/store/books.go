package store

import (
	"encoding/json"
	"fmt"
	"time"

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
	err = s.View(func(tx *Tx) error {
		b, err = getRecord(tx.kv, bucketBooks, keyBooks, decodeBooks)
		return err
	})
	return b, err
}

func decodeBooks(raw []byte) (Books, error) {
	if _, err := version(raw); err != nil {
		return Books{}, err
	}
	var r booksV1
	if err := json.Unmarshal(raw, &r); err != nil {
		return Books{}, fmt.Errorf("decoding: %w", err)
	}
	return r.Books, nil
}

// PutBooks writes the books in one transaction (fsynced on commit).
func (s *Store) PutBooks(b Books) error {
	return s.Update(func(tx *Tx) error {
		return putRecord(tx.kv, bucketBooks, keyBooks, "the books", booksV1{V: recordVersion, Books: b})
	})
}
