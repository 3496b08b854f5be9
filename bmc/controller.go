package bmc

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
)

// Options tune a Controller. Logger and Clock are required; a zero duration or count means
// the default named in its comment.
type Options struct {
	Logger *logrus.Entry
	Clock  Clock
	// Registerer receives the rota_bmc_* metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// MaxConcurrent caps the requests out at once across all BMCs (64); an operation holds a
	// slot only while one of its requests is out (see slot).
	MaxConcurrent int
	// MinCommandInterval is the least time between two commands to one BMC (1s; negative:
	// no spacing).
	MinCommandInterval time.Duration
	// OperationTimeout bounds one whole operation, waits and confirmation included (5m); the
	// caller's context may end it sooner.
	OperationTimeout time.Duration
	// CallTimeout bounds one call to a BMC: open, read or command (20s).
	CallTimeout time.Duration
	// ConfirmTimeout is how long a command has to show its effect (3m).
	ConfirmTimeout time.Duration
	// PollInterval is the time between state reads while confirming (2s).
	PollInterval time.Duration
	// GracePeriod is how long a graceful shutdown may take before power is cut (2m).
	GracePeriod time.Duration
	// ResendAfter: a power-on accepted but with the node still off this long is sent again (30s).
	ResendAfter time.Duration
	// MaxResends is how many times a power-on is re-sent inside the confirm window (1; -1: never).
	MaxResends int
	// Attempts is how many times a call that failed transiently is tried (3).
	Attempts int
	// BackoffBase and BackoffMax bound the exponential backoff between attempts (500ms, 8s).
	BackoffBase, BackoffMax time.Duration
	// Jitter returns a number in [0,1) that spreads backoffs (math/rand/v2's Float64).
	Jitter func() float64
	// LookupEnv reads password_env variables (os.LookupEnv).
	LookupEnv func(string) (string, bool)

	// dial replaces bmclib, and meter the power readings, in this package's unit tests.
	dial  dialer
	meter meter
}

func (o *Options) defaults() error {
	if o.Logger == nil || o.Clock == nil {
		return fmt.Errorf("bmc options: logger and clock are required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.MinCommandInterval, time.Second)
	def(&o.OperationTimeout, 5*time.Minute)
	def(&o.CallTimeout, 20*time.Second)
	def(&o.ConfirmTimeout, 3*time.Minute)
	def(&o.PollInterval, 2*time.Second)
	def(&o.GracePeriod, 2*time.Minute)
	def(&o.ResendAfter, 30*time.Second)
	def(&o.BackoffBase, 500*time.Millisecond)
	def(&o.BackoffMax, 8*time.Second)
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = 64
	}
	if o.MaxResends == 0 {
		o.MaxResends = 1
	}
	if o.Attempts <= 0 {
		o.Attempts = 3
	}
	if o.Jitter == nil {
		o.Jitter = rand.Float64
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	d := &bmclibDialer{log: o.Logger.WithField("lib", "bmclib"), clock: o.Clock, callTimeout: o.CallTimeout, ping: RMCPPing}
	if o.dial == nil {
		o.dial = d
	}
	if o.meter == nil {
		o.meter = bmcMeter{d: d}
	}
	return nil
}

// Controller is the Power implementation over bmclib. Build it with NewController.
type Controller struct {
	opts  Options
	nodes map[string]*node
	slots *slots
	m     *metrics
}

var _ Power = (*Controller)(nil)

// node is one registered server, and the BMC it is reached through.
type node struct {
	name string
	ep   Endpoint
	bmc  *bmcTurn
}

// bmcTurn is one BMC's turn, shared by every node it serves (a blade enclosure's manager
// serves several, each picked by system_name): lock is a one-slot channel (so waiting honours
// ctx) held for each operation that may send commands; it guards lastCommand, the BMC's last
// command, whichever node it was for. reading is the same for reads, which send no command.
type bmcTurn struct {
	lock        chan struct{}
	reading     chan struct{}
	lastCommand time.Time
}

// bmcKey names the BMC an endpoint reaches: its protocol and address (a host name without
// case).
func bmcKey(ep Endpoint) string {
	return string(ep.Protocol) + " " + strings.ToLower(ep.Address())
}

// NewController registers the nodes' endpoints (validated) and returns a Controller.
func NewController(nodes map[string]Endpoint, opts Options) (*Controller, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	m := newMetrics(opts.Registerer)
	c := &Controller{
		opts:  opts,
		nodes: make(map[string]*node, len(nodes)),
		slots: newSlots(opts.MaxConcurrent, m.reqWaiting),
		m:     m,
	}
	turns := map[string]*bmcTurn{}
	for name, ep := range nodes {
		if errs := ep.Validate(); len(errs) > 0 {
			return nil, fmt.Errorf("node %s: bmc: %w", name, errs[0])
		}
		turn, ok := turns[bmcKey(ep)]
		if !ok {
			turn = &bmcTurn{lock: make(chan struct{}, 1), reading: make(chan struct{}, 1)}
			turns[bmcKey(ep)] = turn
		}
		c.nodes[name] = &node{name: name, ep: ep, bmc: turn}
		// The password is read again at each session (a rotated file is taken), so one
		// missing now is no error; said at start, it is not first seen at a failed command.
		if _, err := ep.Password(opts.LookupEnv); err != nil {
			opts.Logger.WithField("node", name).WithError(err).Warn("BMC password unavailable: every call to this BMC fails (auth) until it is")
		}
	}
	return c, nil
}

// Nodes returns the registered node names, sorted.
func (c *Controller) Nodes() []string {
	names := make([]string, 0, len(c.nodes))
	for n := range c.nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// State implements Power.
func (c *Controller) State(ctx context.Context, name string) (State, error) {
	st := StateUnknown
	err := c.run(ctx, name, "state", "reading power state of", read, func(ctx context.Context, s *session) error {
		var err error
		st, err = s.read(ctx)
		return err
	})
	return st, err
}

// On implements Power.
func (c *Controller) On(ctx context.Context, name string) error {
	return c.run(ctx, name, "on", "powering on", powerOn, func(ctx context.Context, s *session) error { return s.drive(ctx, StateOn, actionOn) })
}

// Off implements Power.
func (c *Controller) Off(ctx context.Context, name string, graceful bool) error {
	if graceful {
		return c.run(ctx, name, "off_graceful", "shutting down", command, func(ctx context.Context, s *session) error { return s.gracefulOff(ctx) })
	}
	return c.run(ctx, name, "off", "powering off", command, func(ctx context.Context, s *session) error { return s.drive(ctx, StateOff, actionOff) })
}

// Cycle implements Power.
func (c *Controller) Cycle(ctx context.Context, name string) error {
	return c.run(ctx, name, "cycle", "power cycling", command, func(ctx context.Context, s *session) error { return s.cycle(ctx) })
}

// kind is what an operation waits for on its BMC (run).
type kind int

const (
	// read: a state read or a power reading. It sends no command, so it waits only for the
	// BMC's previous read, never behind an operation that may command (a shutdown holds its
	// turn for minutes): one of each at most is under way on a BMC at once.
	read kind = iota
	// command: an operation that may send power commands, one at a time per BMC.
	command
	// powerOn: a command whose requests take the next free slot of the concurrency cap before
	// any other's (slots): work waits for it.
	powerOn
)

// run runs fn with a fresh session (one bmclib client per operation), holding the node's BMC's
// turn for its kind, and records the outcome. Each request fn makes takes a slot of the
// concurrency cap while it is out (slot).
func (c *Controller) run(ctx context.Context, name, op, verb string, k kind, fn func(context.Context, *session) error) error {
	n, ok := c.nodes[name]
	if !ok {
		c.m.operations.WithLabelValues("none", op, resultLabel(ErrUnknownNode)).Inc()
		return fmt.Errorf("%s %s: %w", verb, name, ErrUnknownNode)
	}
	start := c.opts.Clock.Now()
	ctx, cancel := context.WithTimeout(ctx, c.opts.OperationTimeout)
	defer cancel()
	err := c.withTurn(ctx, n, k, func() error {
		s := &session{c: c, n: n, urgent: k == powerOn, log: c.opts.Logger.WithFields(logrus.Fields{"node": name, "operation": op})}
		defer s.close()
		return fn(ctx, s)
	})
	proto := string(n.ep.Protocol)
	c.m.operations.WithLabelValues(proto, op, resultLabel(err)).Inc()
	c.m.opDuration.WithLabelValues(proto, op).Observe(c.opts.Clock.Now().Sub(start).Seconds())
	if err != nil {
		c.opts.Logger.WithFields(logrus.Fields{"node": name, "operation": op, "result": resultLabel(err)}).WithError(err).Warn("power operation failed")
		return fmt.Errorf("%s %s: %w", verb, name, err)
	}
	return nil
}

// withTurn runs fn as an operation under way, holding the node's BMC's turn for its kind: one
// operation that may command at a time per BMC, and one read beside it.
func (c *Controller) withTurn(ctx context.Context, n *node, k kind, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	turn, prev := n.bmc.lock, "operation"
	if k == read {
		turn, prev = n.bmc.reading, "read"
	}
	select {
	case turn <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("waiting for the bmc's previous %s: %w", prev, ctx.Err())
	}
	defer func() { <-turn }()
	c.m.inflight.Inc()
	defer c.m.inflight.Dec()
	return fn()
}

// slot waits for one of MaxConcurrent slots for one request to a BMC (a connection's open or
// close, a state read, a command, a task's or a power reading's read) and returns its release;
// urgent (a power-on's) goes before the others waiting (slots). An operation holds a slot only
// while one of its requests is out, never through its waits (a graceful shutdown's grace
// period, the confirmation's polls, backoffs): a few slots serve many servers shutting down at
// once, and an operation never waits for a slot behind others' shutdowns. The wait is bounded
// by ctx, the operation's, not by the call timeout: a request waiting for a slot has not been
// sent.
func (c *Controller) slot(ctx context.Context, urgent bool) (func(), error) {
	if err := c.slots.take(ctx, urgent); err != nil {
		return nil, &noSlotError{err: err}
	}
	c.m.reqInflight.Inc()
	return func() { c.m.reqInflight.Dec(); c.slots.give() }, nil
}

// noSlotError: a request's wait for a slot ended (its operation's context did) before it went
// out, so nothing reached the BMC.
type noSlotError struct{ err error }

func (e *noSlotError) Error() string {
	return "waiting for a slot under the concurrency cap: " + e.err.Error()
}

func (e *noSlotError) Unwrap() error { return e.err }

func (e *noSlotError) Is(target error) bool { return target == ErrNoSlot }

// backoff returns the wait before attempt i+1: exponential from BackoffBase, capped at
// BackoffMax, with the upper half jittered.
func (c *Controller) backoff(i int) time.Duration {
	d := c.opts.BackoffBase << min(i, 16)
	if d > c.opts.BackoffMax || d <= 0 {
		d = c.opts.BackoffMax
	}
	return d/2 + time.Duration(c.opts.Jitter()*float64(d/2))
}
