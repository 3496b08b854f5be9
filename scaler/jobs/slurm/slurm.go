package slurm

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/internal/slurmcli"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs"
)

// Errors for control flow.
var (
	// ErrUnknownNode: Slurm does not know the node. It is jobs.ErrNotRegistered: a node that
	// registers itself as it boots (slurmd -Z, a dynamic node deleted while off) is unknown
	// until its slurmd starts, and the executor waits for it within the pool's boot timeout.
	ErrUnknownNode = fmt.Errorf("%w: slurm has no such node", jobs.ErrNotRegistered)
	// ErrRequeueDisabled: Move was called but jobs.slurm.requeue is off.
	ErrRequeueDisabled = fmt.Errorf("%w: requeue is disabled (jobs.slurm.requeue)", jobs.ErrCannotMove)
)

// Options build a Manager.
type Options struct {
	// Run runs Slurm's commands (slurmcli.Commands.Run in production).
	Run slurmcli.Runner
	// Classify maps a pending job's shape to its class (config.Config.Classify).
	Classify Classifier
	// Requeue allows Move (jobs.slurm.requeue).
	Requeue bool
	// Location is the time zone Slurm prints times in (the controller's); nil is time.Local.
	Location *time.Location
	Log      *logrus.Entry
}

// Manager is the jobs.Manager for Slurm, driving sinfo, squeue and scontrol. It keeps no
// state between calls and is safe for concurrent use. Besides jobs.Manager it offers Move
// (jobs.Mover: requeue work away from a server), SetWeights (fill the cheapest servers
// first) and PoweredOff/PoweredOn (keep Slurm's view of power consistent when rota powers a
// server itself).
type Manager struct {
	opts Options
	// cli reads Slurm with opts.Run, in opts.Location.
	cli slurmcli.Client
}

var (
	_ jobs.Manager    = (*Manager)(nil)
	_ jobs.PowerAware = (*Manager)(nil)
	_ jobs.Watcher    = (*Manager)(nil)
	_ jobs.Mover      = (*Manager)(nil)
)

// New returns a Manager.
func New(opts Options) *Manager {
	return &Manager{opts: opts, cli: slurmcli.Client{Run: opts.Run, Location: opts.Location}}
}

// NewFromConfig builds a Manager from rota's config: jobs.slurm (conf, bin_dir, requeue),
// jobs.timeout and the classes.
func NewFromConfig(cfg *config.Config, log *logrus.Entry) *Manager {
	s := cfg.Jobs.Slurm
	return New(Options{
		Run:      slurmcli.Commands{Conf: s.Conf, BinDir: s.BinDir, Timeout: time.Duration(cfg.Jobs.Timeout)}.Run,
		Classify: cfg.Classify,
		Requeue:  s.Requeue,
		Log:      log,
	})
}

// Read returns one whole View: every node (sinfo) and every job (squeue). Any command that
// fails or any line that does not parse fails the read.
func (m *Manager) Read(ctx context.Context) (View, error) {
	v, err := m.cli.Read(ctx)
	return View(v), err
}

// Nodes implements jobs.Manager.
func (m *Manager) Nodes(ctx context.Context) (map[string]fleet.JobsView, error) {
	v, err := m.Read(ctx)
	if err != nil {
		return nil, err
	}
	return v.JobsViews(), nil
}

// Demand implements jobs.Manager: squeue's jobs, then their exclusions and reservations (a
// second squeue), then, only when a job waiting for servers asks CPUs per GPU, every job's
// memory per CPU (scontrol show job: slurmcli.Client.WithMemoryPerCPU), then, only when a job
// waiting for servers names a reservation, the reservations' nodes (scontrol show
// reservation), read after the queue so that a reservation the queue names and scontrol does
// not list has ended.
func (m *Manager) Demand(ctx context.Context) ([]fleet.Demand, error) {
	queue, err := m.cli.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	if err := m.cli.WithExcludes(ctx, queue); err != nil {
		return nil, err
	}
	if err := m.cli.WithMemoryPerCPU(ctx, queue); err != nil {
		return nil, err
	}
	v := View{Jobs: queue}
	if slices.ContainsFunc(queue, func(j Job) bool { return j.WantsServers() && len(j.Reservations) > 0 }) {
		if v.Reservations, err = m.cli.Reservations(ctx); err != nil {
			return nil, err
		}
	}
	return v.Demand(m.opts.Classify), nil
}

// Waiting implements jobs.Watcher: one squeue of the pending jobs, three fields each
// (slurmcli.Client.Waiting).
func (m *Manager) Waiting(ctx context.Context) ([]string, error) {
	return m.cli.Waiting(ctx)
}

// node reads one node.
func (m *Manager) node(ctx context.Context, name string) (Node, error) {
	if name == "" || strings.ContainsAny(name, "[],= \"") {
		return Node{}, fmt.Errorf("%w: bad node name %s", ErrUnknownNode, errtext.Quote(name))
	}
	nodes, err := m.cli.Nodes(ctx, name)
	if err != nil {
		return Node{}, err
	}
	for _, n := range nodes {
		if n.Name == name {
			return n, nil
		}
	}
	return Node{}, fmt.Errorf("%w: %s", ErrUnknownNode, name)
}

// Drain implements jobs.Manager: the node takes no new work; what runs finishes. The reason
// Slurm shows is jobs.Marker followed by reason. A node someone else took out of service (a
// drain, DOWN, FAIL or maintenance: OutOfService) is left as it is and ErrNotOurs returned, so
// rota never takes over (and later undoes) a person's state and reason. Draining a node rota
// already drained does nothing.
func (m *Manager) Drain(ctx context.Context, name, reason string) error {
	n, err := m.node(ctx, name)
	if err != nil {
		return fmt.Errorf("draining %s: %w", name, err)
	}
	if err := notOurs(n); err != nil {
		return fmt.Errorf("draining %s: %w", name, err)
	}
	if n.State.Has("drain") {
		return nil
	}
	if err := m.update(ctx, name, "drain", Reason(reason)); err != nil {
		return fmt.Errorf("draining %s: %w", name, err)
	}
	m.opts.Log.WithFields(logrus.Fields{"node": name, "reason": reason}).Info("drained in slurm")
	return nil
}

// Reason is the drain reason rota gives Slurm: jobs.Marker, then reason.
func Reason(reason string) string {
	if OursReason(reason) {
		return reason
	}
	return strings.TrimSpace(jobs.Marker + " " + reason)
}

// Resume implements jobs.Manager: a node rota drained goes back to service. A node someone
// else took out of service (OutOfService: drained, DOWN, FAIL, maintenance), also one rota had
// drained before, is left as it is (jobs.ErrNotOurs): Slurm's resume would clear their state
// too. A node not drained is left as it is.
func (m *Manager) Resume(ctx context.Context, name string) error {
	n, err := m.node(ctx, name)
	if err != nil {
		return fmt.Errorf("resuming %s: %w", name, err)
	}
	if err := notOurs(n); err != nil {
		return fmt.Errorf("resuming %s: %w", name, err)
	}
	if !n.State.Has("drain") {
		return nil
	}
	if err := m.update(ctx, name, "resume", ""); err != nil {
		return fmt.Errorf("resuming %s: %w", name, err)
	}
	m.opts.Log.WithField("node", name).Info("resumed in slurm")
	return nil
}

// notOurs is jobs.ErrNotOurs, with the node's state and reason, when someone other than rota
// took the node out of service (OutOfService); nil otherwise.
func notOurs(n Node) error {
	if _, other := OutOfService(n); !other {
		return nil
	}
	return fmt.Errorf("%w (state %s, reason %s)", jobs.ErrNotOurs, errtext.Quote(stateText(n.State)), errtext.Quote(n.Reason))
}

// stateText is the state as StateComplete printed it.
func stateText(s NodeState) string { return strings.Join(append([]string{s.Base}, s.Flags...), "+") }

// update runs scontrol update for one node.
func (m *Manager) update(ctx context.Context, name, state, reason string) error {
	args := []string{"update", "nodename=" + name, "state=" + state}
	if reason != "" {
		args = append(args, "reason="+reason)
	}
	_, err := m.opts.Run(ctx, "scontrol", args...)
	return err
}
