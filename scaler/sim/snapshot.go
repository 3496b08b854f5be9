package sim

import (
	"slices"
	"strconv"
	"time"

	bmc "github.com/rotahq/rota/bmc/spec"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// snapshotter builds the planner's Snapshot from the world, keeping it from call to call: a
// server's node is built again only when the world changed it (world.dirty) or when it changes
// by itself with time (at: its telemetry coming to cover the idle window after a power-on,
// its last job's end leaving the window, a power-off leaving the day), and the telemetry of
// every node that has some is stamped with the time of the call. changed lists the nodes
// built again by the last build (what the planner counts again: plan.Planner.ActionsChanged).
// It counts each pool's nodes with work allocated as it builds them, for need.
type snapshotter struct {
	nodes   []fleet.Node
	changed []int
	// busy is how many nodes of each of cfg's pools have work allocated; poolOf is each of
	// the environment's pools' place in cfg (-1: not there); needs is need's answer, kept.
	busy   []int
	poolOf []int
	needs  map[string]int
	// demand is the queue's, built when the queue is no longer queue; waiting is the servers
	// it asks for in each pool (nil: not counted since).
	demand  []fleet.Demand
	queue   []int32
	waiting map[string]int
	index   map[demandKey]int
	built   bool
	due     dueSet
	present []int32
	// spot is each server's place in present (-1: not there).
	spot []int32
	hist histView
}

type demandKey struct {
	class, partition, dept, exclude string
	nodes, gpus, cpu                int
}

func (s *snapshotter) build(w *world, cfg *config.Config) fleet.Snapshot {
	window := seconds(cfg.Policy.Idle.Window)
	s.changed = s.changed[:0]
	if !s.built {
		s.built = true
		s.nodes = make([]fleet.Node, len(w.srv))
		s.due = newDueSet(len(w.srv))
		s.spot = make([]int32, len(w.srv))
		s.busy = make([]int, len(cfg.Pools))
		for i := range w.env.Pools {
			s.poolOf = append(s.poolOf, slices.IndexFunc(cfg.Pools, func(p config.Pool) bool { return p.Name == w.env.Pools[i].Name }))
		}
		for i := range w.srv {
			s.spot[i] = -1
			s.refresh(w, i, window)
		}
		w.clean()
	}
	for _, i := range w.dirty {
		s.refresh(w, int(i), window)
	}
	w.clean()
	for i, t := s.due.first(); t <= w.now; i, t = s.due.first() {
		s.refresh(w, i, window) // what comes next is after now: i moves down
	}
	now := w.wall(w.now)
	for _, i := range s.present {
		s.nodes[i].Telemetry.LastSample = now
	}
	s.buildDemand(w)
	// The replay's placement model is the job manager, whatever jobs.adapter says: the planner may
	// trust its view (NoJobManager false).
	return fleet.Snapshot{Nodes: s.nodes, Demand: s.demand, Telemetry: true, JobsKnown: true, History: s.hist.of(w, &cfg.Policy)}
}

// need is the last build's Snapshot.Need under cfg, its nodes counted as they were built
// (busy): only the waiting work is looked at again. The map is kept for the next call.
func (s *snapshotter) need(cfg *config.Config) map[string]int {
	if s.waiting == nil && len(s.demand) > 0 {
		s.waiting = (&fleet.Snapshot{JobsKnown: true, Demand: s.demand}).Need(cfg)
	}
	if s.needs == nil {
		s.needs = make(map[string]int, len(cfg.Pools))
	}
	for k := range cfg.Pools {
		s.needs[cfg.Pools[k].Name] = s.busy[k] + s.waiting[cfg.Pools[k].Name]
	}
	return s.needs
}

// refresh builds server i's node afresh and notes when it changes by itself next.
func (s *snapshotter) refresh(w *world, i int, window int64) {
	e := w.env
	sv := &w.srv[i]
	pl := &e.Pools[sv.pool]
	up := sv.state == fleet.StateOn || sv.state == fleet.StateDraining
	drained := sv.state == fleet.StateDraining || sv.state == fleet.StatePoweringOff
	empty := len(sv.jobs) == 0
	busy := 0.0
	if !empty || w.now-sv.emptySince < window {
		busy = 1
	}
	day := w.now - 24*3600
	cycles := countSince(sv.offs, day)
	n := fleet.Node{
		Name: e.Names[i], Pool: pl.Name, Region: e.labels[i].region, Department: e.labels[i].department, State: sv.state, Since: w.wall(sv.since), Power: powerOf(sv.state),
		Jobs: fleet.JobsView{Known: true, Jobs: len(sv.jobs), CPUs: pl.CPUs - sv.freeCPU, GPUs: pl.GPUs - sv.freeGPU,
			Drained: drained, DrainedByRota: drained, Responding: up, Running: s.running(w, sv)},
		LastOn: w.wall(sv.lastOn), LastOff: w.wall(sv.lastOff),
		CyclesToday: cycles,
	}
	if empty && up {
		n.IdleSince = w.wall(sv.emptySince)
	}
	present := up && (sv.lastOn == noTime || w.now-sv.lastOn >= window)
	if present {
		n.Telemetry = fleet.TelemetryView{Present: true, LastSample: w.wall(w.now), CPUMax: busy, GPUMax: busy,
			GPUMean: ratio(float64(pl.GPUs-sv.freeGPU), float64(pl.GPUs))}
	}
	if k := s.poolOf[sv.pool]; k >= 0 {
		s.busy[k] += int(b2i(n.Jobs.Allocated()) - b2i(s.nodes[i].Jobs.Allocated()))
	}
	s.nodes[i] = n
	s.changed = append(s.changed, i)
	s.mark(i, present)
	// What changes with time alone: the telemetry covering the window, the last job's end
	// leaving it, the oldest power-off of the day leaving the day.
	next := Never
	if up && !present {
		next = sv.lastOn + window
	}
	if empty && busy == 1 {
		next = min(next, sv.emptySince+window)
	}
	for _, t := range sv.offs {
		if t >= day {
			next = min(next, t+24*3600+1)
			break
		}
	}
	s.due.set(i, next)
}

// mark keeps present, the servers whose telemetry the call stamps, up to date.
func (s *snapshotter) mark(i int, present bool) {
	switch k := s.spot[i]; {
	case present && k < 0:
		s.spot[i] = int32(len(s.present))
		s.present = append(s.present, int32(i))
	case !present && k >= 0:
		last := s.present[len(s.present)-1]
		s.present[k], s.spot[last] = last, k
		s.present = s.present[:len(s.present)-1]
		s.spot[i] = -1
	}
}

// dueSet is a min-heap of the servers by the time each one's node changes by itself next,
// each server held once: its place moves when its time does (a heap of times would keep
// every time a server had until it came to the top: most of them, on a busy replay).
type dueSet struct {
	q   []int32 // the servers with a time, the earliest first
	pos []int32 // each server's place in q (-1: none)
	at  []int64 // each server's time (Never: none)
}

func newDueSet(n int) dueSet {
	d := dueSet{pos: make([]int32, n), at: make([]int64, n)}
	for i := range n {
		d.pos[i], d.at[i] = -1, Never
	}
	return d
}

// first is the server with the earliest time, and the time (Never: no server has one).
func (d *dueSet) first() (int, int64) {
	if len(d.q) == 0 {
		return -1, Never
	}
	return int(d.q[0]), d.at[d.q[0]]
}

// set gives server i time t (Never: none).
func (d *dueSet) set(i int, t int64) {
	was, k := d.at[i], int(d.pos[i])
	d.at[i] = t
	switch {
	case t == was:
	case k < 0:
		d.q = append(d.q, int32(i))
		d.up(len(d.q) - 1)
	case t == Never:
		last := d.q[len(d.q)-1]
		d.q = d.q[:len(d.q)-1]
		d.pos[i] = -1
		if k < len(d.q) {
			d.q[k] = last
			d.up(k)
			d.down(int(d.pos[last]))
		}
	case t < was:
		d.up(k)
	default:
		d.down(k)
	}
}

// up and down move the server at place k towards the root or the leaves until its time is
// in order, moving the hole, not the server: each step is one copy, not a swap.
func (d *dueSet) up(k int) {
	i := d.q[k]
	for k > 0 {
		up := (k - 1) / 2
		if d.at[d.q[up]] <= d.at[i] {
			break
		}
		d.q[k] = d.q[up]
		d.pos[d.q[k]] = int32(k)
		k = up
	}
	d.q[k], d.pos[i] = i, int32(k)
}

func (d *dueSet) down(k int) {
	i := d.q[k]
	for {
		c := 2*k + 1
		if c >= len(d.q) {
			break
		}
		if c+1 < len(d.q) && d.at[d.q[c+1]] < d.at[d.q[c]] {
			c++
		}
		if d.at[i] <= d.at[d.q[c]] {
			break
		}
		d.q[k] = d.q[c]
		d.pos[d.q[k]] = int32(k)
		k = c
	}
	d.q[k], d.pos[i] = i, int32(k)
}

// due is a time a server's node changes by itself.
type due struct {
	t int64
	s int32
}

// dueHeap is a min-heap of due times.
type dueHeap []due

// push and pop move the hole, not the element: each step of a sift is one copy, not a swap.
func (h *dueHeap) push(d due) {
	*h = append(*h, d)
	q := *h
	k := len(q) - 1
	for k > 0 {
		up := (k - 1) / 2
		if q[up].t <= d.t {
			break
		}
		q[k] = q[up]
		k = up
	}
	q[k] = d
}

func (h *dueHeap) pop() due {
	q := *h
	d := q[0]
	last := len(q) - 1
	x := q[last]
	q = q[:last]
	k := 0
	for {
		c := 2*k + 1
		if c >= len(q) {
			break
		}
		if c+1 < len(q) && q[c+1].t < q[c].t {
			c++
		}
		if x.t <= q[c].t {
			break
		}
		q[k] = q[c]
		k = c
	}
	if k < len(q) {
		q[k] = x
	}
	*h = q
	return d
}

// buildDemand aggregates the queue by class (NewEnv gave every job one) and shape; Since is
// the oldest submission. The demand of the queue the last build saw is kept (a job's fields
// never change).
func (s *snapshotter) buildDemand(w *world) {
	if s.index != nil && slices.Equal(w.queue, s.queue) {
		return
	}
	if s.index == nil {
		s.index = map[demandKey]int{}
	}
	clear(s.index)
	s.queue = append(s.queue[:0], w.queue...)
	s.demand, s.waiting = s.demand[:0], nil
	for _, ji := range w.queue {
		j := &w.env.Jobs[ji]
		k := demandKey{class: j.Class, partition: j.Partition, dept: j.Department, exclude: w.excludes(ji), nodes: j.Nodes, gpus: j.GPUs, cpu: j.CPUs}
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
			Since: w.wall(j.Submit), TimeLimit: limit, Needs: fleet.Needs{Exclude: k.exclude}})
	}
}

// running lists a server's jobs as the planner weighs moving them and counts them toward
// their department's quota; none when neither moves nor quotas are on (the planner would not
// read them).
func (s *snapshotter) running(w *world, sv *server) []fleet.Job {
	if pol := &w.env.Config.Policy; len(sv.jobs) == 0 || !pol.Moves.Enabled && len(pol.Quotas) == 0 {
		return nil
	}
	out := make([]fleet.Job, 0, len(sv.jobs))
	for _, ji := range sv.jobs {
		j := &w.env.Jobs[ji]
		out = append(out, fleet.Job{ID: strconv.Itoa(int(ji)), Partition: j.Partition, Department: j.Department,
			CPUs: j.CPUs, GPUs: j.GPUs, Servers: j.Nodes, Requeueable: j.Requeueable, Needs: fleet.Needs{Exclude: w.excludes(ji)},
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
