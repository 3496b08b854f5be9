package sim

import (
	"cmp"
	"slices"

	"github.com/rotahq/rota/scaler/fleet"
)

// shape is a request that did not fit in this placement round: any job asking at least as much
// on at least as many servers, of pools among those that took it (fitSet), cannot fit either
// (capacity only shrinks within a round). A job excluded from servers (a move's) sets none: a
// server it may not use may hold another.
type shape struct{ nodes, gpus, cpus, fitSet int }

func (e *Env) dominated(failed []shape, j *Job) bool {
	for _, f := range failed {
		if j.Nodes >= f.nodes && j.GPUs >= f.gpus && j.CPUs >= f.cpus && e.within(j.fitSet, f.fitSet) {
			return true
		}
	}
	return false
}

// overlap reports whether fit sets a and b have a pool in common.
func (e *Env) overlap(a, b int) bool {
	if a == b {
		return true
	}
	for _, p := range e.fitSets[a] {
		if _, ok := slices.BinarySearch(e.fitSets[b], p); ok {
			return true
		}
	}
	return false
}

// within reports whether every pool of fit set a is in fit set b (both in the config's order).
func (e *Env) within(a, b int) bool {
	if a == b {
		return true
	}
	in := e.fitSets[b]
	for _, p := range e.fitSets[a] {
		k, ok := slices.BinarySearch(in, p)
		if !ok {
			return false
		}
		in = in[k+1:]
	}
	return true
}

// place starts queued jobs: first-fit in arrival order, service classes first (as a job
// manager gives them priority), with EASY backfilling. The first job that cannot start gets a
// reservation at its shadow time (when enough servers will be free for it, from running jobs'
// ends and boots under way); a later job may jump ahead only if it ends by then, or takes no
// pool the reserved job may use, so backfilling never delays it.
func (w *world) place() {
	if !w.placeDirty || len(w.queue) == 0 {
		return
	}
	w.placeDirty = false
	order := w.queue
	if w.env.services > 0 {
		order = w.order[:0]
		for pass := range 2 {
			for _, ji := range w.queue {
				if w.env.service[ji] == (pass == 0) {
					order = append(order, ji)
				}
			}
		}
		w.order = order
	}
	failed := w.failed[:0]
	shadow, blocked, reserved := Never, false, 0
	started := false
	for _, ji := range order {
		j := &w.env.Jobs[ji]
		switch {
		case w.env.dominated(failed, j):
		case blocked && w.now+w.duration(ji) > shadow && w.env.overlap(j.fitSet, reserved):
			// it would still hold servers when the reserved job is due: it waits
		case w.tryStart(ji):
			started = true
			continue
		default:
			if len(w.moves.exclude[ji]) == 0 {
				failed = append(failed, shape{j.Nodes, j.GPUs, j.CPUs, j.fitSet})
			}
			if !blocked {
				blocked, shadow, reserved = true, w.shadow(ji), j.fitSet
			}
		}
	}
	w.failed = failed
	if started {
		w.queue = slices.DeleteFunc(w.queue, func(ji int32) bool { return w.start[ji] >= 0 })
	}
}

// tryStart starts the job on the first servers (cheapest pool first) with room for it.
func (w *world) tryStart(ji int32) bool {
	j := &w.env.Jobs[ji]
	pick := w.pick[:0]
	pl := w.env.Pools
	for _, s := range w.env.order {
		sv := &w.srv[s]
		if sv.accepting() && sv.freeGPU >= j.GPUs && sv.freeCPU >= j.CPUs && pl[sv.pool].takes(&j.Job) && !w.moves.excluded(ji, s) {
			if pick = append(pick, s); len(pick) == j.Nodes {
				break
			}
		}
	}
	w.pick = pick
	if len(pick) < j.Nodes {
		return false
	}
	for _, s := range pick {
		sv := &w.srv[s]
		w.touch(s)
		w.idleEnds(s, true)
		sv.freeGPU -= j.GPUs
		sv.freeCPU -= j.CPUs
		sv.jobs = append(sv.jobs, ji)
		w.acct.busyUnits += float64(unitsOf(&w.env.Pools[sv.pool], j.GPUs, j.CPUs)) * float64(w.duration(ji)) / 3600
	}
	w.held[ji] = slices.Clone(pick)
	w.start[ji] = w.now
	w.running++
	if !w.moves.restarted(ji) {
		w.acct.waits = append(w.acct.waits, w.now-j.Submit)
		w.acct.byClass[j.Class] = append(w.acct.byClass[j.Class], w.now-j.Submit)
	}
	w.ev.push(event{t: w.now + w.duration(ji), kind: evEnd, id: ji, gen: w.moves.gen[ji]})
	w.seq++
	return true
}

// finish ends a job and frees its servers.
func (w *world) finish(ji int32) {
	j := &w.env.Jobs[ji]
	for _, s := range w.held[ji] {
		sv := &w.srv[s]
		w.touch(s)
		sv.freeGPU += j.GPUs
		sv.freeCPU += j.CPUs
		sv.jobs = slices.DeleteFunc(sv.jobs, func(x int32) bool { return x == ji })
		if len(sv.jobs) == 0 {
			w.idleBegins(s)
		}
	}
	w.held[ji] = nil
	w.running--
	w.placeDirty = true
}

// shadow is the earliest time job ji could start if nothing new started: each server that
// is on or booting, of a pool that takes the job (its partition) and not excluded for it (by a
// move), has a time from which it has room (servers are independent), and the job needs the
// Nodes-th earliest. Never when the servers on and booting cannot hold it.
func (w *world) shadow(ji int32) int64 {
	j := &w.env.Jobs[ji]
	times := w.times[:0]
	for s := range w.srv {
		sv := &w.srv[s]
		pl := &w.env.Pools[sv.pool]
		if pl.GPUs < j.GPUs || pl.CPUs < j.CPUs || !pl.takes(&j.Job) || w.moves.excluded(ji, int32(s)) {
			continue
		}
		switch sv.state {
		case fleet.StateBooting:
			times = append(times, sv.readyAt)
		case fleet.StateOn:
			times = append(times, w.roomAt(sv, j))
		}
	}
	w.times = times // kept for the next call
	if len(times) < j.Nodes {
		return Never
	}
	slices.Sort(times)
	return times[j.Nodes-1]
}

// roomAt is when a server on will have room for one share of the job, its jobs ending in turn.
func (w *world) roomAt(sv *server, j *Job) int64 {
	g, c := sv.freeGPU, sv.freeCPU
	if g >= j.GPUs && c >= j.CPUs {
		return w.now
	}
	order := append(w.ending[:0], sv.jobs...)
	w.ending = order
	slices.SortFunc(order, func(a, b int32) int {
		return cmp.Compare(w.start[a]+w.duration(a), w.start[b]+w.duration(b))
	})
	for _, ji := range order {
		g += w.env.Jobs[ji].GPUs
		c += w.env.Jobs[ji].CPUs
		if g >= j.GPUs && c >= j.CPUs {
			return w.start[ji] + w.duration(ji)
		}
	}
	return Never
}
