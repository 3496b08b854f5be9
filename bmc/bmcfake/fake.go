package bmcfake

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/rotahq/rota/bmc"
)

// Command is one power command the fake accepted.
type Command struct {
	Node string
	// Op is on, off, off_graceful or cycle.
	Op string
}

// Fake implements bmc.Power in memory. The zero value is not usable; call New.
type Fake struct {
	clock bmc.Clock

	mu       sync.Mutex
	nodes    map[string]*node
	commands []Command
}

type node struct {
	op    sync.Mutex // one operation at a time, like the Controller
	state bmc.State
	delay time.Duration
	errs  []error
	// watts is the draw by power state; a node without an entry for its state has no reading.
	watts map[bmc.State]float64
}

var (
	_ bmc.Power = (*Fake)(nil)
	_ bmc.Meter = (*Fake)(nil)
)

// New returns a fake with the given nodes and states. clock drives transition delays (a fake
// clock keeps tests instant); it may be nil when no node has a delay.
func New(clock bmc.Clock, states map[string]bmc.State) *Fake {
	f := &Fake{clock: clock, nodes: map[string]*node{}}
	for n, st := range states {
		f.nodes[n] = &node{state: st}
	}
	return f
}

// SetState changes a node's state (adding the node if needed); StateUnknown makes every
// operation on it fail with a *bmc.StateUnknownError and send nothing.
func (f *Fake) SetState(name string, st bmc.State) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n, ok := f.nodes[name]; ok {
		n.state = st
		return
	}
	f.nodes[name] = &node{state: st}
}

// SetDelay makes commands to the node take d: the state is StateTransitioning meanwhile.
func (f *Fake) SetDelay(name string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes[name].delay = d
}

// FailNext makes the node's next operations return errs, one each, before anything is sent
// (use the bmc package's typed errors: &bmc.AuthError{}, &bmc.StateUnknownError{}, ...).
func (f *Fake) FailNext(name string, errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes[name].errs = append(f.nodes[name].errs, errs...)
}

// SetWatts makes the node's BMC report a draw of on watts while on (or changing state) and
// off while off; without it the node's BMC offers no reading.
func (f *Fake) SetWatts(name string, on, off float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes[name].watts = map[bmc.State]float64{bmc.StateOn: on, bmc.StateTransitioning: on, bmc.StateOff: off}
}

// PowerReading implements bmc.Meter: the draw SetWatts gave for the node's state, or an error
// wrapping bmc.ErrNoReading. A scripted error (FailNext) or an unknown state fails it too.
func (f *Fake) PowerReading(ctx context.Context, name string) (bmc.Reading, error) {
	n, err := f.begin(ctx, name)
	if err != nil {
		return bmc.Reading{}, err
	}
	defer n.op.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	w, ok := n.watts[n.state]
	if !ok {
		return bmc.Reading{}, fmt.Errorf("reading the power draw of %s: %w", name, bmc.ErrNoReading)
	}
	return bmc.Reading{Watts: w, Source: "fake"}, nil
}

// Commands returns the commands accepted so far, in order.
func (f *Fake) Commands() []Command {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Command(nil), f.commands...)
}

// Nodes returns the node names, sorted.
func (f *Fake) Nodes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	names := make([]string, 0, len(f.nodes))
	for n := range f.nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// State implements bmc.Power.
func (f *Fake) State(ctx context.Context, name string) (bmc.State, error) {
	n, err := f.begin(ctx, name)
	if err != nil {
		return bmc.StateUnknown, err
	}
	defer n.op.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if n.state == bmc.StateUnknown {
		return bmc.StateUnknown, fmt.Errorf("reading power state of %s: %w", name, &bmc.StateUnknownError{Node: name, Err: fmt.Errorf("scripted")})
	}
	return n.state, nil
}

// On implements bmc.Power.
func (f *Fake) On(ctx context.Context, name string) error {
	return f.drive(ctx, name, "on", bmc.StateOn)
}

// Off implements bmc.Power.
func (f *Fake) Off(ctx context.Context, name string, graceful bool) error {
	op := "off"
	if graceful {
		op = "off_graceful"
	}
	return f.drive(ctx, name, op, bmc.StateOff)
}

// Cycle implements bmc.Power: a node that is on or off ends on, with one cycle command.
func (f *Fake) Cycle(ctx context.Context, name string) error {
	return f.drive(ctx, name, "cycle", bmc.StateOn)
}

// begin takes the node's operation lock and pops a scripted error.
func (f *Fake) begin(ctx context.Context, name string) (*node, error) {
	f.mu.Lock()
	n, ok := f.nodes[name]
	f.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%s: %w", name, bmc.ErrUnknownNode)
	}
	n.op.Lock()
	if err := ctx.Err(); err != nil {
		n.op.Unlock()
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(n.errs) > 0 {
		err := n.errs[0]
		n.errs = n.errs[1:]
		n.op.Unlock()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return n, nil
}

func (f *Fake) drive(ctx context.Context, name, op string, want bmc.State) error {
	n, err := f.begin(ctx, name)
	if err != nil {
		return err
	}
	defer n.op.Unlock()
	f.mu.Lock()
	switch {
	case n.state == bmc.StateUnknown:
		f.mu.Unlock()
		return fmt.Errorf("%s: %w", name, &bmc.StateUnknownError{Node: name, Err: fmt.Errorf("scripted")})
	case n.state == want && op != "cycle":
		f.mu.Unlock()
		return nil
	}
	f.commands = append(f.commands, Command{Node: name, Op: op})
	delay := n.delay
	if delay > 0 {
		n.state = bmc.StateTransitioning
	}
	f.mu.Unlock()
	if delay > 0 {
		if err := f.clock.Sleep(ctx, delay); err != nil {
			return fmt.Errorf("%s: %w", name, &bmc.NotConfirmedError{Node: name, Want: want, Last: bmc.StateTransitioning, Err: err})
		}
	}
	f.mu.Lock()
	n.state = want
	f.mu.Unlock()
	return nil
}
