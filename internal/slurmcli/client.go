package slurmcli

import (
	"context"
	"fmt"
	"time"
)

// Client reads Slurm through its own commands, run by Run, with times read in Location (the
// controller's time zone; nil is time.Local). Each read is one command with explicit fields;
// a command that fails or a line that does not parse fails the read. It keeps no state and is
// safe for concurrent use.
type Client struct {
	Run      Runner
	Location *time.Location
}

// Read returns one whole View: every node (sinfo) and every job (squeue).
func (c Client) Read(ctx context.Context) (View, error) {
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return View{}, err
	}
	queue, err := c.Jobs(ctx)
	if err != nil {
		return View{}, err
	}
	return View{Nodes: nodes, Jobs: queue}, nil
}

// Nodes reads every node, or only those named.
func (c Client) Nodes(ctx context.Context, only ...string) ([]Node, error) {
	out, err := c.Run(ctx, "sinfo", SinfoArgs(only...)...)
	if err != nil {
		return nil, fmt.Errorf("reading slurm nodes: %w", err)
	}
	nodes, err := ParseNodes(out)
	if err != nil {
		return nil, fmt.Errorf("reading slurm nodes: %w", err)
	}
	return nodes, nil
}

// Jobs reads every job, without their excluded nodes (see WithExcludes).
func (c Client) Jobs(ctx context.Context) ([]Job, error) {
	out, err := c.Run(ctx, "squeue", SqueueArgs()...)
	if err != nil {
		return nil, fmt.Errorf("reading slurm jobs: %w", err)
	}
	loc := c.Location
	if loc == nil {
		loc = time.Local
	}
	queue, err := ParseJobs(out, loc)
	if err != nil {
		return nil, fmt.Errorf("reading slurm jobs: %w", err)
	}
	return queue, nil
}

// WithExcludes adds each job's excluded nodes, read by a second squeue (a job that arrived
// between the two reads has none: at worst rota wakes a server it will not use).
func (c Client) WithExcludes(ctx context.Context, queue []Job) error {
	out, err := c.Run(ctx, "squeue", ExcludeArgs()...)
	if err != nil {
		return fmt.Errorf("reading slurm job exclusions: %w", err)
	}
	ex, err := ParseExcludes(out)
	if err != nil {
		return fmt.Errorf("reading slurm job exclusions: %w", err)
	}
	for i := range queue {
		queue[i].Exclude = ex[queue[i].ID]
	}
	return nil
}

// Waiting reads the ids of the pending jobs more servers could start: one squeue of two fields
// per pending job (about what `squeue -t PD` costs slurmctld), read by ParseWaiting.
func (c Client) Waiting(ctx context.Context) ([]string, error) {
	out, err := c.Run(ctx, "squeue", WaitingArgs()...)
	if err != nil {
		return nil, fmt.Errorf("reading slurm's pending jobs: %w", err)
	}
	ids, err := ParseWaiting(out)
	if err != nil {
		return nil, fmt.Errorf("reading slurm's pending jobs: %w", err)
	}
	return ids, nil
}

// PowerSave reads slurmctld's power saving settings (scontrol show config).
func (c Client) PowerSave(ctx context.Context) (PowerSave, error) {
	out, err := c.Run(ctx, "scontrol", "show", "config")
	if err != nil {
		return PowerSave{}, fmt.Errorf("reading slurm config: %w", err)
	}
	return ParsePowerSave(out)
}
