package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/rotahq/rota/scaler/store"
)

// MaxWrites is the most writes one transaction takes: etcd refuses a transaction of more than
// its --max-txn-ops operations (128 by default).
const MaxWrites = 100

// Guard says whether this rota may write now, and on what condition etcd applies its writes.
// The elector (package ha) is the guard of a rota: it may write while it leads, conditioned on
// its election key's revision. Safe for concurrent use.
type Guard interface {
	// Conditions returns the comparisons etcd must find true to apply a write, and the time
	// they can be trusted until (the leader's lease may have ended after it; zero: no bound).
	// It returns an error wrapping store.ErrNotLeader when this rota may not write at all.
	Conditions() (cmps []clientv3.Cmp, until time.Time, err error)
}

// Clock is the backend's time source.
type Clock interface{ Now() time.Time }

// Backend is a store.Backend in etcd under one prefix. Update transactions are serialised in
// this process (only the leader writes, and every write is fenced, so no other process writes
// beside it); each is applied in one etcd transaction, or not at all.
type Backend struct {
	cli     *clientv3.Client
	prefix  string
	guard   Guard
	timeout time.Duration
	clock   Clock

	mu sync.Mutex // serialises Update

	ctx    context.Context // ended by Close
	cancel context.CancelFunc
}

var _ store.Backend = (*Backend)(nil)

// newBackend is the backend under prefix; Open checks the fleet marker first.
func newBackend(cli *clientv3.Client, prefix string, guard Guard, timeout time.Duration, clock Clock) *Backend {
	ctx, cancel := context.WithCancel(context.Background())
	return &Backend{cli: cli, prefix: prefix, guard: guard, timeout: timeout, clock: clock, ctx: ctx, cancel: cancel}
}

// MaxWrites is the limit of writes per transaction (store.Copy batches by it).
func (b *Backend) MaxWrites() int { return MaxWrites }

// Close ends the backend's requests; the client is the caller's to close.
func (b *Backend) Close() error {
	b.cancel()
	return nil
}

// reqCtx bounds one transaction by the request timeout and by until (the guard's bound).
func (b *Backend) reqCtx(parent context.Context, until time.Time) (context.Context, context.CancelFunc) {
	d := b.timeout
	if !until.IsZero() {
		d = min(d, until.Sub(b.clock.Now()))
	}
	ctx, cancel := context.WithTimeout(parent, d)
	stop := context.AfterFunc(b.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// Update runs fn and applies its writes in one etcd transaction conditioned on the guard. A
// guard that refuses, or a condition etcd finds false (another rota leads, or this one's lease
// is gone), is store.ErrNotLeader and nothing is written.
func (b *Backend) Update(fn func(store.KV) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	cmps, until, err := b.guard.Conditions()
	if err != nil {
		return err
	}
	ctx, cancel := b.reqCtx(b.ctx, until)
	defer cancel()
	kv := &etcdKV{b: b, ctx: ctx, writable: true}
	if err := fn(kv); err != nil {
		return err
	}
	ops := kv.ops()
	switch {
	case len(ops) == 0:
		return nil
	case len(ops) > MaxWrites:
		return fmt.Errorf("a transaction of %d writes is more than one etcd transaction takes (%d)", len(ops), MaxWrites)
	}
	resp, err := b.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
	switch {
	case tooLarge(err):
		return fmt.Errorf("writing to etcd: a transaction of %d bytes is more than etcd takes (its --max-request-bytes, 1.5 MiB by default: raise it above the largest record, see install.md): %w", kv.bytes(), err)
	case err != nil:
		return fmt.Errorf("writing to etcd: %w", err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: etcd refused the write (another rota leads, or this one's lease ended)", store.ErrNotLeader)
	}
	return nil
}

// tooLarge reports whether etcd refused a request for its size: above its --max-request-bytes
// (etcd's own answer), or so far above it that its gRPC server would not read it (the limit
// plus 512 KiB). Other refusals of etcd's (no space, too many requests) are not.
func tooLarge(err error) bool {
	var ee rpctypes.EtcdError
	return errors.Is(err, rpctypes.ErrRequestTooLarge) || (!errors.As(err, &ee) && status.Code(err) == codes.ResourceExhausted)
}

// View runs fn with reads pinned at one revision: one consistent state. Each read is bounded
// by the request timeout, not the whole of fn: a View may walk the whole store (a backup,
// rotactl store migrate --to bbolt), which takes longer than one request on a large fleet.
func (b *Backend) View(fn func(store.KV) error) error {
	return fn(&etcdKV{b: b, ctx: b.ctx, timeout: b.timeout})
}

// Fence asks etcd whether the guard's conditions hold now (a linearizable read): nil only when
// they do, and etcd's answer is read within the guard's bound. Anything else (refused, etcd unreachable, the bound
// passed) wraps store.ErrNotLeader: no command goes out on a lease this rota cannot prove.
func (b *Backend) Fence(ctx context.Context) error {
	cmps, until, err := b.guard.Conditions()
	if err != nil {
		return err
	}
	ctx, cancel := b.reqCtx(ctx, until)
	defer cancel()
	resp, err := b.cli.Txn(ctx).If(cmps...).Commit()
	switch {
	case err != nil:
		return fmt.Errorf("%w: etcd could not confirm the leader's lease: %w", store.ErrNotLeader, err)
	case !resp.Succeeded:
		return fmt.Errorf("%w: etcd says another rota leads, or this one's lease ended", store.ErrNotLeader)
	case !until.IsZero() && !b.clock.Now().Before(until):
		// etcd's yes held when it was given; read after the bound (this process stood still
		// while it waited, or the answer won the race with the request's deadline), it says
		// nothing of now: another rota may lead already.
		return fmt.Errorf("%w: etcd's answer came after the lease's sure time", store.ErrNotLeader)
	}
	return nil
}

// The key layout (see the package doc).
func (b *Backend) markerKey() string  { return b.prefix + "/fleet" }
func (b *Backend) dataPrefix() string { return b.prefix + "/data/" }
func (b *Backend) logPrefix() string  { return b.prefix + "/log/" }

func (b *Backend) bucketPrefix(bucket string) string { return b.dataPrefix() + bucket + "/" }

func (b *Backend) dataKey(bucket, key string) string {
	return b.bucketPrefix(bucket) + url.PathEscape(key)
}

func (b *Backend) logNamesPrefix(log string) string { return b.logPrefix() + log + "/" }

func (b *Backend) entriesPrefix(log, name string) string {
	return b.logNamesPrefix(log) + url.PathEscape(name) + "/"
}

func entryKey(entries string, seq uint64) string { return fmt.Sprintf("%s%016x", entries, seq) }

// ElectionPrefix is where the rotas of the fleet under prefix hold their election.
func ElectionPrefix(prefix string) string { return prefix + "/election/" }
