package executortest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs"
)

// Server is one server of the World.
type Server struct {
	Power bmc.State
	// PowerUnknown makes the BMC unreadable: State and every command fail with ErrStateUnknown.
	PowerUnknown bool
	// AuthFails makes every command fail authentication.
	AuthFails bool
	// NoSlot makes every command wait out its operation for a slot under bmc.concurrency and
	// fail with bmc.ErrNoSlot, never sent (the state stays readable).
	NoSlot bool
	// Unmanaged servers are unknown to the job manager. Unregistered makes Resume fail with
	// jobs.ErrNotRegistered (an agent that registers as it boots: a kubelet its Node).
	Unmanaged, Unregistered bool
	// DrainFails makes the job manager refuse to drain the server.
	DrainFails bool
	// Hangs makes power commands hang until their context ends (a BMC that never answers).
	Hangs bool
	// OffFails makes the BMC refuse every power-off (the power stays as it is).
	OffFails bool
	// Jobs allocated now (each holding one CPU); Requeueable are the ids of those among them
	// the job manager may requeue (Move moves only these).
	Jobs        int
	Requeueable []string
	// CPUs and GPUs allocated besides the counted jobs (a reservation, an allocation whose
	// job the job manager does not list): the server is not empty either.
	CPUs, GPUs    int
	Drained       bool
	DrainedByRota bool
	// DrainReason is the reason of rota's last drain, as the executor gave it; the adapter adds
	// jobs.Marker, so every drain through Drain is rota's.
	DrainReason string
	Responding  bool
	// PowerSaving: the job manager's own power saving has the server (Slurm's powered down).
	PowerSaving bool
	// MoveUnfinished is how many more Move calls leave the jobs they take off the server held
	// (jobs.ErrMoveUnfinished, as a Slurm release that fails); Held are the jobs held so, each
	// let go by the next Move that finishes.
	MoveUnfinished int
	Held           []string
}

// Command is one call that changed (or would have changed) the world.
type Command struct {
	Node string
	Op   string // on, off, drain, resume, move
}

// World implements bmc.Power and jobs.Manager over one set of servers. Safe for concurrent use.
type World struct {
	mu       sync.Mutex
	servers  map[string]*Server
	demand   []fleet.Demand
	jobsErr  error
	commands []Command
	unsafe   []string
	// readyOnBoot: a server powered on responds to the job manager at once.
	readyOnBoot bool
}

var (
	_ bmc.Power    = (*World)(nil)
	_ jobs.Manager = (*World)(nil)
	_ jobs.Mover   = (*World)(nil)
)

// NewWorld returns a world whose servers respond as soon as they are powered on when
// readyOnBoot is set.
func NewWorld(readyOnBoot bool) *World {
	return &World{servers: map[string]*Server{}, readyOnBoot: readyOnBoot}
}

// Add puts a server in the world.
func (w *World) Add(name string, s Server) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.servers[name] = &s
}

// Set changes a server.
func (w *World) Set(name string, fn func(*Server)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fn(w.servers[name])
}

// Get returns a copy of a server.
func (w *World) Get(name string) Server {
	w.mu.Lock()
	defer w.mu.Unlock()
	return *w.servers[name]
}

// SetDemand sets the waiting work.
func (w *World) SetDemand(d []fleet.Demand) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.demand = d
}

// SetJobsErr makes Nodes and Demand fail with err (nil: answer again).
func (w *World) SetJobsErr(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.jobsErr = err
}

// Commands returns every command sent so far, in order.
func (w *World) Commands() []Command {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.commands)
}

// Unsafe lists the unsafe commands seen: a power-off of a server with a job allocated.
func (w *World) Unsafe() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.unsafe)
}

func (w *World) server(node string) (*Server, error) {
	s, ok := w.servers[node]
	if !ok {
		return nil, fmt.Errorf("%s: %w", node, bmc.ErrUnknownNode)
	}
	return s, nil
}

// State implements bmc.Power.
func (w *World) State(_ context.Context, node string) (bmc.State, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, err := w.server(node)
	if err != nil {
		return bmc.StateUnknown, err
	}
	if s.PowerUnknown {
		return bmc.StateUnknown, &bmc.StateUnknownError{Node: node, Err: errors.New("bmc unreachable")}
	}
	return s.Power, nil
}

// command checks that a command may be sent, as the real controller does.
func (w *World) command(ctx context.Context, node string) (*Server, error) {
	s, err := w.server(node)
	switch {
	case err != nil:
		return nil, err
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%s: %w", node, ctx.Err())
	case s.PowerUnknown:
		return nil, &bmc.StateUnknownError{Node: node, Err: errors.New("bmc unreachable")}
	case s.AuthFails:
		return nil, &bmc.AuthError{Node: node, Err: errors.New("401")}
	case s.NoSlot:
		return nil, fmt.Errorf("%s: %w", node, bmc.ErrNoSlot)
	}
	return s, nil
}

// On implements bmc.Power.
func (w *World) On(ctx context.Context, node string) error {
	if err := w.hang(ctx, node); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	s, err := w.command(ctx, node)
	if err != nil || s.Power == bmc.StateOn {
		return err
	}
	w.commands = append(w.commands, Command{node, "on"})
	s.Power, s.Responding = bmc.StateOn, w.readyOnBoot
	return nil
}

// Off implements bmc.Power.
func (w *World) Off(ctx context.Context, node string, _ bool) error {
	if err := w.hang(ctx, node); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	s, err := w.command(ctx, node)
	switch {
	case err != nil || s.Power == bmc.StateOff:
		return err
	case s.OffFails:
		return fmt.Errorf("%s: bmc refused the power-off", node)
	}
	w.commands = append(w.commands, Command{node, "off"})
	if s.Jobs > 0 || s.CPUs > 0 || s.GPUs > 0 {
		w.unsafe = append(w.unsafe, fmt.Sprintf("%s powered off with %d jobs, %d more CPUs and %d GPUs allocated", node, s.Jobs, s.CPUs, s.GPUs))
	}
	s.Power, s.Responding = bmc.StateOff, false
	return nil
}

// hang blocks a command to a hanging server until ctx ends, and returns ctx's error.
func (w *World) hang(ctx context.Context, node string) error {
	w.mu.Lock()
	s, ok := w.servers[node]
	hangs := ok && s.Hangs
	w.mu.Unlock()
	if !hangs {
		return nil
	}
	<-ctx.Done()
	return fmt.Errorf("%s: %w", node, ctx.Err())
}

// Cycle implements bmc.Power.
func (w *World) Cycle(ctx context.Context, node string) error { return w.On(ctx, node) }

// Nodes implements jobs.Manager.
func (w *World) Nodes(context.Context) (map[string]fleet.JobsView, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.jobsErr != nil {
		return nil, w.jobsErr
	}
	out := map[string]fleet.JobsView{}
	for _, name := range slices.Sorted(maps.Keys(w.servers)) {
		s := w.servers[name]
		if s.Unmanaged {
			continue
		}
		out[name] = fleet.JobsView{Known: true, Jobs: s.Jobs, CPUs: s.Jobs + s.CPUs, GPUs: s.GPUs,
			Drained: s.Drained, DrainedByRota: s.DrainedByRota, Responding: s.Responding, PowerSaving: s.PowerSaving}
	}
	return out, nil
}

// Demand implements jobs.Manager.
func (w *World) Demand(context.Context) ([]fleet.Demand, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.jobsErr != nil {
		return nil, w.jobsErr
	}
	return slices.Clone(w.demand), nil
}

// Drain implements jobs.Manager.
func (w *World) Drain(_ context.Context, node, reason string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, err := w.server(node)
	if err != nil {
		return err
	}
	if s.DrainFails {
		return fmt.Errorf("draining %s: refused", node)
	}
	w.commands = append(w.commands, Command{node, "drain"})
	s.Drained, s.DrainedByRota, s.DrainReason = true, true, reason
	return nil
}

// Resume implements jobs.Manager.
func (w *World) Resume(_ context.Context, node string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, err := w.server(node)
	if err != nil {
		return err
	}
	if s.Drained && !s.DrainedByRota {
		return jobs.ErrNotOurs
	}
	if s.Unregistered {
		return fmt.Errorf("resuming %s: %w", node, jobs.ErrNotRegistered)
	}
	w.commands = append(w.commands, Command{node, "resume"})
	s.Drained, s.DrainedByRota = false, false
	return nil
}

// Move implements jobs.Mover: the named jobs that are requeueable and still on the server
// leave it (a move of none sends nothing).
func (w *World) Move(_ context.Context, node string, ids, _ []string) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, err := w.server(node)
	if err != nil {
		return 0, err
	}
	moved := 0
	for _, id := range ids {
		if i := slices.Index(s.Requeueable, id); i >= 0 {
			s.Requeueable = slices.Delete(s.Requeueable, i, i+1)
			s.Jobs--
			s.Held = append(s.Held, id)
			moved++
		}
	}
	if moved > 0 || len(s.Held) > 0 {
		w.commands = append(w.commands, Command{node, "move"})
	}
	if s.MoveUnfinished > 0 {
		s.MoveUnfinished--
		return moved, fmt.Errorf("releasing %s: %w", strings.Join(s.Held, ","), jobs.ErrMoveUnfinished)
	}
	s.Held = nil
	return moved, nil
}
