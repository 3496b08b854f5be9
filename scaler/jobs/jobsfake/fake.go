package jobsfake

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs"
)

// Op names a Manager operation, for SetError.
type Op string

// The operations of jobs.Manager.
const (
	OpNodes  Op = "nodes"
	OpDemand Op = "demand"
	OpDrain  Op = "drain"
	OpResume Op = "resume"
)

// Call is one Drain or Resume the fake was asked for (Reason is empty for Resume).
type Call struct {
	Op     Op
	Node   string
	Reason string
}

// Manager is the fake. The zero value is not usable; call New.
type Manager struct {
	mu     sync.Mutex
	nodes  map[string]fleet.JobsView
	demand []fleet.Demand
	errs   map[Op]error
	calls  []Call
}

var _ jobs.Manager = (*Manager)(nil)

// New returns a fake that knows no node and has no demand.
func New() *Manager {
	return &Manager{nodes: map[string]fleet.JobsView{}, errs: map[Op]error{}}
}

// SetNode sets what the job manager says of node; Known is set to true.
func (m *Manager) SetNode(node string, v fleet.JobsView) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v.Known = true
	m.nodes[node] = v
}

// RemoveNode makes node unknown to the job manager.
func (m *Manager) RemoveNode(node string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.nodes, node)
}

// Node returns what the fake says of node now (after drains and resumes).
func (m *Manager) Node(node string) (fleet.JobsView, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.nodes[node]
	return v, ok
}

// SetDemand replaces the demand.
func (m *Manager) SetDemand(d []fleet.Demand) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.demand = slices.Clone(d)
}

// SetError makes every later call of op fail with err (nil clears it). A failing Drain or
// Resume is still recorded in Calls, as the real job manager may have seen it.
func (m *Manager) SetError(op Op, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err == nil {
		delete(m.errs, op)
		return
	}
	m.errs[op] = err
}

// Calls returns the drains and resumes asked for so far, in order.
func (m *Manager) Calls() []Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

// Nodes implements jobs.Manager.
func (m *Manager) Nodes(ctx context.Context) (map[string]fleet.JobsView, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fail(ctx, OpNodes); err != nil {
		return nil, err
	}
	return maps.Clone(m.nodes), nil
}

// Demand implements jobs.Manager.
func (m *Manager) Demand(ctx context.Context) ([]fleet.Demand, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fail(ctx, OpDemand); err != nil {
		return nil, err
	}
	return slices.Clone(m.demand), nil
}

// Drain implements jobs.Manager: the node becomes drained by rota, unless a person drained it
// already (their drain stays theirs).
func (m *Manager) Drain(ctx context.Context, node, reason string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, Call{Op: OpDrain, Node: node, Reason: reason})
	if err := m.fail(ctx, OpDrain); err != nil {
		return err
	}
	v, ok := m.nodes[node]
	if !ok {
		return fmt.Errorf("draining %s: node unknown to the job manager", node)
	}
	if !v.Drained {
		v.Drained, v.DrainedByRota = true, true
		m.nodes[node] = v
	}
	return nil
}

// Resume implements jobs.Manager.
func (m *Manager) Resume(ctx context.Context, node string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, Call{Op: OpResume, Node: node})
	if err := m.fail(ctx, OpResume); err != nil {
		return err
	}
	v, ok := m.nodes[node]
	if !ok {
		return fmt.Errorf("resuming %s: node unknown to the job manager", node)
	}
	if v.Drained && !v.DrainedByRota {
		return fmt.Errorf("resuming %s: %w", node, jobs.ErrNotOurs)
	}
	v.Drained, v.DrainedByRota = false, false
	m.nodes[node] = v
	return nil
}

// fail returns the injected error for op, or ctx's error; m.mu is held.
func (m *Manager) fail(ctx context.Context, op Op) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return m.errs[op]
}
