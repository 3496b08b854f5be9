package etcdstore

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/rotahq/rota/scaler/store"
)

// ReadOnly is the guard of a store opened only to be read (rotactl): every write is refused.
type ReadOnly struct{}

// Conditions refuses.
func (ReadOnly) Conditions() ([]clientv3.Cmp, time.Time, error) {
	return nil, time.Time{}, fmt.Errorf("%w: the store is open read-only", store.ErrNotLeader)
}

// noRota lets rotactl write while no rota takes part in the fleet's election and the fleet
// marker is still the one it wrote.
type noRota struct {
	prefix    string
	markerRev int64
}

func (g noRota) Conditions() ([]clientv3.Cmp, time.Time, error) {
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(ElectionPrefix(g.prefix)).WithPrefix(), "=", 0),
		clientv3.Compare(clientv3.ModRevision(g.prefix+"/fleet"), "=", g.markerRev),
	}, time.Time{}, nil
}

// OpenStopped opens the fleet's store under o.Prefix for rotactl to write while no rota runs on
// it (o.Guard and o.Create are not used): every write is conditioned on an empty election and
// on the fleet marker Open found, so a write after a rota joined the election (or a migration
// began) is refused with store.ErrNotLeader and writes nothing. A rota's own writes are fenced
// by its lease, so the two never write beside one another.
func OpenStopped(ctx context.Context, cli *clientv3.Client, o OpenOptions) (*store.Store, error) {
	o.Create = false
	b := newBackend(cli, o.Prefix, ReadOnly{}, o.RequestTimeout, o.Clock)
	_, rev, err := b.checkMarker(ctx, o)
	if err != nil {
		_ = b.Close()
		return nil, err
	}
	b.guard = noRota{prefix: o.Prefix, markerRev: rev}
	return store.New(b, store.Options{Retention: o.Retention}, false), nil
}

// Candidates is how many rotas take part in the election of the fleet under prefix (the leader
// and those waiting): a store is migrated only while it is 0.
func Candidates(ctx context.Context, cli *clientv3.Client, prefix string) (int64, error) {
	resp, err := cli.Get(ctx, ElectionPrefix(prefix), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("reading the election of %s: %w", prefix, err)
	}
	return resp.Count, nil
}

// Import copies src (a bbolt store) into the prefix of o and returns how many records and
// audit entries it wrote. The prefix must be empty, or hold a migration of the same fleet
// that did not finish (it is cleared and done again), and no rota may run on it: the fleet
// marker is written "migrating" first, every batch is conditioned on it and on an empty
// election, and the marker turns "ready" last, so a rota never starts on half a store.
func Import(ctx context.Context, cli *clientv3.Client, o OpenOptions, src *store.Store) (int, error) {
	b := newBackend(cli, o.Prefix, ReadOnly{}, o.RequestTimeout, o.Clock)
	defer b.Close()
	m, rev, err := b.readMarker(ctx)
	cond := b.emptyPrefix()
	switch {
	case err != nil:
		return 0, err
	case m != nil && (m.Fleet != o.Fleet || m.State != stateMigrating):
		return 0, &FleetError{Prefix: o.Prefix, Problem: fmt.Sprintf("it already holds the state of fleet %q (%s); a store is migrated only into an empty prefix", m.Fleet, m.State)}
	case m != nil:
		if err := b.clearMigration(ctx, rev); err != nil {
			return 0, err
		}
		cond, _, _ = noRota{prefix: o.Prefix, markerRev: rev}.Conditions()
	}
	if m == nil {
		if err := b.checkAncestors(ctx); err != nil {
			return 0, err
		}
	}
	if n, err := Candidates(ctx, cli, o.Prefix); err != nil || n > 0 {
		if err == nil {
			err = fmt.Errorf("%d rotas take part in the election under %s: stop every rota of the fleet first", n, o.Prefix)
		}
		return 0, err
	}
	if rev, err = b.putMarker(ctx, o, stateMigrating, cond); err != nil {
		return 0, err
	}
	if rev == 0 {
		n, err := b.count(ctx)
		if err != nil {
			return 0, err
		}
		return 0, b.occupied(n)
	}
	b.guard = noRota{prefix: o.Prefix, markerRev: rev}
	n, err := store.Copy(store.New(b, store.Options{}, false), src)
	if err != nil {
		return n, err
	}
	cmps, _, _ := b.guard.Conditions()
	if rev, err = b.putMarker(ctx, o, stateReady, cmps); err != nil || rev == 0 {
		if err == nil {
			err = fmt.Errorf("%w: a rota started on %s during the migration", store.ErrNotLeader, o.Prefix)
		}
		return n, err
	}
	return n, nil
}

// clearMigration deletes what an unfinished migration wrote (everything under the prefix but
// the marker at rev), if no rota runs there.
func (b *Backend) clearMigration(ctx context.Context, rev int64) error {
	ctx, cancel := b.reqCtx(ctx, time.Time{})
	defer cancel()
	g := noRota{prefix: b.prefix, markerRev: rev}
	cmps, _, _ := g.Conditions()
	resp, err := b.cli.Txn(ctx).If(cmps...).Then(
		clientv3.OpDelete(b.dataPrefix(), clientv3.WithPrefix()),
		clientv3.OpDelete(b.logPrefix(), clientv3.WithPrefix()),
	).Commit()
	switch {
	case err != nil:
		return fmt.Errorf("clearing the unfinished migration under %s: %w", b.prefix, err)
	case !resp.Succeeded:
		return fmt.Errorf("%w: a rota runs on %s; stop every rota of the fleet first", store.ErrNotLeader, b.prefix)
	}
	return nil
}
