package slurm

import (
	"cmp"
	"slices"
	"strings"

	"github.com/rotahq/rota/internal/slurmcli"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs"
)

// View is one whole read of Slurm (slurmcli.View), with what the scaler derives from it.
type View slurmcli.View

// Slurm's nodes, jobs and node states, as package slurmcli reads them; named here too so the
// adapter reads as one package.
type (
	Node      = slurmcli.Node
	Job       = slurmcli.Job
	NodeState = slurmcli.NodeState
)

// JobsViews is what the scaler needs of each node, by name. A node counts as Drained only when
// its drain has completed: the drain flag is set and nothing is allocated or completing on it
// (Slurm's DRAINED, not DRAINING), so a server whose drain is still under way is never seen as
// empty.
func (v View) JobsViews() map[string]fleet.JobsView {
	running := map[string]int{}
	listed := map[string][]fleet.Job{}
	for _, j := range v.Jobs {
		if j.Pending() {
			continue
		}
		for _, n := range j.NodeList {
			running[n]++
			if j.State == "running" {
				listed[n] = append(listed[n], fleetJob(j))
			}
		}
	}
	out := make(map[string]fleet.JobsView, len(v.Nodes))
	for _, n := range v.Nodes {
		jv := fleet.JobsView{
			Known:      true,
			Jobs:       running[n.Name],
			CPUs:       n.CPUsAlloc,
			GPUs:       n.GPUsAlloc,
			Responding: n.State.Responding(),
			Running:    listed[n.Name],
		}
		drain := n.State.Has("drain")
		jv.Drained = drain && !jv.Allocated() && !n.State.Busy()
		jv.DrainedByRota = drain && OursReason(n.Reason)
		out[n.Name] = jv
	}
	return out
}

// OursReason reports whether a drain reason is rota's (starts with jobs.Marker).
func OursReason(reason string) bool { return strings.HasPrefix(reason, jobs.Marker) }

// Classifier maps a job's shape to its class (config.Config.Classify).
type Classifier func(config.Shape) string

// Demand groups the pending jobs that more servers could start (Job.WantsServers) by class,
// partition, department (the Slurm account), shape and node count, with the oldest submission
// of each group (Since), sorted by partition, class, department, nodes and shape.
func (v View) Demand(classify Classifier) []fleet.Demand {
	type key struct {
		class, partition, department string
		shape                        config.Shape
		nodes                        int
		needs                        fleet.Needs
	}
	groups := map[key]*fleet.Demand{}
	for _, j := range v.Jobs {
		if !j.WantsServers() {
			continue
		}
		shape := j.Shape()
		k := key{classify(shape), j.Partition, j.Account, shape, j.Nodes, needs(j)}
		d, ok := groups[k]
		if !ok {
			d = &fleet.Demand{Class: k.class, Partition: k.partition, Department: k.department,
				Shape: shape, Needs: k.needs, Nodes: j.Nodes, Since: j.Submitted, TimeLimit: j.TimeLimit}
			groups[k] = d
		}
		d.Count++
		if j.Submitted.Before(d.Since) {
			d.Since = j.Submitted
		}
		if j.TimeLimit > 0 && (d.TimeLimit == 0 || j.TimeLimit < d.TimeLimit) {
			d.TimeLimit = j.TimeLimit
		}
	}
	out := make([]fleet.Demand, 0, len(groups))
	for _, d := range groups {
		out = append(out, *d)
	}
	slices.SortFunc(out, compareDemand)
	return out
}

// compareDemand orders demand by partition, class, department, nodes and shape.
func compareDemand(a, b fleet.Demand) int {
	return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Class, b.Class),
		cmp.Compare(a.Department, b.Department), cmp.Compare(a.Nodes, b.Nodes),
		cmp.Compare(a.Shape.CPUs, b.Shape.CPUs), cmp.Compare(a.Shape.GPUs, b.Shape.GPUs),
		cmp.Compare(a.Shape.Memory, b.Shape.Memory), cmp.Compare(a.Needs.Features, b.Needs.Features),
		cmp.Compare(a.Needs.GPUType, b.Needs.GPUType), cmp.Compare(a.Needs.Nodes, b.Needs.Nodes),
		cmp.Compare(a.Needs.Exclude, b.Needs.Exclude), cmp.Compare(a.Needs.Storage, b.Needs.Storage))
}

// needs is what the job can run on beyond its shape: its constraint, GPU type, the nodes it
// names or excludes, and its licenses as the storage its data is on (policy.storage names).
func needs(j Job) fleet.Needs {
	return fleet.Needs{Features: j.Features, GPUType: j.GPUType, Nodes: strings.Join(j.ReqNodes, ","),
		Exclude: strings.Join(j.Exclude, ","), Storage: strings.Join(j.Licenses, ",")}
}

// DoNotDisrupt is the word a job's comment carries (sbatch --comment=do-not-disrupt) when it
// must never be moved.
const DoNotDisrupt = "do-not-disrupt"

// fleetJob is a running job as the planner weighs moving it. Slurm keeps no checkpoint time:
// a move loses all of a job's run.
func fleetJob(j Job) fleet.Job {
	return fleet.Job{ID: j.ID, Partition: j.Partition, Department: j.Account, CPUs: j.CPUs, GPUs: j.GPUs,
		Memory: int64(j.Memory), Servers: j.Nodes, Needs: needs(j), Requeueable: j.Requeue,
		DoNotDisrupt: strings.Contains(strings.ToLower(j.Comment), DoNotDisrupt), Started: j.Started, TimeLimit: j.TimeLimit}
}
