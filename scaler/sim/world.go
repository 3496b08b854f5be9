package sim

import (
	"math"
	"time"

	"github.com/rotahq/rota/scaler/fleet"
)

// noTime marks a time that has not happened (a server never powered on by the replay).
const noTime = int64(math.MinInt64)

// server is one server's simulated state.
type server struct {
	pool  int
	state fleet.State
	since int64
	// readyAt is when a booting server becomes ready.
	readyAt          int64
	freeGPU, freeCPU int
	jobs             []int32
	// emptySince is when its last job ended (or it came up); meaningful while jobs is empty.
	emptySince      int64
	lastOn, lastOff int64
	// idleRank is its rank among its pool's empty servers on, in placement order, when its
	// idle period began (1: the first to take a job).
	idleRank int
	// offs are its recent power-off times (the last 24 hours).
	offs []int64
	// gen invalidates boot and shutdown events of an earlier transition.
	gen int32
	// touched: listed in world.dirty.
	touched bool
}

// world is one replay's mutable state.
type world struct {
	env   *Env
	now   int64
	srv   []server
	start []int64 // per job: start time, -1 until started
	held  [][]int32
	moves moveState
	queue []int32
	next  int // next job to arrive
	ev    eventHeap
	// seq changes whenever anything a policy may read changes; dirty lists the servers that
	// changed since a policy last took them (see touch).
	seq        uint64
	dirty      []int32
	placeDirty bool
	running    int
	powered    []int
	// bmc caps the shutdowns under way at once, as the daemon's executor does
	// (config.BMCLimits.Shutdowns; 0: no cap, the baselines'); shutting counts those under way,
	// and offQueue holds the power-offs, PoweringOff, waiting for a turn in order.
	bmc      int
	shutting int
	offQueue []int32
	acct     accounting
	hist     history
	// seen are the boots and shutdowns finished since a policy last took them (the daemon
	// sees each as a state change at its next pass), kept only while logSeen (rota learns
	// boot and shutdown times; the baselines do not, and a log no one reads would be charged
	// to their replays: 175,000 entries on the NASA log).
	seen    []transition
	logSeen bool
	// idle are the idle periods that ended or were cut since a policy last took them, kept
	// only while logIdle (rota learns them; the baselines do not).
	idle    []idlePeriod
	logIdle bool
	failed  []shape // scratch for place
	order   []int32 // scratch for place
	pick    []int32 // scratch for tryStart
	times   []int64 // scratch for shadow
	ending  []int32 // scratch for roomAt
	wake    wakeScratch
}

// transition is one finished boot (up) or shutdown of a server of pool, and how long it took.
type transition struct {
	pool int
	up   bool
	took int64
}

// idlePeriod is one server's idle period of pool: its rank when it began, its length, and
// whether it ended with a job (else a power-off cut it).
type idlePeriod struct {
	pool, rank    int
	start, length int64
	ended         bool
}

// idleBegins starts server s's idle period now: its rank is 1 + the empty servers of its pool
// on, ahead of it in placement order.
func (w *world) idleBegins(s int32) {
	sv := &w.srv[s]
	sv.emptySince = w.now
	if !w.logIdle {
		return
	}
	rank := 1
	for _, o := range w.env.order {
		if o == s {
			break
		}
		if ov := &w.srv[o]; ov.pool == sv.pool && ov.state == fleet.StateOn && len(ov.jobs) == 0 {
			rank++
		}
	}
	sv.idleRank = rank
}

// idleEnds logs the end of empty server s's idle period: a job came (ended) or it is powered
// off. Periods begun before the log was on (rank 0) are not logged.
func (w *world) idleEnds(s int32, ended bool) {
	if sv := &w.srv[s]; w.logIdle && sv.idleRank > 0 && sv.state == fleet.StateOn && len(sv.jobs) == 0 {
		w.idle = append(w.idle, idlePeriod{pool: sv.pool, rank: sv.idleRank, start: sv.emptySince, length: w.now - sv.emptySince, ended: ended})
	}
}

func newWorld(e *Env) *world {
	w := &world{env: e, now: e.T0, srv: make([]server, len(e.Servers)), powered: make([]int, len(e.Pools))}
	w.start = make([]int64, len(e.Jobs))
	w.held = make([][]int32, len(e.Jobs))
	w.moves.init(len(e.Jobs))
	for i := range w.start {
		w.start[i] = -1
	}
	for i, p := range e.Servers {
		pl := &e.Pools[p]
		w.srv[i] = server{pool: p, state: fleet.StateOn, since: e.T0, freeGPU: pl.GPUs, freeCPU: pl.CPUs,
			emptySince: e.T0, lastOn: noTime, lastOff: noTime}
		w.powered[p]++
	}
	w.acct.init(e)
	w.hist = history{lastUp: make([]int64, len(e.Pools)), lastDown: make([]int64, len(e.Pools))}
	for p := range e.Pools {
		w.hist.lastUp[p], w.hist.lastDown[p] = noTime, noTime
	}
	w.skipUnrunnable()
	w.acct.sample(w)
	return w
}

// wall is the wall-clock time of replay time t.
func (w *world) wall(t int64) time.Time {
	if t == noTime {
		return time.Time{}
	}
	return w.env.Trace.Start.Add(time.Duration(t) * time.Second)
}

// advance moves the clock to t, accounting for the time in between.
func (w *world) advance(t int64) {
	w.acct.advance(w, t)
	w.now = t
}

// accepting reports whether new jobs may start on the server.
func (s *server) accepting() bool { return s.state == fleet.StateOn }

// touch notes that server s changed: its state, its jobs or its times.
func (w *world) touch(s int32) {
	if sv := &w.srv[s]; !sv.touched {
		sv.touched = true
		w.dirty = append(w.dirty, s)
	}
}

// clean empties dirty, once a policy took it.
func (w *world) clean() {
	for _, s := range w.dirty {
		w.srv[s].touched = false
	}
	w.dirty = w.dirty[:0]
}

// setState moves a server to a state, keeping the powered counts and the series up to date.
func (w *world) setState(s int32, st fleet.State) {
	sv := &w.srv[s]
	was := sv.state.Powered()
	sv.state, sv.since = st, w.now
	w.touch(s)
	if now := st.Powered(); now != was {
		if now {
			w.powered[sv.pool]++
		} else {
			w.powered[sv.pool]--
		}
		w.acct.sample(w)
	}
	w.seq++
}

// powerOn starts a boot: the server is ready after its pool's boot time.
func (w *world) powerOn(s int32) bool {
	sv := &w.srv[s]
	if sv.state != fleet.StateOff && sv.state != fleet.StateFailed {
		return false
	}
	w.setState(s, fleet.StateBooting)
	sv.gen++
	sv.readyAt = w.now + w.env.Pools[sv.pool].Boot
	w.ev.push(event{t: sv.readyAt, kind: evReady, id: s, gen: sv.gen})
	w.acct.powerOns++
	return true
}

// powerOff starts a shutdown of an empty server; a server with a job is never powered off.
func (w *world) powerOff(s int32) bool {
	sv := &w.srv[s]
	if sv.state != fleet.StateOn && sv.state != fleet.StateDraining {
		return false
	}
	if len(sv.jobs) > 0 {
		w.acct.violations++
		return false
	}
	w.idleEnds(s, false)
	w.setState(s, fleet.StatePoweringOff)
	sv.gen++
	if w.bmc > 0 && w.shutting >= w.bmc {
		w.offQueue = append(w.offQueue, s)
	} else {
		w.shutDown(s)
	}
	w.acct.powerOffs++
	sv.offs = append(pruneBefore(sv.offs, w.now-24*3600), w.now)
	return true
}

// shutDown starts the shutdown of a server PoweringOff: it is off after its pool's shutdown
// time, holding its turn till then.
func (w *world) shutDown(s int32) {
	sv := &w.srv[s]
	if w.bmc > 0 {
		w.shutting++
	}
	w.ev.push(event{t: w.now + w.env.Pools[sv.pool].Shutdown, kind: evOff, id: s, gen: sv.gen})
}

// pruneBefore drops the times before t from a sorted slice, in place.
func pruneBefore(ts []int64, t int64) []int64 {
	i := 0
	for i < len(ts) && ts[i] < t {
		i++
	}
	return append(ts[:0], ts[i:]...)
}

// apply carries out a policy's actions; an action the state does not allow is counted and
// ignored (as the executor would refuse it).
func (w *world) apply(acts []fleet.Action) {
	for _, a := range acts {
		s, ok := w.env.byName[a.Node]
		done := false
		if ok {
			sv := &w.srv[s]
			switch a.Kind {
			case fleet.PowerOn:
				done = w.powerOn(s)
			case fleet.PowerOff:
				done = w.powerOff(s)
			case fleet.Drain:
				if done = sv.state == fleet.StateOn; done {
					w.setState(s, fleet.StateDraining)
				}
			case fleet.Resume:
				if done = sv.state == fleet.StateDraining; done {
					w.setState(s, fleet.StateOn)
					w.placeDirty = true
				}
			case fleet.Move:
				done = w.move(s, a.Move)
			}
		}
		if !done {
			w.acct.ignored++
			continue
		}
		w.hist.record(a.Kind, w.srv[s].pool, w.now)
	}
}

// handle processes everything due at the current time: server transitions, job ends,
// arrivals, and jobs waiting past MaxWait. It reports whether anything happened.
func (w *world) handle() bool {
	changed := false
	for len(w.ev) > 0 && w.ev[0].t <= w.now {
		e := w.ev.pop()
		switch e.kind {
		case evEnd:
			if e.gen != w.moves.gen[e.id] {
				continue // the job was moved: this end is of its first run
			}
			w.finish(e.id)
			changed = true
		case evReady, evOff:
			sv := &w.srv[e.id]
			if e.gen != sv.gen {
				continue
			}
			changed = true
			if w.logSeen {
				w.seen = append(w.seen, transition{pool: sv.pool, up: e.kind == evReady, took: w.now - sv.since})
			}
			if e.kind == evOff {
				sv.lastOff = w.now
				w.setState(e.id, fleet.StateOff)
				if w.bmc > 0 {
					w.shutting--
					if len(w.offQueue) > 0 {
						w.shutDown(w.offQueue[0])
						w.offQueue = w.offQueue[1:]
					}
				}
				continue
			}
			sv.lastOn = w.now
			w.setState(e.id, fleet.StateOn)
			w.idleBegins(e.id)
			w.placeDirty = true
		}
	}
	for w.next < len(w.env.Jobs) && w.env.Jobs[w.next].Submit <= w.now {
		w.queue = append(w.queue, int32(w.next))
		w.placeDirty = true
		changed = true
		w.next++
		w.skipUnrunnable()
	}
	for len(w.queue) > 0 && w.now-w.env.Jobs[w.queue[0]].Submit >= w.env.MaxWait {
		j := &w.env.Jobs[w.queue[0]]
		w.acct.notRun = append(w.acct.notRun, NotRun{Line: j.Line, ID: j.ID, Reason: "gave up: waited " + (time.Duration(w.env.MaxWait) * time.Second).String() + " without starting"})
		w.acct.dropped = append(w.acct.dropped, int(w.queue[0]))
		w.queue = w.queue[1:]
		changed = true
	}
	if changed {
		w.seq++
	}
	return changed
}

// skipUnrunnable moves next past the jobs no server of the fleet can hold: they never arrive,
// so they neither wake the replay nor keep it going after the last job it can run.
func (w *world) skipUnrunnable() {
	for w.next < len(w.env.Jobs) && !w.env.runnable[w.next] {
		w.next++
	}
}

// nextTime is when the next thing happens by itself: an event, an arrival, a give-up.
func (w *world) nextTime() int64 {
	t := Never
	if len(w.ev) > 0 {
		t = w.ev[0].t
	}
	if w.next < len(w.env.Jobs) {
		t = min(t, w.env.Jobs[w.next].Submit)
	}
	if len(w.queue) > 0 {
		t = min(t, w.env.Jobs[w.queue[0]].Submit+w.env.MaxWait)
	}
	return t
}

// done reports whether every job has arrived and finished (or been given up on).
func (w *world) done() bool {
	return w.next >= len(w.env.Jobs) && len(w.queue) == 0 && w.running == 0
}
