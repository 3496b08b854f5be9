package sim

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/learn"
	"github.com/rotahq/rota/scaler/plan"
)

// Rota is rota's own planner under the config's policy, called at every evaluation interval
// and, as the daemon's pending-work watch does, Env.WatchDelay after jobs arrive, with a
// snapshot of the simulated world. It learns as the daemon does (package learn): each call
// observes the need, and the planner reads what was learned so far, never what comes later.
// Between events it is called again only when a policy duration can expire (a dwell time, a
// window, a cooldown, a backlog's "for", a schedule's edge, a break-even time, a change of what
// was learned, the minute the rule on the idle periods flips for an idle server): with nothing
// changed, the planner's answer cannot change before then. At a change of what was learned
// alone, the planner is asked whether it vouches for its last answer before it plans.
func Rota(name string) Policy { return &rota{name: name} }

// RotaWith is Rota under another policy: cfg is the environment's config (Env.Config, whose
// pools the replay sized) with other policy settings.
func RotaWith(name string, cfg *config.Config) Policy {
	return &rota{name: name, cfg: cfg}
}

type rota struct {
	name string
	// noMoves runs the planner with policy.moves off (RotaWithoutMoves); cfg is the config
	// it plans with (RotaWith gives one; nil: the environment's).
	noMoves bool
	cfg     *config.Config
	// everyTick turns the skipping off (a test proves it changes nothing); inspect, when set,
	// is shown each snapshot and the nodes it changed at, before the planner (a test checks
	// that every change is listed).
	everyTick bool
	inspect   func(w *world, snap fleet.Snapshot, changed []int)
	// lastSeq is the world's change counter at the last tick looked at; seen what the
	// planner saw at its last call, at lastPlan.
	lastSeq  uint64
	seen     seen
	lastPlan int64
	planned  bool
	// woke are the servers the planner powered on at its last call, settled whether that
	// changes nothing the planner decides (see booting).
	woke    []int32
	settled bool
	// timed is what timers gave at timedAt, a call skipped (noTime: none since the last call).
	timed, timedAt int64
	snap           snapshotter
	shapes         []shape
	// arrived is how many jobs had arrived at the last look; while watching, watchAt is when
	// the watch calls the planner for jobs that arrived since and wait.
	arrived  int
	watching bool
	watchAt  int64
	learned  learner
	planner  plan.Planner
	// expiries are the servers' times for timers.
	expiries expiries
	// deferrable are the config's deferrable classes, and one empty entry once looked up.
	deferrable []deferral
	// ranked is idleFlips' scratch: a pool's empty servers on in placement order; verdicts
	// what it worked out, each while the counts its cell reads are the same (learn.Idle's
	// Changes); prices each pool's price by cycles of the day since its views last changed
	// (pricesGen).
	ranked    []int32
	verdicts  map[verdictKey]keptVerdicts
	prices    map[[2]int][2]float64
	pricesGen int
	// flips are idleFlips' answers for each pool for the world at flipsFor (since, seq): what
	// was learned changes only at a call (since moves on).
	flips    []int64
	flipsFor [2]int64
}

// deferral is a deferrable class and its longest deferral in seconds.
type deferral struct {
	class string
	max   int64
}

// watched is when the watch calls the planner next (Never: nothing waits for it).
func (p *rota) watched() int64 {
	if !p.watching {
		return Never
	}
	return p.watchAt
}

func (p *rota) Name() string { return p.name }

func (p *rota) interval(w *world) int64 {
	return max(int64(time.Duration(p.config(w).Policy.EvaluationInterval)/time.Second), 1)
}

// nextTick is the first evaluation time after t (ticks count from the first submission).
func (p *rota) nextTick(w *world, t int64) int64 {
	iv := p.interval(w)
	return w.env.T0 + ((t-w.env.T0)/iv+1)*iv
}

// decide runs the planner at evaluation ticks and when the watch is due. A call whose world
// looks to the planner as it did at its last call (same), with no policy duration run
// out since, gets the same answer, which was no action (an action changes the world): it is
// skipped. So is one where only what was learned changed since (a View's Until passed), when
// the planner vouches that its choices on it come out the same (plan.Planner.Vouch).
func (p *rota) decide(w *world) []fleet.Action {
	if w.next > p.arrived {
		// The watch sees waiting work: a job that started at once on room already there
		// never waits, and calls nothing (the queue is in arrival order).
		if n := len(w.queue); n > 0 && int(w.queue[n-1]) >= p.arrived && w.env.WatchDelay >= 0 {
			p.watching, p.watchAt = true, min(p.watched(), w.now+w.env.WatchDelay)
		}
		p.arrived = w.next
	}
	watch := w.now >= p.watched()
	if !watch && (w.now-w.env.T0)%p.interval(w) != 0 {
		return nil // between ticks: events are seen at the next tick
	}
	if watch {
		p.watching = false
	}
	p.lastSeq = w.seq
	cfg := p.config(w)
	var learned map[string]learn.View
	if !p.everyTick && p.planned && p.same(w) {
		t := p.policyTimers(w, p.lastPlan)
		if u := p.viewsChange(w, p.lastPlan); min(t, u) > w.now {
			p.timed, p.timedAt = min(t, u), w.now
			return nil
		}
		if t > w.now {
			// Only what was learned changed (a View's Until passed): the planner's last
			// answer holds if it vouches for it, as if it had been asked now.
			learned = p.learn(w, cfg)
			if p.planner.Vouch(learned, w.wall(w.now)) {
				p.lastPlan = w.now
				p.timed, p.timedAt = p.timers(w, p.lastPlan), w.now
				return nil
			}
		}
	}
	p.timedAt = noTime
	w.acct.plannerCalls++
	w.logSeen, w.logIdle = true, cfg.Policy.BreakEven.IdlePeriods
	w.bmc = cfg.BMC.Shutdowns()
	snap := p.snap.build(w, cfg)
	if learned == nil {
		learned = p.learn(w, cfg)
	}
	snap.Learned = learned
	if p.inspect != nil {
		p.inspect(w, snap, p.snap.changed)
	}
	p.saw(w)
	for _, i := range p.snap.changed {
		p.expiries.retime(p, w, i)
	}
	acts := p.planner.ActionsChanged(snap, cfg, w.wall(w.now), p.snap.changed)
	p.lastPlan, p.planned, p.settled = w.now, true, p.planner.WakesSettle()
	p.woke = p.woke[:0]
	for _, a := range acts {
		if a.Kind == fleet.PowerOn {
			p.woke = append(p.woke, int32(w.env.byName[a.Node]))
		}
	}
	return acts
}

// learn feeds the learner what it has not seen yet and returns what the planner reads of
// what was learned; the prices worked out from the views go with the views.
func (p *rota) learn(w *world, cfg *config.Config) map[string]learn.View {
	views := p.learned.learn(w, cfg, p.snap.need(cfg))
	if p.pricesGen != p.learned.refreshed {
		p.pricesGen = p.learned.refreshed
		clear(p.prices)
	}
	return views
}

// config is the config the planner runs with: the replay's, moves off for RotaWithoutMoves.
func (p *rota) config(w *world) *config.Config {
	if p.cfg == nil {
		p.cfg = w.env.Config
		if p.noMoves {
			c := *w.env.Config
			c.Policy.Moves.Enabled = false
			p.cfg = &c
		}
	}
	return p.cfg
}

func (p *rota) next(w *world) int64 {
	if p.everyTick || w.seq != p.lastSeq {
		return min(p.nextTick(w, w.now), p.watched())
	}
	t := p.timed // a skipped call worked them out for this world (lastSeq) at this time
	if p.timedAt != w.now {
		t = p.timers(w, p.lastPlan)
	}
	if t == Never {
		return p.watched()
	}
	return min(p.nextTick(w, p.scheduleEdge(w, t)-1), p.watched())
}

// seen is what the planner reads from the world at a call, times aside (those are the
// timers'): the queue, the schedules open, and each server's view (see view), and with work
// waiting how many of each waiting shape it has room for (from its free capacity).
type seen struct {
	queue []int32
	mask  uint64
	views []serverView
}

// serverView is what the planner reads of a server: its state, whether it holds work, and
// for a server up with none, whether its telemetry covers the idle window and whether it
// counts as busy (a server just emptied stays busy for the idle window; the timers cover its
// end): bits; its jobs and free capacity, which a move weighs and waiting work fits in. The
// planner reads no telemetry of a server with work, nor of one not up.
type serverView struct {
	state            fleet.State
	bits             int64
	jobs             int
	freeCPU, freeGPU int
}

func (p *rota) view(w *world, i int) serverView {
	sv := &w.srv[i]
	window := seconds(p.config(w).Policy.Idle.Window)
	held := len(sv.jobs) > 0
	bits := b2i(held)
	if up := sv.state == fleet.StateOn || sv.state == fleet.StateDraining; up && !held {
		present := sv.lastOn == noTime || w.now-sv.lastOn >= window
		bits |= b2i(present) << 2
		if present && w.now-sv.emptySince < window {
			bits |= 1 << 1
		}
	}
	return serverView{state: sv.state, bits: bits, jobs: len(sv.jobs), freeCPU: sv.freeCPU, freeGPU: sv.freeGPU}
}

// saw notes what the planner sees at this call: the views of the servers the snapshot built
// again (p.snap.changed). Every other server's view is as at its last refresh: a server's
// view changes only when the world touches it (world.dirty) or when its telemetry comes to
// cover the idle window or its last job's end leaves it, which the snapshot refreshes.
func (p *rota) saw(w *world) {
	p.seen.queue = append(p.seen.queue[:0], w.queue...)
	p.seen.mask = scheduleMask(w, w.now)
	if len(p.seen.views) != len(w.srv) {
		p.seen.views = make([]serverView, len(w.srv))
	}
	for _, i := range p.snap.changed {
		p.seen.views[i] = p.view(w, i)
	}
}

// same reports whether the world looks to the planner as at its last call (see seen). Only
// the servers touched since (world.dirty) are compared: an untouched server's view changes
// with time alone, at a time the timers hold (min_on and the idle window after its last
// power-on and its last job), so no call is skipped past it. A server the planner powered on
// at that call and still booting counts as unchanged: its pass counted it booting once it
// decided the wake (capacity coming, an operation in flight), and what else the wake changes
// for the pool (its scale-up cooldown, its spares' window) only holds scale-down back or is a
// timer of its own. TestSkippingChangesNothing and TestSkippingChangesNothingOnNASA fail
// when such a pass would have acted.
func (p *rota) same(w *world) bool {
	if !slices.Equal(w.queue, p.seen.queue) || scheduleMask(w, w.now) != p.seen.mask {
		return false
	}
	moves := p.config(w).Policy.Moves.Enabled
	shapes, total := p.waitingShapes(w)
	for _, i := range w.dirty {
		if !alike(p.view(w, int(i)), p.seen.views[i], shapes, total, moves) && !p.booting(w, int(i)) {
			return false
		}
	}
	return true
}

// booting reports whether server i is booting from a power-on of the planner's last call,
// where that changes nothing the planner decides (plan.Planner.WakesSettle, kept in settled).
func (p *rota) booting(w *world, i int) bool {
	return w.srv[i].state == fleet.StateBooting && p.settled && slices.Contains(p.woke, int32(i))
}

// waitingShapes are the shapes of the queue's jobs, each once, and their total: each job's
// shape once (what one server could give the queue at most: a gang takes one slot a server).
func (p *rota) waitingShapes(w *world) ([]shape, shape) {
	shapes, total := p.shapes[:0], shape{}
	for _, ji := range w.queue {
		j := &w.env.Jobs[ji]
		s := shape{gpus: j.GPUs, cpus: max(j.CPUs, 1)}
		if !slices.Contains(shapes, s) {
			shapes = append(shapes, s)
		}
		total.cpus, total.gpus = total.cpus+s.cpus, total.gpus+s.gpus
	}
	p.shapes = shapes
	return shapes, total
}

// alike reports whether the planner reads the same of a server in views a and b, with work
// of shapes waiting, total in all: the same state and bits, and the same room for the work.
// With one shape that is the jobs of it the server has room for. With more, they share its
// room, so the room for each alone does not tell (44 CPUs free hold a 20-CPU job or a 28-CPU
// one, 48 both): the same free capacity, where it is short of the total. With moves on, the
// same jobs and free capacity (a move weighs each server's jobs and the room left on the
// others).
func alike(a, b serverView, shapes []shape, total shape, moves bool) bool {
	if a == b {
		return true
	}
	if a.state != b.state || a.bits != b.bits || moves {
		return false
	}
	if len(shapes) > 1 {
		return min(a.freeCPU, total.cpus) == min(b.freeCPU, total.cpus) && min(a.freeGPU, total.gpus) == min(b.freeGPU, total.gpus)
	}
	for _, s := range shapes {
		if roomFor(a, s) != roomFor(b, s) {
			return false
		}
	}
	return true
}

// roomFor is how many jobs of shape s a server's free capacity has room for.
func roomFor(v serverView, s shape) int {
	room := v.freeCPU / s.cpus
	if s.gpus > 0 {
		room = min(room, v.freeGPU/s.gpus)
	}
	return room
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// timers is the earliest time after since at which a policy duration runs out, each counted
// from the time it is defined on: min_on from a server's last power-on, min_off from its last
// power-off, the drain timeout from a drain's start, the idle window from a server's last job
// (and its coming up: its telemetry is incomplete until then), the cycle cap's day from its
// oldest power-off, backlog.for from a queued job's submission (with pools to spill to), the
// cooldowns from the pool's last scale-up and scale-down, the disruption window from each
// power-off, the spares window from a server's last power-on. These are the durations the
// planner reads; one it starts reading must be added here, or skipping would miss its expiry
// (TestSkippingChangesNothing compares against a call at every interval).
func (p *rota) timers(w *world, since int64) int64 {
	return min(p.policyTimers(w, since), p.viewsChange(w, since))
}

// viewsChange is the first time after since at which what was learned changes without a new
// observation (a View's Until: the hour, a rise getting old).
func (p *rota) viewsChange(w *world, since int64) int64 {
	t := Never
	for pi := range w.env.Pools {
		v := &p.learned.views[pi]
		if u := v.Until.Unix() - w.env.Trace.Start.Unix(); !v.Until.IsZero() && u > since {
			t = min(t, u)
		}
	}
	return t
}

// policyTimers is timers less viewsChange: the policy's durations, and the rules on what was
// learned as they stand.
func (p *rota) policyTimers(w *world, since int64) int64 {
	cfg := p.config(w)
	pol := &cfg.Policy
	t := Never
	// consider considers the time d after ref.
	consider := func(ref int64, d model.Duration) {
		if c := ref + seconds(d); ref != noTime && c > since {
			t = min(t, c)
		}
	}
	// next considers the first of sorted times whose d runs out after since.
	next := func(ts []int64, d model.Duration) {
		i, _ := slices.BinarySearch(ts, since-seconds(d)+1)
		if i < len(ts) {
			consider(ts[i], d)
		}
	}
	// The servers' own times (see serverTimes).
	x := &p.expiries
	x.update(p, w)
	if top, ok := x.first(since); ok {
		t = min(t, top)
	}
	// the queue is in submission order: the first job still short of backlog.for is the next,
	// and the first of each deferrable class still short of its longest deferral. backlog.for
	// only lets waiting work spill past its cheapest pool (plan's wakeFor): with one pool it
	// changes nothing the planner does, and calling at it only costs.
	if len(cfg.Pools) > 1 {
		for _, ji := range w.queue {
			if c := w.env.Jobs[ji].Submit + seconds(pol.Backlog.For); c > since {
				t = min(t, c)
				break
			}
		}
	}
	if p.deferrable == nil {
		for _, cl := range cfg.Classes {
			if cl.Defer != nil {
				p.deferrable = append(p.deferrable, deferral{class: cl.Name, max: seconds(cl.Defer.Max)})
			}
		}
		p.deferrable = append(p.deferrable, deferral{}) // looked: none when only this
	}
	for k := range p.deferrable[:len(p.deferrable)-1] {
		d := &p.deferrable[k]
		for _, ji := range w.queue {
			if j := &w.env.Jobs[ji]; j.Class == d.class && j.Submit+d.max > since {
				t = min(t, j.Submit+d.max)
				break
			}
		}
	}
	for p := range w.env.Pools {
		consider(w.hist.lastUp[p], pol.Cooldown.ScaleUp)
		consider(w.hist.lastDown[p], pol.Cooldown.ScaleDown)
	}
	// A power-off leaving the disruption window matters only while the budget could stop a
	// power-off: the offs in the window at since, the drains and every empty server past it.
	window := seconds(pol.Disruption.Window)
	recent := len(w.hist.offs) - sort.Search(len(w.hist.offs), func(i int) bool { return w.hist.offs[i] > since-window })
	if recent+x.draining+x.idle > pol.Disruption.PowerOffs(len(w.env.Servers)) {
		next(w.hist.offs, pol.Disruption.Window)
	}
	// The rule on the idle periods flips as a server stays idle; without history an idle
	// server is powered off at its pool's break-even time.
	for pi := range w.env.Pools {
		v := &p.learned.views[pi]
		if pol.BreakEven.IdlePeriods && p.learned.idle != nil && p.learned.idle[pi].Seen != [learn.IdleRanks][learn.IdleParts]uint32{} {
			t = min(t, p.idleFlips(w, cfg, pi, v, since))
		}
		if !v.Ready {
			cycles, be := -1, time.Duration(0) // the last server's: most have as many
			for s := range w.srv {
				if sv := &w.srv[s]; sv.pool == pi && len(sv.jobs) == 0 {
					// the break-even time grows with the server's cycles of the day
					if c := countSince(sv.offs, since-24*3600); c != cycles {
						cycles, be = c, plan.BreakEvenTime(&cfg.Pools[pi], pol, &cfg.BMC, *v, c)
					}
					consider(sv.emptySince, model.Duration(be)) // it shrinks as one leaves the day (above)
				}
			}
		}
	}
	if pol.Moves.Enabled {
		// A move refused for its budget may be made once a move leaves the window; one refused
		// for its saving or a job's tail only grows less worth it with time.
		for _, m := range w.hist.moves {
			consider(m, pol.Moves.Window)
		}
	}
	return t
}

// idleFlips is the first time after since at which the rule on the learned idle periods
// changes its verdict for an idle server of pool pi (learn.Idle.Verdicts): each empty server
// on, ranked by name among them as the planner ranks it, priced at its cycles of the day at
// since (a power-off leaving the day is a timer of its own). Servers of one cell at one price
// share their verdicts, kept while the counts their cell reads are the same.
func (p *rota) idleFlips(w *world, cfg *config.Config, pi int, v *learn.View, since int64) int64 {
	if k := [2]int64{since, int64(w.seq)}; p.flipsFor != k || len(p.flips) == 0 {
		p.flipsFor, p.flips = k, p.flips[:0]
		for range w.env.Pools {
			p.flips = append(p.flips, noTime)
		}
	}
	if p.flips[pi] != noTime {
		return p.flips[pi]
	}
	t := Never
	defer func() { p.flips[pi] = t }()
	p.ranked = p.ranked[:0]
	for s := range w.srv {
		if sv := &w.srv[s]; sv.pool == pi && sv.state == fleet.StateOn && len(sv.jobs) == 0 {
			p.ranked = append(p.ranked, int32(s))
		}
	}
	names := w.env.Names
	slices.SortFunc(p.ranked, func(a, b int32) int { return cmp.Compare(names[a], names[b]) })
	for rank, s := range p.ranked {
		sv := &w.srv[s]
		idleSince, cycles := w.wall(sv.emptySince), countSince(sv.offs, since-24*3600)
		price, ok := p.prices[[2]int{pi, cycles}]
		if !ok {
			price[0], price[1] = plan.IdlePeriodsPrice(&cfg.Pools[pi], &cfg.Policy, &cfg.BMC, *v, cycles)
			if p.prices == nil {
				p.prices = map[[2]int][2]float64{}
			}
			p.prices[[2]int{pi, cycles}] = price
		}
		k := verdictKey{pool: pi, cell: learn.IdleCell(rank+1, idleSince), price: price}
		kept, ok := p.verdicts[k]
		if changes := v.Idle.Changes(k.cell); !ok || kept.changes != changes {
			if p.verdicts == nil || len(p.verdicts) >= maxKeptVerdicts {
				p.verdicts = map[verdictKey]keptVerdicts{} // most are of prices gone by
			}
			kept = keptVerdicts{v.Idle.Verdicts(rank+1, idleSince, price[0], price[1], plan.MinIdleAtRisk), changes}
			p.verdicts[k] = kept
		}
		if at, ok := kept.vs.Flip(time.Duration(since-sv.emptySince) * time.Second); ok && sv.emptySince+int64(at/time.Second) > since {
			t = min(t, sv.emptySince+int64(at/time.Second))
		}
	}
	return t
}

// keptVerdicts are a cell's verdicts at one price, for its counts at changes (learn.Idle's
// Changes).
type keptVerdicts struct {
	vs      *learn.IdleVerdicts
	changes uint64
}

// maxKeptVerdicts bounds the verdicts kept: a pool's prices follow its View, and those of a
// View gone by are seldom asked for again.
const maxKeptVerdicts = 4096

// verdictKey is which servers share their verdicts under the rule on the idle periods: a
// pool, a cell (learn.IdleCell) and a price (a cycle's, an idle hour's).
type verdictKey struct {
	pool  int
	cell  [2]int
	price [2]float64
}

// scheduleEdge is the first evaluation time before t at which a schedule opens or closes.
func (p *rota) scheduleEdge(w *world, t int64) int64 {
	scheds := w.env.Config.Policy.Schedules
	if len(scheds) == 0 {
		return t
	}
	now := scheduleMask(w, w.now)
	limit := min(t, w.now+8*24*3600)
	for at := p.nextTick(w, w.now); at < limit; at = p.nextTick(w, at) {
		if scheduleMask(w, at) != now {
			return at
		}
	}
	return limit
}

// scheduleMask has a bit set for each schedule active at t.
func scheduleMask(w *world, t int64) uint64 {
	var m uint64
	scheds := w.env.Config.Policy.Schedules
	for i := range scheds {
		if scheds[i].Active(w.wall(t)) {
			m |= 1 << (i % 64)
		}
	}
	return m
}

func seconds(d model.Duration) int64 { return int64(time.Duration(d) / time.Second) }

// expiries are the times at which a policy duration counted from a server's own times runs
// out (see serverTimes), kept from call to call: a server's are worked out again when the
// world touches it (world.dirty, or the snapshot built its node again: update is given both)
// and when its pool's readiness changes. One heap holds each server's first time after since
// (its head), and the heads they had before, dropped when they come to the top: a head that
// is past is followed by the server's next time. It counts the servers idle (On and empty)
// and Draining, which the disruption budget's timer reads.
type expiries struct {
	times [][]int64
	// since is the last call's since (see first): the heads are the times after it.
	since int64
	// idle and draining count the servers idle and Draining; isIdle and isDraining say which.
	idle, draining     int
	isIdle, isDraining []bool
	ready              []bool // each pool's readiness the times were worked out for
	heap               dueHeap
	scratch            []int64
}

// update works out again the times of the servers touched (world.dirty), of every server the
// first time, and of every server of a pool whose readiness changed.
func (x *expiries) update(p *rota, w *world) {
	if x.times == nil {
		x.since = math.MinInt64
		x.times = make([][]int64, len(w.srv))
		x.isIdle, x.isDraining = make([]bool, len(w.srv)), make([]bool, len(w.srv))
		x.ready = make([]bool, len(w.env.Pools))
		for pi := range x.ready {
			x.ready[pi] = p.learned.ready(pi)
		}
		for s := range w.srv {
			x.retime(p, w, s)
		}
	}
	for pi := range x.ready {
		if r := p.learned.ready(pi); r != x.ready[pi] {
			x.ready[pi] = r
			for s := range w.srv {
				if w.srv[s].pool == pi {
					x.retime(p, w, s)
				}
			}
		}
	}
	for _, s := range w.dirty {
		x.retime(p, w, int(s))
	}
}

// retime works out server s's times again, and pushes its head if it is new (nothing before
// the first update, which works out every server's).
func (x *expiries) retime(p *rota, w *world, s int) {
	if x.times == nil {
		return
	}
	sv := &w.srv[s]
	ts := p.serverTimes(w, sv, x.ready[sv.pool], x.scratch[:0])
	x.scratch = ts
	if !slices.Equal(ts, x.times[s]) {
		was, had := head(x.times[s], x.since)
		x.times[s] = append(x.times[s][:0], ts...)
		if t, ok := head(ts, x.since); ok && (!had || t != was) {
			x.heap.push(due{t: t, s: int32(s)})
		}
	}
	idle, draining := len(sv.jobs) == 0 && sv.state == fleet.StateOn, sv.state == fleet.StateDraining
	x.idle += int(b2i(idle) - b2i(x.isIdle[s]))
	x.draining += int(b2i(draining) - b2i(x.isDraining[s]))
	x.isIdle[s], x.isDraining[s] = idle, draining
}

// first is the earliest of the servers' times after since. since never falls from one call
// to the next (it is the planner's last call): a head up to it gives way to the server's
// next time after since, and a time that is no longer the server's is dropped.
func (x *expiries) first(since int64) (int64, bool) {
	x.since = since
	for len(x.heap) > 0 {
		d := x.heap[0]
		held := slices.Contains(x.times[d.s], d.t)
		if held && d.t > since {
			return d.t, true
		}
		x.heap.pop()
		if t, ok := head(x.times[d.s], since); held && ok {
			x.heap.push(due{t: t, s: d.s})
		}
	}
	return 0, false
}

// head is the first of ts after since.
func head(ts []int64, since int64) (int64, bool) {
	first, ok := int64(math.MaxInt64), false
	for _, t := range ts {
		if t > since && t <= first {
			first, ok = t, true
		}
	}
	return first, ok
}

// serverTimes appends to ts the times at which a policy duration counted from one of sv's
// times runs out (ready: its pool has history enough): min_on and the telemetry's window
// after its last power-on and the idle window after its last job, for a server up and empty
// (the gate, the idle check) or, with moves, one with work; the spares window after its last
// power-on while its pool has no history; min_off after its last power-off; the drain timeout
// after a drain's start; and, for a server up and empty (or with moves), each power-off of
// the day leaving it (the cycle cap and the break-even price read its cycles).
func (p *rota) serverTimes(w *world, sv *server, ready bool, ts []int64) []int64 {
	pol := &p.config(w).Policy
	at := func(ref int64, d model.Duration) {
		if ref != noTime {
			ts = append(ts, ref+seconds(d))
		}
	}
	up, empty := sv.state == fleet.StateOn || sv.state == fleet.StateDraining, len(sv.jobs) == 0
	if up && (empty || pol.Moves.Enabled) {
		at(sv.lastOn, pol.Node.MinOn)
	}
	if up && empty {
		at(sv.lastOn, pol.Idle.Window)
		at(sv.emptySince, pol.Idle.Window)
	}
	if !ready {
		at(sv.lastOn, pol.Spares.Window) // a power-on leaving the window lowers the spares
	}
	at(sv.lastOff, pol.Node.MinOff)
	if sv.state == fleet.StateDraining {
		at(sv.since, pol.Drain.Timeout)
	}
	if up && (empty || pol.Moves.Enabled) {
		// A power-off counts in the day while it is at most 24 hours old: it leaves a second
		// later.
		for _, off := range sv.offs {
			at(off, model.Duration(24*time.Hour+time.Second))
		}
	}
	return ts
}
