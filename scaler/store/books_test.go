package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/cost"
)

// TestBooksSurviveReopen: the books read back after a restart are what was written; a store
// that never had books reads as none.
func TestBooksSurviveReopen(t *testing.T) {
	s, path := openTemp(t, Options{})
	if b, err := s.Books(); err != nil || !b.At.IsZero() || len(b.Counters) != 0 {
		t.Fatalf("new store: %+v, %v", b, err)
	}
	want := Books{At: t0, Counters: []cost.Counter{
		{Family: "saving", Labels: []string{"gpu", "research", "eu", "EUR"}, Value: 12.5},
		{Family: "node_energy", Labels: []string{"g1", "gpu", "bmc"}, Value: 3.6e6},
	}}
	if err := s.PutBooks(want); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s, path)
	got, err := s.Books()
	if err != nil {
		t.Fatal(err)
	}
	if !got.At.Equal(want.At) || !reflect.DeepEqual(got.Counters, want.Counters) {
		t.Errorf("read back %+v, want %+v", got, want)
	}
}

func TestDamagedBooksAreANamedError(t *testing.T) {
	for name, raw := range map[string]string{
		"not json":          "{not json",
		"from a newer rota": `{"v":2,"at":"2026-11-29T12:00:00Z","counters":[]}`,
		"counters not list": `{"v":1,"at":"2026-11-29T12:00:00Z","counters":7}`,
	} {
		t.Run(name, func(t *testing.T) {
			s, path := openTemp(t, Options{})
			if err := s.PutBooks(Books{At: t0}); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			writeRaw(t, path, bucketBooks, "", keyBooks, raw)
			s, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, err = s.Books()
			var re *RecordError
			if !errors.As(err, &re) || re.Bucket != bucketBooks {
				t.Fatalf("err = %v, want a RecordError naming %s", err, bucketBooks)
			}
		})
	}
}

// BenchmarkPutBooks writes the books of a 10,000-server fleet (30,000 series, as
// cost.BenchmarkAccrue keeps them): one fsynced transaction per pass.
func BenchmarkPutBooks(b *testing.B) {
	path := filepath.Join(b.TempDir(), "rota.db")
	s, err := Open(path, Options{Create: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	books := Books{At: t0}
	for i := range 30000 {
		books.Counters = append(books.Counters, cost.Counter{Family: "node_energy",
			Labels: []string{fmt.Sprintf("gpu%05d", i), "gpu", "bmc"}, Value: float64(i) * 3.6e6})
	}
	b.ResetTimer()
	for range b.N {
		books.At = books.At.Add(time.Minute)
		if err := s.PutBooks(books); err != nil {
			b.Fatal(err)
		}
	}
}
