package slurm

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"
)

// PowerSave is what slurmctld's configuration says of Slurm's own power saving.
type PowerSave struct {
	SuspendProgram string
	ResumeProgram  string
	SuspendTime    string
	// ExcludedNodes (SuspendExcNodes, expanded) and ExcludedPartitions (SuspendExcParts) are
	// never powered down by Slurm.
	ExcludedNodes      []string
	ExcludedPartitions []string
}

// Enabled reports whether Slurm's power saving is on: both programs set and SuspendTime not
// INFINITE/NONE. (Slurm 22.05 refuses state=POWER_DOWN with power saving off, and
// SuspendTime=INFINITE turns it off: a cluster that wants rota alone to decide sets SuspendTime
// very long instead.)
func (p PowerSave) Enabled() bool {
	switch strings.ToUpper(p.SuspendTime) {
	case "", "INFINITE", "NONE", "-1":
		return false
	}
	return p.SuspendProgram != "" && p.ResumeProgram != ""
}

// Covers reports whether Slurm's power saving applies to the node: on, and the node neither
// excluded by name (SuspendExcNodes, with or without a ":count") nor by partition.
func (p PowerSave) Covers(n Node) bool {
	if !p.Enabled() || slices.Contains(p.ExcludedNodes, n.Name) {
		return false
	}
	for _, part := range n.Partitions {
		if slices.Contains(p.ExcludedPartitions, part) {
			return false
		}
	}
	return true
}

// ParsePowerSave reads `scontrol show config` ("Key = Value" lines after a header line).
func ParsePowerSave(out []byte) (PowerSave, error) {
	var p PowerSave
	seen := 0
	for _, line := range lines(out) {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), nullable(v)
		var err error
		switch k {
		case "SuspendProgram":
			p.SuspendProgram, seen = v, seen+1
		case "ResumeProgram":
			p.ResumeProgram, seen = v, seen+1
		case "SuspendTime":
			p.SuspendTime, seen = v, seen+1
		case "SuspendExcNodes":
			p.ExcludedNodes, err = excludedNodes(v)
		case "SuspendExcParts":
			if v != "" {
				p.ExcludedPartitions = strings.Split(v, ",")
			}
		}
		if err != nil {
			return PowerSave{}, fmt.Errorf("%w: SuspendExcNodes: %v", ErrUnexpected, err)
		}
	}
	if seen != 3 {
		return PowerSave{}, fmt.Errorf("%w: scontrol show config lacks SuspendProgram, ResumeProgram or SuspendTime", ErrUnexpected)
	}
	return p, nil
}

// excludedNodes expands SuspendExcNodes: hostlists, each with an optional ":count" (keep that
// many of them up), "node[1-4]:2,gpu01". Every node named counts as excluded.
func excludedNodes(v string) ([]string, error) {
	var names []string
	for _, term := range splitOutside(v, ',', '[', ']') {
		if i := strings.LastIndexByte(term, ':'); i >= 0 {
			if _, err := count(term[i+1:]); err != nil {
				return nil, err
			}
			term = term[:i]
		}
		expanded, err := ExpandHostlist(term)
		if err != nil {
			return nil, err
		}
		names = append(names, expanded...)
	}
	return names, nil
}

// PowerSave reads slurmctld's power saving settings.
func (m *Manager) PowerSave(ctx context.Context) (PowerSave, error) {
	out, err := m.opts.Run(ctx, "scontrol", "show", "config")
	if err != nil {
		return PowerSave{}, fmt.Errorf("reading slurm config: %w", err)
	}
	return ParsePowerSave(out)
}

// PoweredOff tells Slurm that rota powered the node off (call it after the BMC confirmed Off).
// With Slurm's power saving on, the node is set POWER_DOWN: Slurm runs its SuspendProgram
// (rotactl slurm suspend, which finds the server already off), shows the node POWERED_DOWN
// once SuspendTimeout has passed, and powers it on again through ResumeProgram when work needs
// it. With power saving off (or not covering the node), the node stays drained with the reason "rota: powered off", so
// Slurm and a person reading sinfo both see why it does not answer. Idempotent.
func (m *Manager) PoweredOff(ctx context.Context, name string) error {
	n, err := m.node(ctx, name)
	if err != nil {
		return fmt.Errorf("marking %s powered off: %w", name, err)
	}
	if n.State.Has("powered_down") || n.State.Has("powering_down") {
		return nil
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
