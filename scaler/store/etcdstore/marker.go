package etcdstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/scaler/store"
)

// The states of a fleet marker.
const (
	stateReady     = "ready"     // rotas run on the prefix
	stateMigrating = "migrating" // rotactl store migrate is copying a store in
)

// marker is the fleet's identity under its prefix.
type marker struct {
	V       int       `json:"v"`
	Fleet   string    `json:"fleet"`
	State   string    `json:"state"`
	Created time.Time `json:"created"`
	// By names who wrote it: the rota's name, or rotactl.
	By string `json:"by"`
}

// FleetError is a prefix rota must not use: it holds another fleet's state, something that is
// not a rota store, or a migration that did not finish. Nothing was written.
type FleetError struct {
	Prefix  string
	Problem string
}

func (e *FleetError) Error() string {
	return fmt.Sprintf("store.etcd.prefix %s: %s", errtext.Quote(e.Prefix), e.Problem)
}

// OpenOptions say which fleet's store to open, and how.
type OpenOptions struct {
	Prefix, Fleet string
	// By names the opener in a marker it writes.
	By string
	// Guard conditions every write (the elector; NoRota for rotactl).
	Guard          Guard
	RequestTimeout time.Duration
	Clock          Clock
	Retention      store.Retention
	// Create writes the fleet marker when the prefix is empty (a rota's first start); without
	// it an empty prefix is an error.
	Create bool
}

// Open checks the fleet marker under o.Prefix and returns the store there; created says the
// prefix was empty and Open wrote the marker (the first start). A marker of another fleet, a
// prefix holding keys but no marker, or a migration that did not finish is a *FleetError.
func Open(ctx context.Context, cli *clientv3.Client, o OpenOptions) (*store.Store, bool, error) {
	b := newBackend(cli, o.Prefix, o.Guard, o.RequestTimeout, o.Clock)
	created, _, err := b.checkMarker(ctx, o)
	if err != nil {
		_ = b.Close()
		return nil, false, err
	}
	return store.New(b, store.Options{Retention: o.Retention}, created), created, nil
}

func (b *Backend) readMarker(ctx context.Context) (*marker, int64, error) {
	ctx, cancel := b.reqCtx(ctx, time.Time{})
	defer cancel()
	resp, err := b.cli.Get(ctx, b.markerKey())
	if err != nil {
		return nil, 0, fmt.Errorf("reading the fleet marker %s: %w", b.markerKey(), err)
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, nil
	}
	m, err := parseMarker(resp.Kvs[0].Value)
	if err != nil {
		return nil, 0, &FleetError{Prefix: b.prefix, Problem: fmt.Sprintf("its fleet marker %s is not one this rota reads: %v", b.markerKey(), err)}
	}
	return m, resp.Kvs[0].ModRevision, nil
}

// parseMarker reads a fleet marker as putMarker writes it: version 1, a fleet, a known state.
func parseMarker(v []byte) (*marker, error) {
	var m marker
	switch err := json.Unmarshal(v, &m); {
	case err != nil:
		return nil, fmt.Errorf("not JSON: %w", err)
	case m.V != 1:
		return nil, fmt.Errorf("version %d, not 1", m.V)
	case m.Fleet == "":
		return nil, fmt.Errorf("no fleet")
	case m.State != stateReady && m.State != stateMigrating:
		return nil, fmt.Errorf("state %s is not %s or %s", errtext.Quote(m.State), stateReady, stateMigrating)
	}
	return &m, nil
}

// checkMarker checks the fleet marker (writing it, with o.Create, on an empty prefix) and
// returns the revision it was found or written at.
func (b *Backend) checkMarker(ctx context.Context, o OpenOptions) (created bool, rev int64, err error) {
	m, rev, err := b.readMarker(ctx)
	switch {
	case err != nil:
		return false, 0, err
	case m != nil && m.Fleet != o.Fleet:
		return false, 0, &FleetError{Prefix: b.prefix, Problem: fmt.Sprintf("it holds the state of fleet %s, and store.etcd.fleet is %s: another rota fleet uses this prefix; give each fleet its own",
			errtext.Quote(m.Fleet), errtext.Quote(o.Fleet))}
	case m != nil && m.State != stateReady:
		return false, 0, &FleetError{Prefix: b.prefix, Problem: fmt.Sprintf("a migration into it (%s, by %s) did not finish; run rotactl store migrate again", m.Created.Format(time.RFC3339), m.By)}
	case m != nil:
		return false, rev, nil
	case !o.Create:
		n, err := b.count(ctx)
		switch {
		case err != nil:
			return false, 0, err
		case n > 0:
			return false, 0, b.occupied(n)
		}
		return false, 0, &FleetError{Prefix: b.prefix, Problem: "no rota fleet's state is there (it is empty)"}
	}
	if err := b.checkAncestors(ctx); err != nil {
		return false, 0, err
	}
	rev, err = b.putMarker(ctx, o, stateReady, b.emptyPrefix())
	switch {
	case err != nil:
		return false, 0, err
	case rev == 0 && o.Create:
		// Another rota of the fleet may have written it first: check again what is there.
		o.Create = false
		return b.checkMarker(ctx, o)
	}
	return true, rev, nil
}

// checkAncestors refuses a prefix that lies under another fleet's (/rota/election under a
// fleet at /rota): its keys would be read as that fleet's (its election, its records) and
// cleared by that fleet's migration. A prefix above another fleet's is not empty, and refused
// as such. A prefix above that etcd's auth does not let this user read (a role that reaches
// only the fleet's prefix) is not checked: etcd keeps the fleets apart there.
func (b *Backend) checkAncestors(ctx context.Context) error {
	for i := strings.LastIndex(b.prefix, "/"); i > 0; i = strings.LastIndex(b.prefix[:i], "/") {
		above := b.prefix[:i]
		rctx, cancel := b.reqCtx(ctx, time.Time{})
		resp, err := b.cli.Get(rctx, above+"/fleet")
		cancel()
		switch {
		case errors.Is(err, rpctypes.ErrPermissionDenied):
		case err != nil:
			return fmt.Errorf("reading %s/fleet: %w", above, err)
		case len(resp.Kvs) > 0:
			what := "a rota fleet"
			if m, err := parseMarker(resp.Kvs[0].Value); err == nil {
				what = "fleet " + errtext.Quote(m.Fleet)
			}
			return &FleetError{Prefix: b.prefix, Problem: fmt.Sprintf("it lies under %s, the prefix of %s, whose keys it would mix with; give each fleet a prefix of its own, neither under the other", errtext.Quote(above), what)}
		}
	}
	return nil
}

// emptyPrefix is the condition that nothing at all lies under the prefix.
func (b *Backend) emptyPrefix() []clientv3.Cmp {
	return []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(b.prefix+"/").WithPrefix(), "=", 0)}
}

// putMarker writes the marker in state, conditioned on cmps, and returns its revision, 0 when
// a condition did not hold.
func (b *Backend) putMarker(ctx context.Context, o OpenOptions, state string, cmps []clientv3.Cmp) (int64, error) {
	v, err := json.Marshal(marker{V: 1, Fleet: o.Fleet, State: state, Created: b.clock.Now().UTC(), By: o.By})
	if err != nil {
		return 0, err
	}
	ctx, cancel := b.reqCtx(ctx, time.Time{})
	defer cancel()
	resp, err := b.cli.Txn(ctx).If(cmps...).Then(clientv3.OpPut(b.markerKey(), string(v))).Commit()
	if err != nil {
		return 0, fmt.Errorf("writing the fleet marker %s: %w", b.markerKey(), err)
	}
	if !resp.Succeeded {
		return 0, nil
	}
	return resp.Header.Revision, nil
}

// count is how many keys lie under the prefix.
func (b *Backend) count(ctx context.Context) (int64, error) {
	ctx, cancel := b.reqCtx(ctx, time.Time{})
	defer cancel()
	resp, err := b.cli.Get(ctx, b.prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", b.prefix, err)
	}
	return resp.Count, nil
}

// occupied is the error of a prefix holding n keys but no marker.
func (b *Backend) occupied(n int64) error {
	return &FleetError{Prefix: b.prefix, Problem: fmt.Sprintf("it holds %d keys but no rota fleet marker: not a rota store (or another program writes there); choose an empty prefix", n)}
}
