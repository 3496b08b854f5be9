package fleet

import (
	"cmp"
	"time"
)

// Needs is what a job can run on, beyond its shape: every field left empty asks nothing.
// Pools say what their servers offer (config.Profile); the planner wakes only servers that
// offer all of it, and moves work only to such servers.
type Needs struct {
	// Features is the job's constraint expression as the job manager gives it (Slurm's
	// --constraint: "a100&ib", "a100|h100", "[rack1|rack2]").
	Features string `json:"features,omitempty"`
	// GPUType is the GPU model the job asks for (Slurm's gres type: gpu:a100:2).
	GPUType string `json:"gpu_type,omitempty"`
	// Nodes are the only servers the job may use (Slurm's --nodelist), Exclude those it may
	// not (--exclude), both expanded and comma-separated, so that Needs stays comparable.
	Nodes   string `json:"nodes,omitempty"`
	Exclude string `json:"exclude,omitempty"`
	// Storage is where the job's data lives (a name from policy.storage): the job may run in
	// any region that sees it.
	Storage string `json:"storage,omitempty"`
	// Partitions, when the job may run in any of several partitions (Slurm's
	// --partition=gpu,batch), are all of them, comma-separated: a pool in any of them offers
	// it, not only one in the demand's Partition (the first).
	Partitions string `json:"partitions,omitempty"`
	// Whole: the job takes each of its servers whole (Slurm's --exclusive): it fits only a
	// server with nothing else on it, and leaves no room there for other work.
	Whole bool `json:"whole,omitempty"`
	// User, only for a job that shares its servers with its user's jobs alone (Slurm's
	// --exclusive=user), is that user: it fits only a server that is empty or runs that
	// user's work alone (JobsView.User), and takes no other user's work beside it. Empty for
	// every other job, whose user is not read.
	User string `json:"user,omitempty"`
}

// Compare orders needs field by field (-1, 0, +1), one whole before one that is not, then by
// user.
func (n Needs) Compare(o Needs) int {
	whole := 0
	switch {
	case n.Whole && !o.Whole:
		whole = -1
	case !n.Whole && o.Whole:
		whole = 1
	}
	return cmp.Or(cmp.Compare(n.Features, o.Features), cmp.Compare(n.GPUType, o.GPUType),
		cmp.Compare(n.Nodes, o.Nodes), cmp.Compare(n.Exclude, o.Exclude), cmp.Compare(n.Storage, o.Storage),
		cmp.Compare(n.Partitions, o.Partitions), whole, cmp.Compare(n.User, o.User))
}

// Job is one job running on a server, as the planner weighs moving it.
type Job struct {
	ID         string `json:"id"`
	Partition  string `json:"partition,omitempty"`
	Department string `json:"department,omitempty"`
	// CPUs, GPUs and Memory are what it holds on this server.
	CPUs   int   `json:"cpus"`
	GPUs   int   `json:"gpus"`
	Memory int64 `json:"memory,omitempty"`
	// Servers is how many servers it spans (a job on several is never moved).
	Servers int   `json:"servers"`
	Needs   Needs `json:"needs,omitzero"`
	// Requeueable: the job manager may put it back in the queue. DoNotDisrupt: its owner
	// asked that it never be moved. Either forbids a move.
	Requeueable  bool `json:"requeueable"`
	DoNotDisrupt bool `json:"do_not_disrupt,omitempty"`
	// Held says why the job manager cannot requeue it (Requeueable false), when it says: a
	// move's refusal names it (a Kubernetes pod's "its emptyDir volume scratch would lose its
	// data").
	Held string `json:"held,omitempty"`
	// Started is when it started; TimeLimit its limit (0: none given); Checkpoint when it
	// last saved its progress (zero: unknown, so a move loses all of its run).
	Started    time.Time     `json:"started"`
	TimeLimit  time.Duration `json:"time_limit,omitempty"`
	Checkpoint time.Time     `json:"checkpoint,omitzero"`
}

// MovePlan is what a move action does: it requeues jobs off the server it names, so they start
// again elsewhere, never on the servers excluded.
type MovePlan struct {
	Jobs []string `json:"jobs"`
	// Exclude are the servers the requeued jobs may not start on: the one they leave, or its
	// whole (dearer) pool.
	Exclude []string `json:"exclude"`
	// Drain: the server is drained first and powered off once empty (rebalancing). Without it
	// the server stays in service for the work it was moved for (a quota given back).
	Drain bool `json:"drain"`
	// Saving is what the move saves over the jobs' expected remaining time, and Lost what it
	// costs in work run again (lost run plus restart), both in the pools' currency.
	Saving float64 `json:"saving"`
	Lost   float64 `json:"lost"`
}
