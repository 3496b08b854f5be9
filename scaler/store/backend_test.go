package store_test

import (
	"path/filepath"
	"testing"

	"github.com/rotahq/rota/scaler/store"
	"github.com/rotahq/rota/scaler/store/storetest"
)

// The bbolt file passes the checks every backend must.
func TestBoltBackend(t *testing.T) {
	storetest.Run(t, func(t *testing.T, ret store.Retention) *store.Store {
		s, err := store.Open(filepath.Join(t.TempDir(), "rota.db"), store.Options{Create: true, Retention: ret})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
