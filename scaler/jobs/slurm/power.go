package slurm

import (
	"context"
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/internal/slurmcli"
)

// PowerSave reads slurmctld's power saving settings.
func (m *Manager) PowerSave(ctx context.Context) (slurmcli.PowerSave, error) {
	return m.cli.PowerSave(ctx)
}

// PoweredOff tells Slurm that rota powered the node off (call it after the BMC confirmed Off).
// With Slurm's power saving on, the node is set POWER_DOWN: Slurm runs its SuspendProgram
// (rotactl slurm suspend, which finds the server already off), shows the node POWERED_DOWN
// once SuspendTimeout has passed, and powers it on again through ResumeProgram when work needs
// it. With power saving off (or not covering the node), the node stays drained with the reason "rota: powered off", so
// Slurm and a person reading sinfo both see why it does not answer. A node someone else took
// out of service meanwhile (OutOfService) is left as it is (jobs.ErrNotOurs). Idempotent.
func (m *Manager) PoweredOff(ctx context.Context, name string) error {
	n, err := m.node(ctx, name)
	if err != nil {
		return fmt.Errorf("marking %s powered off: %w", name, err)
	}
	if n.State.Has("powered_down") || n.State.Has("powering_down") {
		return nil
	}
	// Someone else took the node out of service since rota drained it: their state and
	// reason stay (POWER_DOWN would clear a drain, a drain would replace the reason).
	if err := notOurs(n); err != nil {
		return fmt.Errorf("marking %s powered off: %w", name, err)
	}
	ps, err := m.PowerSave(ctx)
	if err != nil {
		return fmt.Errorf("marking %s powered off: %w", name, err)
	}
	state, reason := "power_down", ""
	if !ps.Covers(n) {
		state, reason = "drain", Reason("powered off")
	}
	if err := m.update(ctx, name, state, reason); err != nil {
		return fmt.Errorf("marking %s powered off: %w", name, err)
	}
	m.opts.Log.WithFields(logrus.Fields{"node": name, "state": state}).Info("marked powered off in slurm")
	return nil
}

// PoweredOn tells Slurm that rota powered the node on (call it after the BMC confirmed On):
// the node goes back to service. A node rota drained (for the power-off, or "rota: powered
// off" without power saving) is resumed, as Resume does (a person's drain stays:
// jobs.ErrNotOurs). A node Slurm holds as POWERED_DOWN needs nothing: Slurm 22.05 returns it to
// service when its slurmd registers. (POWER_UP is not used: Slurm would run ResumeProgram and
// wait for a boot newer than the request; in the lab a node set POWER_UP around its slurmd's
// start stayed idle+power_up.) Idempotent.
func (m *Manager) PoweredOn(ctx context.Context, name string) error {
	if err := m.Resume(ctx, name); err != nil {
		return fmt.Errorf("marking powered on: %w", err)
	}
	return nil
}
