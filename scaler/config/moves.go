package config

import (
	"fmt"
	"time"

	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/internal/errtext"
)

// Moves is rebalancing: rota requeues requeueable work off a server so the rest packs onto
// fewer or cheaper servers and the emptied one powers off, or so a department below its quota
// gets its servers back. A move is made only when what it saves over the jobs' expected
// remaining time is at least MinSavingFactor times what it loses: the run since each job's
// last checkpoint (all of it when unknown) plus RestartCost, priced at the job's share of its
// server. Never a job with less than Tail left, never one not requeueable or marked
// do-not-disrupt, never more than MaxMoves per Window across the fleet.
type Moves struct {
	Enabled bool `yaml:"enabled"`
	// MinSavingFactor is k: the saving must be at least k times the loss.
	MinSavingFactor float64 `yaml:"min_saving_factor"`
	// RestartCost is what a job loses to starting again, beyond its lost run.
	RestartCost model.Duration `yaml:"restart_cost" max:"1w"`
	// Estimate is a job's expected remaining time when it has no time limit.
	Estimate model.Duration `yaml:"estimate" max:"1y"`
	// Tail: a job with less than this left is never moved (it frees its server soon anyway).
	Tail     model.Duration `yaml:"tail" max:"1w"`
	MaxMoves int            `yaml:"max_moves"`
	// Window is at most a day: rota keeps a day of moves.
	Window model.Duration `yaml:"window" max:"1d"`
}

// Storage is one storage several regions see.
type Storage struct {
	Name    string   `yaml:"name"`
	Regions []string `yaml:"regions"`
}

// RegionsSeeing lists the regions that see storage name (nil when none is configured).
func (p *Policy) RegionsSeeing(name string) []string {
	for _, s := range p.Storage {
		if s.Name == name {
			return s.Regions
		}
	}
	return nil
}

// Remaining is a job's expected remaining time at now: what its time limit leaves, else the
// policy's estimate.
func (m Moves) Remaining(started time.Time, limit time.Duration, now time.Time) time.Duration {
	if limit > 0 {
		return max(started.Add(limit).Sub(now), 0)
	}
	return time.Duration(m.Estimate)
}

func (m *Moves) applyDefaults() {
	setFloat(&m.MinSavingFactor, 2)
	setDur(&m.RestartCost, 5*time.Minute)
	setDur(&m.Estimate, time.Hour)
	setDur(&m.Tail, 30*time.Minute)
	setInt(&m.MaxMoves, 10)
	setDur(&m.Window, time.Hour)
}

// validateMoves checks policy.moves and policy.storage, and, for the daemon, that the job
// manager can move work when moves are on (a replay plays the job manager itself).
func (c *Config) validateMoves(p *problems, mode Mode) {
	m := &c.Policy.Moves
	notNegative(p, "policy.moves.min_saving_factor", m.MinSavingFactor)
	positive(p, "policy.moves.estimate", m.Estimate)
	positive(p, "policy.moves.window", m.Window)
	if m.MaxMoves < 0 {
		p.add("policy.moves.max_moves", "must not be negative")
	}
	if m.Enabled && mode == Daemon {
		switch c.Jobs.Adapter {
		case "slurm":
			if !c.Jobs.Slurm.Requeue {
				p.add("policy.moves.enabled", "needs jobs.slurm.requeue: true (moves requeue jobs)")
			}
		case "exec":
			if c.Jobs.Exec.Move == "" {
				p.add("jobs.exec.move_command", "required when policy.moves.enabled")
			}
		case "kubernetes":
			// Moves evict pods whose controller starts them again; nothing to switch on.
		default:
			p.add("policy.moves.enabled", "adapter %s cannot requeue jobs; use slurm, exec or kubernetes", errtext.Quote(c.Jobs.Adapter))
		}
	}
	names, known := map[string]bool{}, c.regions()
	for i, s := range c.Policy.Storage {
		path := fmt.Sprintf("policy.storage[%d]", i)
		switch {
		case !IsName(s.Name):
			p.add(path+".name", "%s is not a name (%s)", errtext.Quote(s.Name), nameRule)
		case names[s.Name]:
			p.add(path+".name", "%s is used twice", errtext.Quote(s.Name))
		}
		names[s.Name] = true
		regions := map[string]bool{}
		for j, r := range s.Regions {
			switch {
			case regions[r]:
				p.add(fmt.Sprintf("%s.regions[%d]", path, j), "%s is named twice", errtext.Quote(r))
			case !known[r]:
				p.add(fmt.Sprintf("%s.regions[%d]", path, j), "%s", noRegion(r))
			}
			regions[r] = true
		}
		if len(regions) < 2 {
			p.add(path+".regions", "a shared storage names at least two regions")
		}
	}
}
