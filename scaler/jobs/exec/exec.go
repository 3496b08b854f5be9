package exec

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/internal/cmdline"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs"
)

// DefaultMaxOutputBytes caps what the state and demand programs may print.
const DefaultMaxOutputBytes = 16 << 20

// Options configure a Manager. Commands, Timeout, Classify and Log are required.
type Options struct {
	Commands config.ExecJobs
	// Timeout bounds each program run.
	Timeout time.Duration
	// MaxOutputBytes caps a program's stdout; 0 means DefaultMaxOutputBytes.
	MaxOutputBytes int64
	// Classify names the class of a demand group's shape (config.Config.Classify).
	Classify func(config.Shape) string
	Log      *logrus.Entry
}

// Manager is the exec adapter; safe for concurrent use (each call runs its own process).
type Manager struct {
	state, demand, drain, resume program
	watch                        *program // optional
	// move is move_command; its argv is empty when none is configured.
	move      program
	timeout   time.Duration
	maxOutput int64
	classify  func(config.Shape) string
	log       *logrus.Entry
}

var (
	_ jobs.Manager = (*Manager)(nil)
	_ jobs.Mover   = (*Manager)(nil)
)

// New splits the command lines and returns the adapter.
func New(o Options) (*Manager, error) {
	if o.Timeout <= 0 || o.Classify == nil || o.Log == nil {
		return nil, errors.New("jobs exec: Timeout, Classify and Log are required")
	}
	if o.MaxOutputBytes <= 0 {
		o.MaxOutputBytes = DefaultMaxOutputBytes
	}
	m := &Manager{timeout: o.Timeout, maxOutput: o.MaxOutputBytes, classify: o.Classify, log: o.Log}
	var errs []error
	for _, c := range []struct {
		key  string
		line string
		p    *program
	}{
		{"state_command", o.Commands.State, &m.state},
		{"demand_command", o.Commands.Demand, &m.demand},
		{"drain_command", o.Commands.Drain, &m.drain},
		{"resume_command", o.Commands.Resume, &m.resume},
	} {
		argv, err := cmdline.Split(c.line)
		if err != nil {
			errs = append(errs, fmt.Errorf("jobs.exec.%s: %w", c.key, err))
			continue
		}
		*c.p = program{key: c.key, argv: argv}
	}
	if o.Commands.Watch != "" {
		argv, err := cmdline.Split(o.Commands.Watch)
		if err != nil {
			errs = append(errs, fmt.Errorf("jobs.exec.watch_command: %w", err))
		}
		m.watch = &program{key: "watch_command", argv: argv}
	}
	if o.Commands.Move != "" {
		argv, err := cmdline.Split(o.Commands.Move)
		if err != nil {
			errs = append(errs, fmt.Errorf("jobs.exec.move_command: %w", err))
		}
		m.move = program{key: "move_command", argv: argv}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

// Watcher is the pending-work watch over watch_command, or nil when none is configured.
func (m *Manager) Watcher() jobs.Watcher {
	if m.watch == nil {
		return nil
	}
	return watcher{m}
}

// watcher runs watch_command for jobs.Watcher.
type watcher struct{ m *Manager }

// Waiting runs watch_command and reads its JSON.
func (w watcher) Waiting(ctx context.Context) ([]string, error) {
	p := *w.m.watch
	out, err := w.m.run(ctx, p)
	if err != nil {
		return nil, err
	}
	ids, err := parseWaiting(out)
	if err != nil {
		return nil, &Error{Command: p.key, Program: p.argv[0], Problem: err.Error(), Err: err}
	}
	return ids, nil
}

// Nodes runs state_command and reads its JSON.
func (m *Manager) Nodes(ctx context.Context) (map[string]fleet.JobsView, error) {
	out, err := m.run(ctx, m.state)
	if err != nil {
		return nil, err
	}
	views, err := parseState(out)
	if err != nil {
		return nil, &Error{Command: m.state.key, Program: m.state.argv[0], Problem: err.Error(), Err: err}
	}
	return views, nil
}

// Demand runs demand_command and reads its JSON.
func (m *Manager) Demand(ctx context.Context) ([]fleet.Demand, error) {
	out, err := m.run(ctx, m.demand)
	if err != nil {
		return nil, err
	}
	d, err := parseDemand(out, m.classify)
	if err != nil {
		return nil, &Error{Command: m.demand.key, Program: m.demand.argv[0], Problem: err.Error(), Err: err}
	}
	return d, nil
}

// Drain runs drain_command NODE "rota: REASON", after state_command shows that no one else
// drained the node (ErrNotOurs otherwise: a person's drain made since the pass read the fleet
// is never taken over). The program must be idempotent and must put the reason on the drain,
// so that state_command can report drained_by_rota.
func (m *Manager) Drain(ctx context.Context, node, reason string) error {
	v, err := m.view(ctx, node)
	switch {
	case err != nil:
		return fmt.Errorf("draining %s: %w", node, err)
	case v.Drained && !v.DrainedByRota:
		return fmt.Errorf("draining %s: %w", node, jobs.ErrNotOurs)
	}
	if _, err := m.run(ctx, m.drain, node, jobs.Marker+" "+reason); err != nil {
		return fmt.Errorf("draining %s: %w", node, err)
	}
	m.log.WithField("node", node).WithField("reason", reason).Info("drained")
	return nil
}

// view is node's view in state_command's output, read now: what a drain or a resume is
// decided by, not the pass's older read (a person may have drained it since).
func (m *Manager) view(ctx context.Context, node string) (fleet.JobsView, error) {
	views, err := m.Nodes(ctx)
	if err != nil {
		return fleet.JobsView{}, err
	}
	v, ok := views[node]
	if !ok {
		return fleet.JobsView{}, errors.New("state_command does not list it")
	}
	return v, nil
}

// Resume runs resume_command NODE, after state_command shows that rota made the drain
// (ErrNotOurs otherwise). A node that is not drained is left alone.
func (m *Manager) Resume(ctx context.Context, node string) error {
	v, err := m.view(ctx, node)
	switch {
	case err != nil:
		return fmt.Errorf("resuming %s: %w", node, err)
	case !v.Drained:
		return nil
	case !v.DrainedByRota:
		return fmt.Errorf("resuming %s: %w", node, jobs.ErrNotOurs)
	}
	if _, err := m.run(ctx, m.resume, node); err != nil {
		return fmt.Errorf("resuming %s: %w", node, err)
	}
	m.log.WithField("node", node).Info("resumed")
	return nil
}
