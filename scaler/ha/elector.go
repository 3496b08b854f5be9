package ha

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/store"
	"github.com/rotahq/rota/scaler/store/etcdstore"
)

// Clock is the elector's time source.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// Info is what a candidate publishes in the election: its name, the URL its API answers on
// (followers name it to a caller whose write they refuse), and the digest of the config that
// decides what it does (config.Config.FleetDigest: a follower whose own differs says so, as a
// failover would change the fleet's policy).
type Info struct {
	Name   string `json:"name"`
	URL    string `json:"url,omitempty"`
	Config string `json:"config,omitempty"`
}

// Options are what New needs; all but Registerer are required.
type Options struct {
	Client *clientv3.Client
	// Prefix is the fleet's key prefix; the election lives under etcdstore.ElectionPrefix.
	Prefix string
	// Fleet is the fleet's name (store.etcd.fleet), the label fleet of the metrics.
	Fleet string
	Self  Info
	// TTL is the lease's (whole seconds, at least 2): a leader cut off from etcd stops within
	// it, and another takes over within twice it.
	TTL time.Duration
	// RequestTimeout bounds each request to etcd.
	RequestTimeout time.Duration
	Clock          Clock
	Log            *logrus.Entry
	Registerer     prometheus.Registerer
}

// Elector takes part in the election for this rota. Safe for concurrent use; call Run once.
type Elector struct {
	o       Options
	self    string // Info as JSON, the election value
	margin  time.Duration
	metrics metrics

	mu      sync.Mutex
	term    *term     // nil unless leading
	valid   time.Time // the lease surely holds until then, less the margin
	leader  Info      // the leader as last read, zero when none
	since   time.Time // when this rota's role last changed
	stopped string    // why this rota's last term ended, if not by its own stop
	problem string    // what keeps this rota from leading now, empty when nothing
	// configDiffers: the leader last read publishes another config digest than this rota's.
	configDiffers bool
}

// term is one stretch of leadership: the election key and its create revision.
type term struct {
	key string
	rev int64
}

// New checks the options and registers the metrics.
func New(o Options) (*Elector, error) {
	switch {
	case o.Client == nil || o.Prefix == "" || o.Self.Name == "" || o.Clock == nil || o.Log == nil:
		return nil, errors.New("ha: client, prefix, name, clock and log are required")
	case o.TTL < 2*time.Second || o.TTL%time.Second != 0:
		return nil, fmt.Errorf("ha: lease TTL %s is not a whole number of seconds, at least 2", o.TTL)
	case o.RequestTimeout <= 0:
		return nil, errors.New("ha: request timeout must be positive")
	}
	self, err := json.Marshal(o.Self)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(o.Registerer, o.Fleet)
	if err != nil {
		return nil, err
	}
	return &Elector{o: o, self: string(self), margin: o.TTL / 5, metrics: m, since: o.Clock.Now()}, nil
}

// Run takes part in the election until ctx ends: while this rota leads it runs lead with a
// context that ends with the term, and when lead returns it campaigns again. It returns
// lead's error if lead fails while ctx lasts, else nil once ctx ends (having resigned, so
// another rota takes over at once).
func (e *Elector) Run(ctx context.Context, lead func(context.Context) error) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		e.observe(ctx)
	}()
	for ctx.Err() == nil {
		led, err := e.serve(ctx, lead)
		switch {
		case ctx.Err() != nil:
			return nil
		case led && err != nil:
			return err
		case err != nil:
			e.setProblem(err)
			e.o.Log.WithError(err).Warn("cannot take part in the election; trying again")
		}
		select {
		case <-ctx.Done():
		case <-e.o.Clock.After(e.o.TTL / 2):
		}
	}
	return nil
}

// serve is one lease: campaign with it, lead if elected, and give it up. led says lead ran.
func (e *Elector) serve(ctx context.Context, lead func(context.Context) error) (led bool, err error) {
	id, err := e.grant(ctx)
	if err != nil {
		return false, err
	}
	tctx, endTerm := context.WithCancel(ctx)
	defer endTerm()
	// The election's client is the elector's with the term's context for its own: a campaign
	// cancelled resigns on its client's context, which for the elector's ends only when it
	// closes, so a stop with etcd away waited for etcd. The revoke below deletes the key too.
	tcli := clientv3.NewCtxClient(tctx)
	tcli.KV, tcli.Watcher, tcli.Lease = e.o.Client.KV, e.o.Client.Watcher, e.o.Client.Lease
	sess, err := concurrency.NewSession(tcli, concurrency.WithLease(id), concurrency.WithContext(tctx))
	if err != nil {
		e.revoke(id)
		return false, fmt.Errorf("starting a session: %w", err)
	}
	defer func() {
		sess.Orphan()
		e.revoke(id) // the election key goes with the lease: another rota takes over now
	}()
	var wg sync.WaitGroup
	defer func() {
		endTerm()
		wg.Wait()
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		e.keepAlive(tctx, id, endTerm)
	}()
	el := concurrency.NewElection(sess, etcdstore.ElectionPrefix(e.o.Prefix))
	if err := el.Campaign(tctx, e.self); err != nil {
		if tctx.Err() != nil && ctx.Err() == nil {
			return false, errors.New("the lease ended while waiting to lead")
		}
		return false, fmt.Errorf("campaigning: %w", err)
	}
	if e.validNow() {
		return true, e.lead(tctx, el, lead)
	}
	// Elected by an answer that came after the lease's validity ran out (etcd stalled while
	// the campaign waited): etcd may expire the key any moment and elect another.
	return false, errors.New("the lease ran out while waiting to lead")
}

// lead runs lead for one term: it begins with the election's key and revision, and ends
// (the term cleared first, so nothing more is written or sent, then lead's context cancelled)
// when the lease nears its end or the key is gone.
func (e *Elector) lead(ctx context.Context, el *concurrency.Election, lead func(context.Context) error) error {
	e.begin(term{key: el.Key(), rev: el.Rev()})
	lctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		why := e.watch(lctx, el.Key(), el.Rev())
		e.end(why)
		stop()
	}()
	err := lead(lctx)
	e.end("")
	stop()
	wg.Wait()
	if err != nil {
		return fmt.Errorf("leading: %w", err)
	}
	return nil
}

// grant takes a new lease; the time the request was sent starts its validity.
func (e *Elector) grant(ctx context.Context) (clientv3.LeaseID, error) {
	sent := e.o.Clock.Now()
	rctx, cancel := context.WithTimeout(ctx, e.o.RequestTimeout)
	defer cancel()
	resp, err := e.o.Client.Grant(rctx, int64(e.o.TTL/time.Second))
	if err != nil {
		return 0, fmt.Errorf("taking a lease: %w", err)
	}
	e.renewed(sent, resp.TTL)
	return resp.ID, nil
}

// renewed records a grant or renewal etcd acknowledged: the lease holds ttl seconds from when
// the request was sent, at least (an answer to an older request never shortens it).
func (e *Elector) renewed(sent time.Time, ttl int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if v := sent.Add(time.Duration(ttl)*time.Second - e.margin); v.After(e.valid) {
		e.valid = v
	}
	e.problem = ""
}

// keepAlive renews the lease every third of its TTL until ctx ends. Each renewal may take up
// to a TTL (a loaded etcd answers late; a late answer still extends the lease from when it
// was sent), so renewals overlap. A renewal etcd refuses (the lease is gone) ends the term;
// one that gets no answer leaves the validity where it was, and the watch ends the term when
// it runs out.
func (e *Elector) keepAlive(ctx context.Context, id clientv3.LeaseID, endTerm func()) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.o.Clock.After(e.o.TTL / 3):
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.renew(ctx, id, endTerm)
		}()
	}
}

// renewAttempts is how many requests one renewal sends at most, a tenth of the TTL apart.
const renewAttempts = 4

// renew renews the lease once. The client spreads its requests over etcd's members in turn,
// and one sent to a member that is frozen (it holds its connection and answers nothing) waits
// until gRPC's keepalive drops that connection: 10 s (gRPC's floor) and the request timeout,
// longer than the lease's validity. So a request not answered within a tenth of the TTL is
// followed by another, which goes to the next member; the first one answered counts (from its
// own send time), and the others, still waiting, are cancelled. None is cancelled for being
// slow, as a loaded etcd may answer every request late.
func (e *Elector) renew(ctx context.Context, id clientv3.LeaseID, endTerm func()) {
	rctx, cancel := context.WithTimeout(ctx, e.o.TTL)
	answers := make(chan renewal, renewAttempts)
	sent, waiting := 0, 0
	send := func() {
		sent++
		waiting++
		go func(at time.Time) {
			resp, err := e.o.Client.KeepAliveOnce(rctx, id)
			answers <- renewal{at, resp, err}
		}(e.o.Clock.Now())
	}
	defer func() {
		cancel()
		for ; waiting > 0; waiting-- {
			<-answers
		}
	}()
	var lastErr error
	for send(); waiting > 0; {
		var next <-chan time.Time
		if sent < renewAttempts && rctx.Err() == nil {
			next = e.o.Clock.After(e.o.TTL / 10)
		}
		select {
		case <-next:
			send()
		case r := <-answers:
			waiting--
			if ctx.Err() != nil || e.settled(r, endTerm) {
				return
			}
			lastErr = r.err
		}
	}
	if ctx.Err() == nil {
		e.setProblem(fmt.Errorf("renewing the lease: %w", lastErr))
		e.o.Log.WithError(lastErr).Warn("lease not renewed")
	}
}

// renewal is etcd's answer to one request of a renewal, sent at sent.
type renewal struct {
	sent time.Time
	resp *clientv3.LeaseKeepAliveResponse
	err  error
}

// settled takes one answer of a renewal and says whether it settles it: etcd renewed the
// lease (its validity is extended from the request's send time), or says the lease is gone
// (the term ends). An error without an answer settles nothing.
func (e *Elector) settled(r renewal, endTerm func()) bool {
	switch {
	case errors.Is(r.err, rpctypes.ErrLeaseNotFound) || (r.err == nil && r.resp.TTL <= 0):
		e.setProblem(errors.New("etcd says the lease is gone"))
		endTerm()
		return true
	case r.err == nil:
		e.renewed(r.sent, r.resp.TTL)
		return true
	}
	return false
}

// watch waits until the term must end and says why: the lease's validity runs out, the
// election key (created at rev) is deleted, or ctx ends (empty).
func (e *Elector) watch(ctx context.Context, key string, rev int64) string {
	wctx, cancel := context.WithCancel(ctx)
	deleted, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		e.watchKey(wctx, key, rev, deleted)
	}()
	defer func() {
		cancel()
		<-watched
	}()
	tick := e.o.TTL / 10
	for {
		select {
		case <-ctx.Done():
			return ""
		case <-deleted:
			return "its election key was deleted"
		case <-e.o.Clock.After(tick):
		}
		if !e.validNow() {
			return "its lease could not be renewed in time (etcd unreachable?)"
		}
	}
}

// watchKey closes deleted once the election key created at rev is gone, until ctx ends: it
// reads the key, then watches it from the revision after the read. etcd may end that watch: a
// client that reconnects (a blip, an etcd member restarted) resumes from the revision it
// watched from, and etcd cancels the watch if that revision was compacted meanwhile
// (--auto-compaction-retention). Then it reads and watches again, so no deletion goes unseen.
func (e *Elector) watchKey(ctx context.Context, key string, rev int64, deleted chan<- struct{}) {
	for {
		from, gone, ok := e.readKey(ctx, key, rev)
		switch {
		case !ok:
			return
		case gone:
			close(deleted)
			return
		}
		for resp := range e.o.Client.Watch(ctx, key, clientv3.WithRev(from)) {
			for _, ev := range resp.Events {
				if ev.Type == clientv3.EventTypeDelete {
					close(deleted)
					return
				}
			}
		}
	}
}

// readKey reads the election key until etcd answers: gone when the key created at rev is no
// longer there, else the revision after the read, to watch from. ok is false when ctx ended.
func (e *Elector) readKey(ctx context.Context, key string, rev int64) (next int64, gone, ok bool) {
	for ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, e.o.RequestTimeout)
		resp, err := e.o.Client.Get(rctx, key)
		cancel()
		if err == nil {
			return resp.Header.Revision + 1, len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != rev, true
		}
		e.o.Log.WithError(err).Debug("election key not read; reading it again")
		select {
		case <-ctx.Done():
		case <-e.o.Clock.After(e.o.TTL / 10):
		}
	}
	return 0, false, false
}

func (e *Elector) validNow() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.o.Clock.Now().Before(e.valid)
}

// revoke gives the lease up, on a context of its own: at shutdown ctx has already ended.
func (e *Elector) revoke(id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), e.o.RequestTimeout)
	defer cancel()
	if _, err := e.o.Client.Revoke(ctx, id); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		e.o.Log.WithError(err).Debug("lease not revoked; it ends at its TTL")
	}
}

func (e *Elector) begin(t term) {
	e.mu.Lock()
	e.term, e.since, e.problem, e.stopped = &t, e.o.Clock.Now(), "", ""
	e.compareConfig()
	e.mu.Unlock()
	e.metrics.leader.Set(1)
	e.metrics.terms.Inc()
	e.o.Log.WithFields(logrus.Fields{"key": t.key, "revision": t.rev}).Info("leading: this rota plans and acts")
}

// end clears the term, once; why (if not empty) is logged and kept as the problem.
func (e *Elector) end(why string) {
	e.mu.Lock()
	was := e.term != nil
	e.term = nil
	if was {
		e.since = e.o.Clock.Now()
	}
	if why != "" && was {
		e.stopped = fmt.Sprintf("stopped leading at %s: %s", e.since.UTC().Format(time.RFC3339), why)
	}
	e.mu.Unlock()
	if !was {
		return
	}
	e.metrics.leader.Set(0)
	l := e.o.Log
	if why != "" {
		l.WithField("why", why).Warn("stopped leading: no more writes or commands from this rota")
		return
	}
	l.Info("stopped leading")
}

func (e *Elector) setProblem(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.problem = err.Error()
}

// Conditions is the etcdstore Guard: while this rota leads and its lease surely holds, etcd
// applies a write only if its election key still has the revision it won with.
func (e *Elector) Conditions() ([]clientv3.Cmp, time.Time, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.term == nil:
		return nil, time.Time{}, e.notLeader()
	case !e.o.Clock.Now().Before(e.valid):
		return nil, time.Time{}, fmt.Errorf("%w: its lease could not be renewed in time", store.ErrNotLeader)
	}
	return []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(e.term.key), "=", e.term.rev)}, e.valid, nil
}

// notLeader is the error of a write asked of this rota while it follows (mu held).
func (e *Elector) notLeader() error {
	if e.leader.Name != "" {
		return fmt.Errorf("%w: %s leads", store.ErrNotLeader, e.leader.Name)
	}
	return fmt.Errorf("%w: no rota leads", store.ErrNotLeader)
}

// Leading reports whether this rota leads now.
func (e *Elector) Leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.term != nil && e.o.Clock.Now().Before(e.valid)
}

// Status says who leads, as this rota last saw it, and why this rota does not.
func (e *Elector) Status() api.HAStatus {
	e.mu.Lock()
	defer e.mu.Unlock()
	problems := slices.DeleteFunc([]string{e.stopped, e.problem}, func(s string) bool { return s == "" })
	if e.configDiffers {
		problems = append(problems, fmt.Sprintf("the leader decides by another config (digest %s, this rota's %s)", e.leader.Config, e.o.Self.Config))
	}
	st := api.HAStatus{Backend: "etcd", Self: e.o.Self.Name, Leading: e.term != nil, Since: e.since,
		Problem: strings.Join(problems, "; now: "), Leader: e.leader.Name, LeaderURL: e.leader.URL}
	if st.Leading {
		st.Leader, st.LeaderURL = e.o.Self.Name, e.o.Self.URL
	}
	return st
}

// observe reads who leads every half TTL until ctx ends.
func (e *Elector) observe(ctx context.Context) {
	for {
		info, err := Leader(ctx, e.o.Client, e.o.Prefix, e.o.RequestTimeout)
		e.mu.Lock()
		switch {
		case err != nil && ctx.Err() == nil:
			e.leader = Info{}
			if e.term == nil {
				e.problem = err.Error()
			}
		case err == nil:
			e.leader = info
		}
		e.compareConfig()
		e.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-e.o.Clock.After(e.o.TTL / 2):
		}
	}
}

// compareConfig notes, under e.mu, whether the leader last read decides by another config than
// this rota's, and says so when that changes.
func (e *Elector) compareConfig() {
	l, own := e.leader, e.o.Self.Config
	differs := e.term == nil && l.Name != "" && l.Config != "" && own != "" && l.Config != own
	if differs == e.configDiffers {
		return
	}
	e.configDiffers = differs
	if !differs {
		e.metrics.configDiffers.Set(0)
		return
	}
	e.metrics.configDiffers.Set(1)
	e.o.Log.WithFields(logrus.Fields{"leader": l.Name, "leader_config": l.Config, "config": own}).
		Warn("the leader decides by another config (policy, classes, pools, accounting or BMC limits): a failover to this rota would change what the fleet does")
}

// Leader reads who leads the fleet under prefix: the zero Info when no rota does.
func Leader(ctx context.Context, cli *clientv3.Client, prefix string, timeout time.Duration) (Info, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := cli.Get(ctx, etcdstore.ElectionPrefix(prefix), clientv3.WithFirstCreate()...)
	if err != nil {
		return Info{}, fmt.Errorf("reading who leads: %w", err)
	}
	var info Info
	if len(resp.Kvs) > 0 {
		if err := json.Unmarshal(resp.Kvs[0].Value, &info); err != nil {
			return Info{}, fmt.Errorf("reading who leads: the election value %q is not a rota's", resp.Kvs[0].Value)
		}
	}
	return info, nil
}
