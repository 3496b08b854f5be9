package sim

import (
	"strconv"
	"time"

	bmc "github.com/rotahq/rota/bmc/spec"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// snapshotter builds the planner's Snapshot from the world, reusing its buffers; walls keeps
// each server's times as wall-clock times, converted only when they change.
type snapshotter struct {
	nodes  []fleet.Node
	demand []fleet.Demand
	index  map[demandKey]int
	walls  []walls
}

// walls are a server's since, lastOn, lastOff and emptySince, in replay seconds (at) and as
// wall-clock times.
type walls struct {
	at   [4]int64
	wall [4]time.Time
}

// of is the wall-clock time of each of ts, converting only those that changed.
func (c *walls) of(w *world, ts [4]int64) *[4]time.Time {
	for k, t := range ts {
		if t != c.at[k] || c.wall[k].IsZero() && t != noTime {
			c.at[k], c.wall[k] = t, w.wall(t)
		}
	}
	return &c.wall
}

type demandKey struct {
	class, partition, dept string
	nodes, gpus, cpu       int
}

func (s *snapshotter) build(w *world, cfg *config.Config) fleet.Snapshot {
	e := w.env
	pol := &cfg.Policy
	window := seconds(pol.Idle.Window)
	now := w.wall(w.now)
	s.nodes = s.nodes[:0]
	if len(s.walls) != len(w.srv) {
		s.walls = make([]walls, len(w.srv))
	}
	for i := range w.srv {
		sv := &w.srv[i]
		pl := &e.Pools[sv.pool]
		up := sv.state == fleet.StateOn || sv.state == fleet.StateDraining
		drained := sv.state == fleet.StateDraining || sv.state == fleet.StatePoweringOff
		busy := 0.0
		if len(sv.jobs) > 0 || w.now-sv.emptySince < window {
			busy = 1
		}
		t := s.walls[i].of(w, [4]int64{sv.since, sv.lastOn, sv.lastOff, sv.emptySince})
		n := fleet.Node{
			Name: e.Names[i], Pool: pl.Name, State: sv.state, Since: t[0], Power: powerOf(sv.state),
			Jobs: fleet.JobsView{Known: true, Jobs: len(sv.jobs), CPUs: pl.CPUs - sv.freeCPU, GPUs: pl.GPUs - sv.freeGPU,
				Drained: drained, DrainedByRota: drained, Responding: up, Running: s.running(w, sv)},
			LastOn: t[1], LastOff: t[2],
			CyclesToday: countSince(sv.offs, w.now-24*3600),
		}
		if len(sv.jobs) == 0 && up {
			n.IdleSince = t[3]
		}
		if up && (sv.lastOn == noTime || w.now-sv.lastOn >= window) {
			n.Telemetry = fleet.TelemetryView{Present: true, LastSample: now, CPUMax: busy, GPUMax: busy,
				GPUMean: ratio(float64(pl.GPUs-sv.freeGPU), float64(pl.GPUs))}
		}
		s.nodes = append(s.nodes, n)
	}
	s.buildDemand(w)
	// The replay's placement model is the job manager, whatever jobs.adapter says: the planner may
	// trust its view (NoJobManager false).
	return fleet.Snapshot{Nodes: s.nodes, Demand: s.demand, Telemetry: true, JobsKnown: true, History: w.hist.view(w)}
}

// buildDemand aggregates the queue by class (NewEnv gave every job one) and shape; Since is
// the oldest submission.
func (s *snapshotter) buildDemand(w *world) {
	if s.index == nil {
		s.index = map[demandKey]int{}
	}
	clear(s.index)
	s.demand = s.demand[:0]
	for _, ji := range w.queue {
		j := &w.env.Jobs[ji]
		k := demandKey{class: j.Class, partition: j.Partition, dept: j.Department, nodes: j.Nodes, gpus: j.GPUs, cpu: j.CPUs}
		limit := time.Duration(j.TimeLimit) * time.Second
		if i, ok := s.index[k]; ok {
			d := &s.demand[i]
			d.Count++
			if limit > 0 && (d.TimeLimit == 0 || limit < d.TimeLimit) {
				d.TimeLimit = limit
			}
			continue
		}
		s.index[k] = len(s.demand)
		s.demand = append(s.demand, fleet.Demand{Class: k.class, Partition: j.Partition, Department: j.Department,
			Shape: config.Shape{Partition: j.Partition, CPUs: j.CPUs, GPUs: j.GPUs}, Nodes: j.Nodes, Count: 1,
			Since: w.wall(j.Submit), TimeLimit: limit})
	}
}

// running lists a server's jobs as the planner weighs moving them; none when moves are off
// (the planner would not read them).
func (s *snapshotter) running(w *world, sv *server) []fleet.Job {
	if len(sv.jobs) == 0 || !w.env.Config.Policy.Moves.Enabled {
		return nil
	}
	out := make([]fleet.Job, 0, len(sv.jobs))
	for _, ji := range sv.jobs {
		j := &w.env.Jobs[ji]
		out = append(out, fleet.Job{ID: strconv.Itoa(int(ji)), Partition: j.Partition, Department: j.Department,
			CPUs: j.CPUs, GPUs: j.GPUs, Servers: j.Nodes, Requeueable: j.Requeueable,
			Started: w.wall(w.start[ji]), TimeLimit: time.Duration(j.TimeLimit) * time.Second})
	}
	return out
}

func powerOf(s fleet.State) bmc.State {
	switch s {
	case fleet.StateOff:
		return bmc.StateOff
	case fleet.StatePoweringOff:
		return bmc.StateTransitioning
	}
	return bmc.StateOn
}

func countSince(ts []int64, t int64) int {
	n := 0
	for _, x := range ts {
		if x >= t {
			n++
		}
	}
	return n
}
