package apifake

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/fleet"
)

// Backend is the fake. The zero value is not usable; call New.
type Backend struct {
	mu           sync.Mutex
	status       api.Status
	explanations map[string]api.Explanation
	decision     fleet.Decision
	err          error
	pins         map[string]string // node -> note
	maintenance  map[string]string // node -> note
	backup       []byte
	backupErr    error
	paused       bool
	pauseNote    string
	nudges       []string
	wakes        [][]string
}

var _ api.Backend = (*Backend)(nil)

// New returns a fake whose fleet is st: its nodes are the known ones.
func New(st api.Status) *Backend {
	return &Backend{status: st, explanations: map[string]api.Explanation{}, pins: map[string]string{}, maintenance: map[string]string{}}
}

// SetExplanation sets Explain's answer for node.
func (b *Backend) SetExplanation(node string, e api.Explanation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.explanations[node] = e
}

// SetDecision sets Plan's answer.
func (b *Backend) SetDecision(d fleet.Decision) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.decision = d
}

// SetError makes every later call but Nudge fail with err (nil clears it).
func (b *Backend) SetError(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.err = err
}

// Pin returns whether node is pinned and the note of its pin.
func (b *Backend) Pin(node string) (bool, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	note, ok := b.pins[node]
	return ok, note
}

// Maintenance returns whether node is in maintenance and the note said when it went in.
func (b *Backend) Maintenance(node string) (bool, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	note, ok := b.maintenance[node]
	return ok, note
}

// SetBackup sets what Backup writes; a non-nil err is returned after data is written (a copy
// cut short when data is not empty).
func (b *Backend) SetBackup(data []byte, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.backup, b.backupErr = slices.Clone(data), err
}

// Paused returns whether the scaler is paused and the note of the last pause or resume.
func (b *Backend) Paused() (bool, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.paused, b.pauseNote
}

// Nudges returns the reasons of the nudges received, in order.
func (b *Backend) Nudges() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.nudges)
}

// Status returns the status set by New, with the pause and pins applied.
func (b *Backend) Status(ctx context.Context) (api.Status, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.fail(ctx); err != nil {
		return api.Status{}, err
	}
	st := b.status
	st.Paused, st.PauseNote = b.paused, b.pauseNote
	st.Nodes = slices.Clone(st.Nodes)
	for i := range st.Nodes {
		st.Nodes[i].PinNote, st.Nodes[i].Pinned = b.pins[st.Nodes[i].Name]
		st.Nodes[i].MaintenanceNote, st.Nodes[i].Maintenance = b.maintenance[st.Nodes[i].Name]
	}
	return st, nil
}

// Explain returns the explanation set for node (by SetExplanation, or by Forget: its forget),
// ErrUnknownNode for a node not in the status that has none.
func (b *Backend) Explain(ctx context.Context, node string) (api.Explanation, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.fail(ctx); err != nil {
		return api.Explanation{}, err
	}
	e, ok := b.explanations[node]
	if !ok && !b.known(node) {
		return api.Explanation{}, fmt.Errorf("explaining %s: %w", node, api.ErrUnknownNode)
	}
	return e, nil
}

// Plan returns the decision set by SetDecision.
func (b *Backend) Plan(ctx context.Context) (fleet.Decision, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.fail(ctx); err != nil {
		return fleet.Decision{}, err
	}
	d := b.decision
	d.Actions, d.Skips, d.Desired = slices.Clone(d.Actions), slices.Clone(d.Skips), maps.Clone(d.Desired)
	return d, nil
}

// SetPinned records the pin; ErrUnknownNode for a node not in the status, and for a pin of
// one that left the config (LeftConfig set), which can be unpinned alone.
func (b *Backend) SetPinned(ctx context.Context, node string, pinned bool, note string) error {
	return b.setFlag(ctx, b.pins, "pinning", node, pinned, note)
}

// SetMaintenance records the maintenance; ErrUnknownNode as for SetPinned.
func (b *Backend) SetMaintenance(ctx context.Context, node string, on bool, note string) error {
	return b.setFlag(ctx, b.maintenance, "setting maintenance of", node, on, note)
}

func (b *Backend) setFlag(ctx context.Context, flags map[string]string, what, node string, on bool, note string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.fail(ctx); err != nil {
		return err
	}
	i := b.index(node)
	if i < 0 || on && b.status.Nodes[i].LeftConfig != "" {
		return fmt.Errorf("%s %s: %w", what, node, api.ErrUnknownNode)
	}
	if on {
		flags[node] = note
	} else {
		delete(flags, node)
	}
	return nil
}

// Forget removes node from the status when it left the config (LeftConfig set) and has no
// action in flight, and Explain then answers its forget (noted with note, at the status's last
// pass); a node in a pool, or one with an action in flight, is a *api.KeptError and
// ErrUnknownNode one not in the status.
func (b *Backend) Forget(ctx context.Context, node, note string) (api.NodeStatus, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.fail(ctx); err != nil {
		return api.NodeStatus{}, err
	}
	i := b.index(node)
	switch {
	case i < 0:
		return api.NodeStatus{}, fmt.Errorf("forgetting %s: %w", node, api.ErrUnknownNode)
	case b.status.Nodes[i].LeftConfig == "":
		return api.NodeStatus{}, &api.KeptError{Why: "it is in the config"}
	case b.status.Nodes[i].InFlight != nil:
		return api.NodeStatus{}, &api.KeptError{Why: "an action is under way on it"}
	}
	n := b.status.Nodes[i]
	b.status.Nodes = slices.Delete(slices.Clone(b.status.Nodes), i, i+1)
	forget := api.AuditRecord{Time: b.status.LastPass, Node: node, Action: "forget", Reason: "operator", Result: "succeeded",
		Detail: fmt.Sprintf("record forgotten (%s): it was %s", note, n.State)}
	b.explanations[node] = api.Explanation{Node: api.NodeStatus{Name: node}, History: []api.AuditRecord{forget}, Forgotten: &forget}
	return n, nil
}

// Backup writes what SetBackup set, then returns its error.
func (b *Backend) Backup(ctx context.Context, w io.Writer) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.fail(ctx); err != nil {
		return 0, err
	}
	n, err := w.Write(b.backup)
	if err != nil {
		return int64(n), err
	}
	return int64(n), b.backupErr
}

// SetPaused records the pause.
func (b *Backend) SetPaused(ctx context.Context, paused bool, note string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.fail(ctx); err != nil {
		return err
	}
	b.paused, b.pauseNote = paused, note
	return nil
}

// Nudge records the reason.
func (b *Backend) Nudge(reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nudges = append(b.nudges, reason)
}

// Wake records the request and answers, per node, started when the node is known and refused
// when it is not.
func (b *Backend) Wake(ctx context.Context, nodes []string, _ string) ([]api.WakeResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.fail(ctx); err != nil {
		return nil, err
	}
	b.wakes = append(b.wakes, slices.Clone(nodes))
	out := make([]api.WakeResult, len(nodes))
	for i, n := range nodes {
		out[i] = api.WakeResult{Node: n, Result: api.WakeStarted}
		if !b.known(n) {
			out[i] = api.WakeResult{Node: n, Result: api.WakeRefused, Reason: fleet.SkipUnknownNode, Detail: "not in the inventory"}
		}
	}
	return out, nil
}

// Wakes returns the node lists of the wake requests received, in order.
func (b *Backend) Wakes() [][]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.wakes)
}

func (b *Backend) known(node string) bool {
	return b.index(node) >= 0
}

// index is node's place in the status, -1 when it is not there.
func (b *Backend) index(node string) int {
	return slices.IndexFunc(b.status.Nodes, func(n api.NodeStatus) bool { return n.Name == node })
}

func (b *Backend) fail(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.err
}
