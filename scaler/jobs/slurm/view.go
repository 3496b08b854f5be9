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
// it takes no new work and is empty: drained, or out of service by someone else's hand
// (OutOfService), with nothing allocated or completing on it (Slurm's DRAINED, not DRAINING),
// so a server whose drain is still under way is never seen as empty. DrainedByRota only when
// the drain is rota's and nobody else's marking is on the node, so the planner leaves a
// person's DOWN, FAIL or maintenance as it leaves a person's drain.
func (v View) JobsViews() map[string]fleet.JobsView {
	running := map[string]int{}
	listed := map[string][]fleet.Job{}
	users := map[string]nodeUsers{}
	for _, j := range v.Jobs {
		if j.Pending() {
			continue
		}
		for _, n := range j.NodeList {
			running[n]++
			if j.State == "running" {
				listed[n] = append(listed[n], fleetJob(j))
			}
			users[n] = users[n].with(j)
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
		if u := users[n.Name]; !u.several {
			jv.User, jv.UserOnly = u.user, u.only
		}
		ours, other := OutOfService(n)
		jv.Drained = (ours || other) && !jv.Allocated() && !n.State.Busy()
		jv.DrainedByRota = ours
		jv.PowerSaving = powerSaving(n.State)
		out[n.Name] = jv
	}
	return out
}

// nodeUsers are the users of the jobs on a node: user, theirs alone unless several; only, one
// of them shares the node with its user's jobs alone (--exclusive=user).
type nodeUsers struct {
	user    string
	several bool
	only    bool
}

func (u nodeUsers) with(j Job) nodeUsers {
	if u.user != "" && u.user != j.User {
		u.several = true
	}
	u.user = j.User
	u.only = u.only || j.UserExclusive
	return u
}

// OursReason reports whether a drain reason is rota's (starts with jobs.Marker).
func OursReason(reason string) bool { return strings.HasPrefix(reason, jobs.Marker) }

// OutOfService says who took the node out of service. other: someone other than rota did, and
// rota must neither take it over nor undo it: a drain without rota's marker; FAIL (FAILING
// while jobs still run), a maintenance reservation's MAINT or any active reservation's
// RESERVED (the node is held for the reservation's users: idle, it is not empty, and it takes
// no other work), which rota never sets, whatever the reason; DOWN with a reason not rota's, unless Slurm's power saving is what has the node
// down (POWERED_DOWN, POWER_DOWN, POWERING_DOWN, POWERING_UP). ours: rota's drain is on the
// node and nothing of anyone else's. A server rota powers off keeps rota's reason, even once
// Slurm sees it DOWN and not responding ("down+drain+not_responding", reason "rota: powered
// off"), or its power saving has cleared the drain flag ("idle+powered_down", "rota: idle").
// DOWN set by Slurm itself ("Not responding" of a server that crashed, a reboot under way)
// counts as someone else's too: a person should look before rota drains over it.
func OutOfService(n Node) (ours, other bool) {
	s := n.State
	drain, rotas := s.Has("drain"), OursReason(n.Reason)
	switch {
	case s.Has("fail"), s.Has("failing"), s.Has("maint"), s.Has("maintenance"), s.Has("reserved"):
		other = true
	case drain && !rotas:
		other = true
	case s.Base == "down" && !rotas:
		other = !powerSaving(s)
	}
	return drain && rotas && !other, other
}

// powerSaving reports whether Slurm's power saving has the node: powered down, or powering down
// or up.
func powerSaving(s NodeState) bool {
	return slices.ContainsFunc([]string{"powered_down", "power_down", "powering_down", "powering_up"}, s.Has)
}

// Classifier maps a job's shape to its class (config.Config.Classify).
type Classifier func(config.Shape) string

// Demand groups the pending jobs that more servers could start (Job.WantsServers) by class,
// partition, department (the Slurm account), shape and node count, with the oldest submission
// of each group (Since), sorted by partition, class, department, nodes and shape. A job that
// names reservations is demand only for their nodes (withinReservations).
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
		j, ok := v.withinReservations(j)
		if !ok {
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

// withinReservations bounds a job that names reservations to their nodes, as Slurm does: its
// ReqNodes become the nodes of its reservations that it named (any, when it named none) and did
// not exclude, so the planner wakes only one of them, as it does for a --nodelist job. ok is
// false when no node is left: none of its reservations' nodes is one it may use, or its
// reservations are not in v.Reservations (ended between the squeue and scontrol reads: no
// server can start the job then, and the next read sees what Slurm made of it). A reservation that
// does not bound its jobs (slurmcli.Reservation.Bounds: FLEX, ANY_NODES, no nodes) leaves the
// job as it is.
func (v View) withinReservations(j Job) (Job, bool) {
	if len(j.Reservations) == 0 {
		return j, true
	}
	named := setOf(j.ReqNodes)
	excluded := setOf(j.Exclude)
	var on []string
	seen := map[string]bool{}
	for _, name := range j.Reservations {
		r, ok := v.Reservations[name]
		if !ok {
			continue
		}
		if !r.Bounds() {
			return j, true
		}
		for _, n := range r.Nodes {
			if (named == nil || named[n]) && !excluded[n] && !seen[n] {
				seen[n] = true
				on = append(on, n)
			}
		}
	}
	if len(on) == 0 {
		return j, false
	}
	j.ReqNodes = on
	return j, true
}

func setOf(names []string) map[string]bool {
	if len(names) == 0 {
		return nil
	}
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// compareDemand orders demand by partition, class, department, nodes and shape.
func compareDemand(a, b fleet.Demand) int {
	return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Class, b.Class),
		cmp.Compare(a.Department, b.Department), cmp.Compare(a.Nodes, b.Nodes),
		cmp.Compare(a.Shape.CPUs, b.Shape.CPUs), cmp.Compare(a.Shape.GPUs, b.Shape.GPUs),
		cmp.Compare(a.Shape.Memory, b.Shape.Memory), a.Needs.Compare(b.Needs))
}

// needs is what the job can run on beyond its shape: its constraint, GPU type, the nodes it
// names or excludes, its licenses as the storage its data is on (policy.storage names), the
// partitions of a job that names several, whole servers for an exclusive job, and the user of
// a job exclusive to its user.
func needs(j Job) fleet.Needs {
	return fleet.Needs{Features: j.Features, GPUType: j.GPUType, Nodes: strings.Join(j.ReqNodes, ","),
		Exclude: strings.Join(j.Exclude, ","), Storage: strings.Join(j.Licenses, ","), Partitions: strings.Join(j.Partitions, ","),
		Whole: j.Exclusive, User: exclusiveUser(j)}
}

// exclusiveUser is the user of a job that shares its servers with that user's jobs alone
// (--exclusive=user), and "" for any other job: its user is no need of it.
func exclusiveUser(j Job) string {
	if j.UserExclusive {
		return j.User
	}
	return ""
}

// DoNotDisrupt is the word a job's comment carries (sbatch --comment=do-not-disrupt) when it
// must never be moved.
const DoNotDisrupt = "do-not-disrupt"

// fleetJob is a running job as the planner weighs moving it. Slurm keeps no checkpoint time:
// a move loses all of a job's run. A heterogeneous job's component is never requeueable
// (movable): Slurm requeues only the whole job, with its components on other servers.
func fleetJob(j Job) fleet.Job {
	return fleet.Job{ID: j.ID, Partition: j.Partition, Department: j.Account, CPUs: j.CPUs, GPUs: j.GPUs,
		Memory: int64(j.Memory), Servers: j.Nodes, Needs: needs(j), Requeueable: movable(j),
		DoNotDisrupt: strings.Contains(strings.ToLower(j.Comment), DoNotDisrupt), Started: j.Started, TimeLimit: j.TimeLimit}
}
