package etcdstore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/etcdtest"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

// BenchmarkImportAudit times `rotactl store migrate --to etcd` of a store whose audit logs are
// full: 20 servers of 1,000 entries each (the default retention), 20,000 entries in all.
func BenchmarkImportAudit(b *testing.B) {
	c := etcdtest.Start(b, 1, etcdtest.Options{})
	cli, err := Connect(context.Background(), Options{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	src, err := store.Open(filepath.Join(b.TempDir(), "rota.db"), store.Options{Create: true})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	err = src.Update(func(tx *store.Tx) error {
		for i := range 20_000 {
			r := store.AuditRecord{Time: at.Add(time.Duration(i) * time.Second), Node: fmt.Sprintf("n%02d", i%20), Pool: "gpu",
				Action: fleet.PowerOff, Reason: fleet.ReasonIdle, Result: "succeeded"}
			if err := tx.AppendAudit(r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for b.Loop() {
		n++
		o := OpenOptions{Prefix: fmt.Sprintf("/bench/%d", n), Fleet: "lab", By: "rotactl", RequestTimeout: 5 * time.Second, Clock: clock.Real{}}
		got, err := Import(context.Background(), cli, o, src)
		if err != nil || got != 20_000 {
			b.Fatalf("imported %d, %v; want 20000", got, err)
		}
	}
}
