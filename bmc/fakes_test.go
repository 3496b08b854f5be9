package bmc

import (
	"context"
	"errors"
	"sync"
	"time"
)

// fakeClock advances only when someone sleeps: tests of waits and deadlines run instantly.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return nil
}

// fakeBMC is one scripted BMC for the Controller's unit tests.
type fakeBMC struct {
	script
	mu      sync.Mutex
	clock   *fakeClock
	maxConc *maxTracker // connections open at once
	// requests, if set, counts the requests out at once (each out for a short real time, so
	// that requests made together overlap).
	requests *maxTracker
	// gate, if set, holds a graceful shutdown: the node stays on after its soft off until
	// every node sharing the gate has been sent one.
	gate *softGate
	soft bool // a soft off was received
	// hold, if set, keeps each state read out until it is closed.
	hold chan struct{}
	// sent, if set, records the BMC at each command, in the order the BMCs sharing it got them.
	sent *sentLog

	dials    int
	commands []string
	active   int         // operations holding a connection right now
	at       []time.Time // when each command was sent
}

// script is what a test sets up (kept apart from fakeBMC's lock so tables can hold it).
type script struct {
	raw string // what PowerState answers ("on", "off", "poweringon", or garbage)
	// settleAfter: a command's effect shows this long after it is sent.
	settleAfter time.Duration
	pending     string
	pendingAt   time.Time

	dialErr  []error // returned by successive dials (nil: success)
	stateErr []error // returned by successive state reads before answering
	setErr   []error // returned by successive commands
	// applyOnErr: a command that returns an error still takes effect.
	applyOnErr bool
	// ignore lists actions accepted and ignored (dropped power-on, hung OS).
	ignore map[string]int
}

type maxTracker struct {
	mu       sync.Mutex
	cur, max int
}

func (m *maxTracker) add(d int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cur += d
	if m.cur > m.max {
		m.max = m.cur
	}
}

// out counts one request out on b.requests for a short real time and returns its end.
func (b *fakeBMC) out() func() {
	if b.requests == nil {
		return func() {}
	}
	b.requests.add(1)
	time.Sleep(20 * time.Microsecond)
	return func() { b.requests.add(-1) }
}

// sentLog is the order in which BMCs got commands.
type sentLog struct {
	mu   sync.Mutex
	bmcs []*fakeBMC
}

func (l *sentLog) add(b *fakeBMC) { l.mu.Lock(); defer l.mu.Unlock(); l.bmcs = append(l.bmcs, b) }

// softGate counts the nodes sent a soft off, out of n.
type softGate struct {
	mu      sync.Mutex
	n, sent int
}

func (g *softGate) add() { g.mu.Lock(); defer g.mu.Unlock(); g.sent++ }

func (g *softGate) open() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.sent >= g.n }

var errTransient = errors.New("connection reset by peer")

func pop(q *[]error) error {
	if len(*q) == 0 {
		return nil
	}
	err := (*q)[0]
	*q = (*q)[1:]
	return err
}

type fakeDialer struct{ bmcs map[string]*fakeBMC }

func (d *fakeDialer) Dial(_ context.Context, node string, _ Endpoint, _ Secret) (conn, error) {
	b := d.bmcs[node]
	b.mu.Lock()
	defer b.mu.Unlock()
	defer b.out()()
	b.dials++
	if err := pop(&b.dialErr); err != nil {
		return nil, err
	}
	b.active++
	if b.maxConc != nil {
		b.maxConc.add(1)
	}
	return &fakeConn{b: b}, nil
}

type fakeConn struct{ b *fakeBMC }

func (c *fakeConn) PowerState(ctx context.Context) (string, error) {
	b := c.b
	b.mu.Lock()
	defer b.mu.Unlock()
	defer b.out()()
	if b.hold != nil {
		<-b.hold
	}
	if err := pop(&b.stateErr); err != nil {
		return "", err
	}
	if b.gate != nil && b.soft && b.raw == "on" && b.gate.open() {
		b.raw = "off"
	}
	if b.pending != "" && !b.clock.Now().Before(b.pendingAt) {
		b.raw, b.pending = b.pending, ""
	}
	return b.raw, nil
}

func (c *fakeConn) SetPower(ctx context.Context, action string) (string, error) {
	b := c.b
	b.mu.Lock()
	defer b.mu.Unlock()
	defer b.out()()
	b.commands = append(b.commands, action)
	if b.sent != nil {
		b.sent.add(b)
	}
	if b.gate != nil && action == actionSoft {
		b.soft = true
		b.gate.add()
		return "", nil
	}
	b.at = append(b.at, b.clock.Now())
	err := pop(&b.setErr)
	if err != nil && !b.applyOnErr {
		return "", err
	}
	if b.ignore[action] != 0 {
		b.ignore[action]--
		return "", err
	}
	target := map[string]string{actionOn: "on", actionOff: "off", actionSoft: "off"}[action]
	b.pending, b.pendingAt = target, b.clock.Now().Add(b.settleAfter)
	if b.settleAfter > 0 {
		b.raw = "powering" + target
	}
	return "", err
}

func (c *fakeConn) Task(context.Context, string) (bool, error) { return true, nil }

func (c *fakeConn) Provider() string { return "gofish" }

func (c *fakeConn) Close(context.Context) error {
	b := c.b
	b.mu.Lock()
	defer b.mu.Unlock()
	defer b.out()()
	b.active--
	if b.maxConc != nil {
		b.maxConc.add(-1)
	}
	return nil
}
