package sim

import (
	"fmt"
	"time"

	"github.com/rotahq/rota/scaler/fleet"
)

// Policy decides what to power on and off. The replay asks it after every event and at the
// time its next method names; policies live in this package (the methods read the world).
type Policy interface {
	// Name labels the policy's row in reports.
	Name() string
	// decide returns the actions to take now.
	decide(w *world) []fleet.Action
	// next is when to ask again if nothing happens before (after now, or Never).
	next(w *world) int64
}

// AlwaysOn keeps every server on: no waiting for a boot, the whole fleet paid for the span.
func AlwaysOn() Policy { return alwaysOn{} }

type alwaysOn struct{}

func (alwaysOn) Name() string                 { return "always-on" }
func (alwaysOn) decide(*world) []fleet.Action { return nil }
func (alwaysOn) next(*world) int64            { return Never }

// IdleTimeout is Slurm's power saving (SuspendTime): a server idle for the timeout is powered
// off, and servers are powered on as soon as queued jobs need them. An idle server is kept on
// while a queued job could use its pool: without that, a job needing every server waits
// forever while the idle ones time out in turn (the livelock seen on the NASA log).
func IdleTimeout(d time.Duration) Policy { return &idleTimeout{t: int64(d / time.Second)} }

type idleTimeout struct {
	t    int64
	acts []fleet.Action
}

func (p *idleTimeout) Name() string {
	return fmt.Sprintf("idle-%s", time.Duration(p.t)*time.Second)
}

func (p *idleTimeout) decide(w *world) []fleet.Action {
	w.acct.plannerCalls++
	acts := p.acts[:0]
	wanted := w.poolsWanted()
	for _, s := range w.wakeFor(wanted) {
		acts = append(acts, fleet.Action{Kind: fleet.PowerOn, Node: w.env.Names[s], Reason: fleet.ReasonBacklog})
	}
	for s := range w.srv {
		sv := &w.srv[s]
		if sv.state == fleet.StateOn && len(sv.jobs) == 0 && w.now-sv.emptySince >= p.t && !wanted[sv.pool] {
			acts = append(acts, fleet.Action{Kind: fleet.PowerOff, Node: w.env.Names[s], Reason: fleet.ReasonIdle})
		}
	}
	p.acts = acts
	return acts
}

func (p *idleTimeout) next(w *world) int64 {
	t := Never
	for s := range w.srv {
		sv := &w.srv[s]
		if sv.state == fleet.StateOn && len(sv.jobs) == 0 && sv.emptySince+p.t > w.now {
			t = min(t, sv.emptySince+p.t)
		}
	}
	return t
}

// poolsWanted marks the pools some queued job could run on.
func (w *world) poolsWanted() []bool {
	wanted := make([]bool, len(w.env.Pools))
	for _, ji := range w.queue {
		j := &w.env.Jobs[ji]
		for p := range w.env.Pools {
			if w.env.Pools[p].takes(&j.Job) {
				wanted[p] = true
			}
		}
	}
	return wanted
}

// wakeFor is the servers to power on for the queue, as Slurm resumes the nodes it picks for a
// job: queued jobs are laid in arrival order over the room on servers that are on or booting
// (booting ones empty), then over servers that are off; the off servers used are woken. A gang
// that still lacks servers reserves busy ones of its pools (it will start when they free) and
// has its off servers woken now: otherwise later jobs would take them first and the gang would
// wait for ever. wanted marks the pools some queued job could run on (poolsWanted): once every
// off server of those is woken, no later job wakes one more, and the rest of the queue is not
// laid (a fleet with a long queue and every server on wakes nothing, at once: without that,
// a replay of an overloaded trace laid thousands of waiting jobs over every server at each
// call, and took minutes).
func (w *world) wakeFor(wanted []bool) []int32 {
	asleep := 0
	for s := range w.srv {
		if w.srv[s].state == fleet.StateOff && wanted[w.srv[s].pool] {
			asleep++
		}
	}
	if asleep == 0 {
		return nil
	}
	n := len(w.srv)
	rooms, mark, woken := w.wake.rooms[:0], w.wake.mark, w.wake.woken[:0]
	if len(mark) != n {
		mark, w.wake.stamp = make([]uint32, n), 0
	}
	for s := range w.srv {
		sv := &w.srv[s]
		pl := &w.env.Pools[sv.pool]
		r := room{}
		switch sv.state {
		case fleet.StateOn:
			r = room{sv.freeGPU, sv.freeCPU}
		case fleet.StateBooting, fleet.StateOff:
			r = room{pl.GPUs, pl.CPUs}
		}
		rooms = append(rooms, r)
		woken = append(woken, false)
	}
	w.wake.rooms, w.wake.mark, w.wake.woken = rooms, mark, woken
	var out []int32
	var failed []shape
	pick := w.wake.pick[:0]
	for _, ji := range w.queue {
		if asleep == 0 {
			break
		}
		j := &w.env.Jobs[ji]
		if w.env.dominated(failed, j) {
			continue
		}
		pick = pick[:0]
		if w.wake.stamp++; w.wake.stamp == 0 { // mark[s] == stamp: s is in pick
			clear(mark)
			w.wake.stamp = 1
		}
		// pass 0: room on servers on or booting (or woken); 1: off servers; 2: busy servers
		// of a pool that fits, reserved
		for pass := 0; pass < 3 && len(pick) < j.Nodes; pass++ {
			for _, s := range w.env.order {
				sv := &w.srv[s]
				pl := &w.env.Pools[sv.pool]
				off := sv.state == fleet.StateOff && !woken[s]
				var ok bool
				switch pass {
				case 0, 1:
					ok = off == (pass == 1) && rooms[s].gpu >= j.GPUs && rooms[s].cpu >= j.CPUs && pl.takes(&j.Job)
				case 2:
					ok = sv.state == fleet.StateOn && pl.takes(&j.Job) && mark[s] != w.wake.stamp
				}
				if !ok {
					continue
				}
				mark[s] = w.wake.stamp
				if pick = append(pick, s); len(pick) == j.Nodes {
					break
				}
			}
		}
		if len(pick) < j.Nodes {
			failed = append(failed, shape{j.Nodes, j.GPUs, j.CPUs, j.fitSet})
			continue
		}
		for _, s := range pick {
			rooms[s].gpu = max(rooms[s].gpu-j.GPUs, 0)
			rooms[s].cpu = max(rooms[s].cpu-j.CPUs, 0)
			if w.srv[s].state == fleet.StateOff && !woken[s] {
				woken[s] = true
				asleep--
				out = append(out, s)
			}
		}
	}
	w.wake.pick = pick
	return out
}

// room is a server's free GPUs and CPUs, as wakeFor lays the queue over it.
type room struct{ gpu, cpu int }

// wakeScratch is wakeFor's scratch, kept from call to call: each server's room, whether it
// was woken, and the stamp that marks it picked for the job being laid (mark[s] == stamp).
type wakeScratch struct {
	rooms []room
	woken []bool
	mark  []uint32
	stamp uint32
	pick  []int32
}
