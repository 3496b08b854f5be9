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
	return read(ctx, c, "slurm nodes", ParseNodes, "sinfo", SinfoArgs(only...)...)
}

// Jobs reads every job, without their excluded nodes (see WithExcludes).
func (c Client) Jobs(ctx context.Context) ([]Job, error) {
	loc := c.Location
	if loc == nil {
		loc = time.Local
	}
	parse := func(out []byte) ([]Job, error) { return ParseJobs(out, loc) }
	return read(ctx, c, "slurm jobs", parse, "squeue", SqueueArgs()...)
}

// WithExcludes adds each job's excluded nodes and the reservations it names, read by a second
// squeue (a job that arrived between the two reads has none: at worst rota wakes a server it
// will not use), whose %i names each job as Job.Element does.
func (c Client) WithExcludes(ctx context.Context, queue []Job) error {
	ex, err := read(ctx, c, "slurm job exclusions", ParseExcludes, "squeue", ExcludeArgs()...)
	if err != nil {
		return err
	}
	for i := range queue {
		a := ex[queue[i].Element]
		queue[i].Exclude, queue[i].Reservations = a.Exclude, a.Reservations
	}
	return nil
}

// Reservations reads every reservation, by name (scontrol show reservation -o).
func (c Client) Reservations(ctx context.Context) (map[string]Reservation, error) {
	return read(ctx, c, "slurm reservations", ParseReservations, "scontrol", ReservationArgs()...)
}

// Waiting reads the ids of the pending jobs more servers could start: one squeue of three fields
// per pending job (about what `squeue -t PD` costs slurmctld), read by ParseWaiting.
func (c Client) Waiting(ctx context.Context) ([]string, error) {
	return read(ctx, c, "slurm's pending jobs", ParseWaiting, "squeue", WaitingArgs()...)
}

// PowerSave reads slurmctld's power saving settings (scontrol show config).
func (c Client) PowerSave(ctx context.Context) (PowerSave, error) {
	return read(ctx, c, "slurm config", ParsePowerSave, "scontrol", "show", "config")
}

// read runs one command and parses what it printed; an error says what was being read.
func read[T any](ctx context.Context, c Client, what string, parse func([]byte) (T, error), name string, args ...string) (T, error) {
	var zero T
	out, err := c.Run(ctx, name, args...)
	if err != nil {
		return zero, fmt.Errorf("reading %s: %w", what, err)
	}
	v, err := parse(out)
	if err != nil {
		return zero, fmt.Errorf("reading %s: %w", what, err)
	}
	return v, nil
}
