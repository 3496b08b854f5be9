package ha

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/etcdtest"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/store"
	"github.com/rotahq/rota/scaler/store/etcdstore"
)

const ttl = 2 * time.Second

// terms records every term of every candidate, and fails the test if two overlap.
type terms struct {
	t       *testing.T
	mu      sync.Mutex
	leading string
	log     []termSpan
}

type termSpan struct {
	name       string
	start, end time.Time
}

func (tm *terms) lead(name string) func(context.Context) error {
	return func(ctx context.Context) error {
		tm.mu.Lock()
		if tm.leading != "" {
			tm.t.Errorf("%s leads while %s still does", name, tm.leading)
		}
		tm.leading = name
		tm.log = append(tm.log, termSpan{name: name, start: time.Now()})
		i := len(tm.log) - 1
		tm.mu.Unlock()
		<-ctx.Done()
		tm.mu.Lock()
		tm.log[i].end = time.Now()
		if tm.leading == name {
			tm.leading = ""
		}
		tm.mu.Unlock()
		return nil
	}
}

func (tm *terms) current() (termSpan, int) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if len(tm.log) == 0 {
		return termSpan{}, 0
	}
	return tm.log[len(tm.log)-1], len(tm.log)
}

// candidate is one elector, talking to etcd through a proxy the test can cut.
type candidate struct {
	name  string
	el    *Elector
	proxy *testutil.Proxy
	cli   *clientv3.Client
	reg   *prometheus.Registry
	stop  context.CancelFunc
	done  chan struct{} // closed when Run returned
}

func startCandidate(t *testing.T, c *etcdtest.Cluster, prefix, name string, tm *terms) *candidate {
	t.Helper()
	return startCandidateTTL(t, c, prefix, name, tm, ttl)
}

// startCandidateTTL is startCandidate with a lease TTL of its own.
func startCandidateTTL(t *testing.T, c *etcdtest.Cluster, prefix, name string, tm *terms, ttl time.Duration) *candidate {
	t.Helper()
	return startCandidateInfo(t, c, prefix, Info{Name: name, URL: "http://" + name}, tm, ttl)
}

// startCandidateInfo is startCandidateTTL publishing self.
func startCandidateInfo(t *testing.T, c *etcdtest.Cluster, prefix string, self Info, tm *terms, ttl time.Duration) *candidate {
	t.Helper()
	name := self.Name
	p := testutil.StartProxy(t, strings.TrimPrefix(c.Endpoints()[0], "http://"))
	// DialTimeout bounds only the connect check (2s is short on a loaded 2-core CI machine); the
	// request timeout stays below the TTL, as the config requires.
	cli, err := etcdstore.Connect(context.Background(), etcdstore.Options{Endpoints: []string{"http://" + p.Addr()},
		DialTimeout: 10 * time.Second, RequestTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	logger, _ := logtest.NewNullLogger()
	if testing.Verbose() {
		logger = logrus.New()
		logger.SetLevel(logrus.DebugLevel)
	}
	reg := prometheus.NewRegistry()
	el, err := New(Options{Client: cli, Prefix: prefix, Self: self,
		TTL: ttl, RequestTimeout: time.Second, Clock: clock.Real{}, Log: logger.WithField("rota", name), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	cd := &candidate{name: name, el: el, proxy: p, cli: cli, reg: reg, stop: stop, done: make(chan struct{})}
	go func() {
		defer close(cd.done)
		if err := el.Run(ctx, tm.lead(name)); err != nil {
			t.Errorf("%s: Run: %v", name, err)
		}
	}()
	t.Cleanup(func() { stop(); <-cd.done })
	return cd
}

func waitLeader(t *testing.T, tm *terms, after int, within time.Duration) termSpan {
	t.Helper()
	var span termSpan
	testutil.Eventually(t, within, "a new leader", func() error {
		s, n := tm.current()
		if n <= after || !s.end.IsZero() == true {
			return fmt.Errorf("%d terms so far", n)
		}
		span = s
		return nil
	})
	return span
}

// Three candidates: one leads at a time. Cut off from etcd, the leader's term ends within the
// lease TTL, and another's begins after it, within twice the TTL of the cut; a leader that
// stops resigns, and another leads at once.
func TestOneLeaderFailoverAndResign(t *testing.T) {
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	tm := &terms{t: t}
	cands := map[string]*candidate{}
	for _, n := range []string{"a", "b", "c"} {
		cands[n] = startCandidate(t, c, "/ha-test", n, tm)
	}
	first := waitLeader(t, tm, 0, 10*time.Second)
	leader := cands[first.name]
	if got := promtest.ToFloat64(metricOf(t, leader.reg)); got != 1 {
		t.Errorf("rota_ha_leader of the leader = %v", got)
	}
	for n, cd := range cands {
		if n == first.name {
			continue
		}
		// A follower reads who leads every half TTL, one read cut short by the request timeout
		// naming none until the next: a budget, not the behaviour under test.
		testutil.Eventually(t, 30*time.Second, n+" names the leader", func() error {
			if st := cd.el.Status(); st.Leading || st.Leader != first.name || st.LeaderURL != "http://"+first.name {
				return fmt.Errorf("status %+v", st)
			}
			return nil
		})
		if _, _, err := cd.el.Conditions(); !errors.Is(err, store.ErrNotLeader) || !strings.Contains(err.Error(), first.name+" leads") {
			t.Errorf("a follower's guard: %v", err)
		}
	}

	// Cut the leader off.
	cut := time.Now()
	leader.proxy.Cut()
	second := waitLeader(t, tm, 1, 3*ttl)
	old, _ := tm.spanOf(first.name)
	if ended := old.end.Sub(cut); old.end.IsZero() || ended > ttl {
		t.Errorf("the leader cut off stopped %s after the cut, want within the TTL (%s)", ended, ttl)
	}
	if took := second.start.Sub(cut); took > 2*ttl {
		t.Errorf("new leader %s after %s, want within twice the TTL", second.name, took)
	}
	if !second.start.After(old.end) {
		t.Errorf("terms overlap: %s began %s, %s ended %s", second.name, second.start, first.name, old.end)
	}
	if _, _, err := leader.el.Conditions(); !errors.Is(err, store.ErrNotLeader) {
		t.Errorf("the cut-off leader's guard: %v", err)
	}
	if st := leader.el.Status(); st.Leading || st.Problem == "" {
		t.Errorf("the cut-off leader's status %+v: want not leading, with why", st)
	}
	leader.proxy.Restore()

	// The second leader stops: it resigns, and the next leads well before a TTL.
	stopped := time.Now()
	cands[second.name].stop()
	<-cands[second.name].done
	third := waitLeader(t, tm, 2, 2*ttl)
	if took := third.start.Sub(stopped); took > ttl {
		t.Errorf("after a resignation the next leader took %s", took)
	}
}

func (tm *terms) spanOf(name string) (termSpan, bool) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	for i := len(tm.log) - 1; i >= 0; i-- {
		if tm.log[i].name == name {
			return tm.log[i], true
		}
	}
	return termSpan{}, false
}

func metricOf(t *testing.T, reg *prometheus.Registry) prometheus.Collector {
	t.Helper()
	return gathered{reg: reg, name: "rota_ha_leader"}
}

// gathered re-exposes one gauge of a registry, for promtest.ToFloat64.
type gathered struct {
	reg  *prometheus.Registry
	name string
}

func (g gathered) Describe(chan<- *prometheus.Desc) {}
func (g gathered) Collect(ch chan<- prometheus.Metric) {
	mfs, _ := g.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == g.name {
			ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(g.name, "", nil, nil), prometheus.GaugeValue, mf.GetMetric()[0].GetGauge().GetValue())
		}
	}
}

// A leader whose election key is deleted under it stops at once: the guard refuses, and the
// term ends long before the TTL.
func TestDeletedKeyEndsTheTerm(t *testing.T) {
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	tm := &terms{t: t}
	cd := startCandidate(t, c, "/ha-del", "a", tm)
	waitLeader(t, tm, 0, 10*time.Second)
	cmps, until, err := cd.el.Conditions()
	if err != nil || len(cmps) != 1 || time.Until(until) <= 0 {
		t.Fatalf("leader's conditions %v until %s: %v", cmps, until, err)
	}
	cli, err := etcdstore.Connect(context.Background(), etcdstore.Options{Endpoints: c.Endpoints(), DialTimeout: 10 * time.Second, RequestTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	deleted := time.Now()
	if _, err := cli.Delete(context.Background(), etcdstore.ElectionPrefix("/ha-del"), clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, ttl, "the term ends", func() error {
		if s, _ := tm.spanOf("a"); s.end.IsZero() {
			return errors.New("still leading")
		}
		return nil
	})
	if s, _ := tm.spanOf("a"); s.end.Sub(deleted) > ttl/2 {
		t.Errorf("the term ended %s after its key was deleted", s.end.Sub(deleted))
	}
}

// A leader's watch on its election key that etcd ends (the client reconnected after a blip,
// and the revision it resumes from was compacted meanwhile, as etcd's auto-compaction does)
// must not leave the term blind: a deletion of the key after it still ends the term.
func TestDeletedKeyEndsTheTermAfterTheWatchIsCompacted(t *testing.T) {
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	tm := &terms{t: t}
	// A TTL long enough that the lease outlives the blip and the client's reconnection.
	const long = 20 * time.Second
	cd := startCandidateTTL(t, c, "/ha-compact", "a", tm, long)
	waitLeader(t, tm, 0, 10*time.Second)
	cli, err := etcdstore.Connect(context.Background(), etcdstore.Options{Endpoints: c.Endpoints(), DialTimeout: 10 * time.Second, RequestTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	cd.proxy.Cut()
	put, err := cli.Put(ctx, "/elsewhere", "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, put.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	cd.proxy.Restore()
	if _, err := cli.Delete(ctx, etcdstore.ElectionPrefix("/ha-compact"), clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	// Well before the lease's TTL, which would end the term anyway once etcd refuses a renewal.
	testutil.Eventually(t, long/2, "the term ends", func() error {
		if s, _ := tm.spanOf("a"); s.end.IsZero() {
			return errors.New("still leading")
		}
		return nil
	})
}

// A leader whose etcd freezes (SIGSTOP: the process holds its connections and answers nothing)
// for longer than the lease stops within it, before etcd resumes; on resume etcd expires the
// frozen leases and one candidate leads, never two at once (terms fails the test on overlap).
// Three members of which two freeze (quorum lost) is the same to the candidates.
func TestFrozenEtcdStopsTheLeader(t *testing.T) {
	for _, members := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d members", members), func(t *testing.T) {
			c := etcdtest.Start(t, members, etcdtest.Options{})
			tm := &terms{t: t}
			for _, n := range []string{"a", "b", "c"} {
				startCandidate(t, c, "/ha-frozen", n, tm)
			}
			first := waitLeader(t, tm, 0, 10*time.Second)
			frozen := c.Members[len(c.Members)/2:]
			for _, m := range frozen {
				c.Signal(m, syscall.SIGSTOP)
			}
			time.Sleep(3 * ttl)
			span, n := tm.current()
			if n != 1 || span.end.IsZero() {
				t.Errorf("after etcd froze for 3x the TTL: %d terms, the last %+v; want %s's, ended", n, span, first.name)
			}
			for _, m := range frozen {
				c.Signal(m, syscall.SIGCONT)
			}
			waitLeader(t, tm, 1, 10*ttl)
		})
	}
}

// Three candidates on an etcd that restarted three times and then is gone or frozen (SIGSTOP:
// it holds its connections and answers nothing): each stops (its context cancelled), leader or
// followers, within its request timeout and a little more. A follower's campaign, cancelled,
// resigned on the client's own context, which ends only when the client closes: Run waited for
// etcd, and the daemon's stop with it.
func TestStopEndsInTimeWhateverEtcdDid(t *testing.T) {
	for name, away := range map[string]func(*etcdtest.Cluster, *etcdtest.Member){
		"gone":   (*etcdtest.Cluster).Kill,
		"frozen": func(c *etcdtest.Cluster, m *etcdtest.Member) { c.Signal(m, syscall.SIGSTOP) },
	} {
		t.Run(name, func(t *testing.T) {
			c := etcdtest.Start(t, 1, etcdtest.Options{})
			tm := &terms{t: t}
			var cands []*candidate
			for _, n := range []string{"a", "b", "c"} {
				cands = append(cands, startCandidate(t, c, "/ha-stop", n, tm))
			}
			waitLeader(t, tm, 0, 10*time.Second)
			for range 3 {
				c.Kill(c.Members[0])
				time.Sleep(ttl / 2)
				c.Restart(c.Members[0])
			}
			away(c, c.Members[0])
			stopped := time.Now()
			for _, cd := range cands {
				cd.stop()
			}
			const bound = time.Second + 2*time.Second // the request timeout, and some
			for _, cd := range cands {
				select {
				case <-cd.done:
				case <-time.After(time.Until(stopped.Add(bound))):
					t.Errorf("%s still ran %s after its stop", cd.name, bound)
					_ = cd.cli.Close() // ends what waits on the client, so the test ends
					<-cd.done
				}
			}
		})
	}
}

// A follower whose config digest differs from the leader's says so (a failover would change
// what the fleet does): the metric, and its status's problem; one whose config matches, or
// that publishes none, does not.
func TestFollowerSaysTheLeadersConfigDiffers(t *testing.T) {
	c := etcdtest.Start(t, 1, etcdtest.Options{})
	tm := &terms{t: t}
	a := startCandidateInfo(t, c, "/ha-config", Info{Name: "a", Config: "aaaaaaaaaaaa"}, tm, ttl)
	waitLeader(t, tm, 0, 10*time.Second)
	b := startCandidateInfo(t, c, "/ha-config", Info{Name: "b", Config: "bbbbbbbbbbbb"}, tm, ttl)
	same := startCandidateInfo(t, c, "/ha-config", Info{Name: "same", Config: "aaaaaaaaaaaa"}, tm, ttl)
	none := startCandidateInfo(t, c, "/ha-config", Info{Name: "none"}, tm, ttl)
	testutil.Eventually(t, 10*time.Second, "b sees the leader's other config", func() error {
		if v := promtest.ToFloat64(b.el.metrics.configDiffers); v != 1 {
			return fmt.Errorf("rota_ha_leader_config_differs %g", v)
		}
		return nil
	})
	if st := b.el.Status(); st.Leader != "a" || !strings.Contains(st.Problem, "another config (digest aaaaaaaaaaaa, this rota's bbbbbbbbbbbb)") {
		t.Errorf("b's status %+v", st)
	}
	for _, f := range []*candidate{a, same, none} {
		testutil.Eventually(t, 10*time.Second, f.name+" sees a lead", func() error {
			if l := f.el.Status().Leader; l != "a" {
				return fmt.Errorf("leader %q", l)
			}
			return nil
		})
		if v := promtest.ToFloat64(f.el.metrics.configDiffers); v != 0 || strings.Contains(f.el.Status().Problem, "another config") {
			t.Errorf("%s: rota_ha_leader_config_differs %g, status %+v", f.name, v, f.el.Status())
		}
	}
}

// routedLease sends a client's lease renewals (KeepAliveOnce) where a test says: once frozen,
// two to the client of the member that froze, then one to the client of the others, in turn.
// That is the worst the client's round robin over three members allows while other requests
// (the loop's, the watch, who leads) go between: a renewal on the frozen member two times
// running.
type routedLease struct {
	clientv3.Lease
	frozen, healthy clientv3.Lease
	mu              sync.Mutex
	on              bool
	n               int
}

func (r *routedLease) freeze() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = true
}

func (r *routedLease) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	r.mu.Lock()
	l := r.Lease
	if r.on {
		if l = r.frozen; r.n%3 == 2 {
			l = r.healthy
		}
		r.n++
	}
	r.mu.Unlock()
	return l.KeepAliveOnce(ctx, id)
}

// A member of a three-member etcd that freezes (SIGSTOP: it holds its connections and answers
// nothing) changes nothing: the leader's renewals that go to it get no answer until gRPC's
// keepalive drops the connection (10 s and the request timeout, past the lease's validity),
// and a renewal not answered within a tenth of the TTL is sent again, to the next member. The
// renewals go to the frozen member two times out of three (routedLease). A frozen follower of
// etcd's Raft, at a TTL of 3 s; and etcd's Raft leader, at the default TTL (10 s, as etcd takes
// an election timeout and more to elect another), killed while frozen (resumed, an old Raft
// leader may revoke the leases it thinks expired: etcd issue 15247).
func TestOneFrozenEtcdMemberChangesNothing(t *testing.T) {
	for _, tc := range []struct {
		name       string
		raftLeader bool
		ttl        time.Duration
	}{{"a raft follower", false, 3 * time.Second}, {"the raft leader", true, 10 * time.Second}} {
		t.Run(tc.name, func(t *testing.T) {
			c := etcdtest.Start(t, 3, etcdtest.Options{})
			connect := func(eps ...string) *clientv3.Client {
				cli, err := etcdstore.Connect(context.Background(), etcdstore.Options{Endpoints: eps,
					DialTimeout: 10 * time.Second, RequestTimeout: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = cli.Close() })
				return cli
			}
			all := connect(c.Endpoints()...)
			var target *etcdtest.Member
			var others []string
			for _, m := range c.Members {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				st, err := all.Status(ctx, m.ClientURL)
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				if target == nil && (st.Leader == st.Header.MemberId) == tc.raftLeader {
					target = m
					continue
				}
				others = append(others, m.ClientURL)
			}
			tm := &terms{t: t}
			var routes []*routedLease
			for _, n := range []string{"a", "b"} {
				cli := connect(c.Endpoints()...)
				r := &routedLease{Lease: cli.Lease, frozen: connect(target.ClientURL).Lease, healthy: connect(others...).Lease}
				cli.Lease = r
				routes = append(routes, r)
				startElector(t, cli, "/ha-one-frozen", n, tm, tc.ttl)
			}
			first := waitLeader(t, tm, 0, 10*time.Second)
			time.Sleep(tc.ttl / 2) // a renewal or two answered before the freeze
			c.Signal(target, syscall.SIGSTOP)
			for _, r := range routes {
				r.freeze()
			}
			// The old elector stopped within 0.9 TTL: the lease's validity, a tick of the watch.
			time.Sleep(tc.ttl + tc.ttl/2)
			if tc.raftLeader {
				c.Kill(target)
				c.Restart(target)
			} else {
				c.Signal(target, syscall.SIGCONT)
			}
			if span, n := tm.current(); n != 1 || !span.end.IsZero() {
				old, _ := tm.spanOf(first.name)
				t.Errorf("%s frozen: %d terms, %s's ended %s; want %s leading throughout", target.Name, n, first.name, old.end.Sub(first.start), first.name)
			}
		})
	}
}

// startElector runs an elector on cli, as startCandidate does through its proxy.
func startElector(t *testing.T, cli *clientv3.Client, prefix, name string, tm *terms, ttl time.Duration) {
	t.Helper()
	logger, _ := logtest.NewNullLogger()
	if testing.Verbose() {
		logger = logrus.New()
	}
	el, err := New(Options{Client: cli, Prefix: prefix, Self: Info{Name: name}, TTL: ttl, RequestTimeout: time.Second,
		Clock: clock.Real{}, Log: logger.WithField("rota", name), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := el.Run(ctx, tm.lead(name)); err != nil {
			t.Errorf("%s: Run: %v", name, err)
		}
	}()
	t.Cleanup(func() { stop(); <-done })
}
