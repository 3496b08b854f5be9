package plan

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	bmc "github.com/rotahq/rota/bmc/spec"
	"github.com/rotahq/rota/scaler/fleet"
)

// screen gives a reason to every server rota must not touch, and sorts the rest into the
// pools' capacity tiers and wake queues. Capacity is counted for every server the job manager
// can use, pinned ones included: a pinned server still runs work. The servers asleep (Off or
// Failed) are screened for the wake queue the first time it is used (see wakeQueue.screen):
// most passes wake nothing. Each server's screening comes from its node alone (and the
// snapshot's JobsKnown and NoJobManager), so a Planner told which nodes changed keeps the
// others' from the pass before (see tiers), the asleep servers' in wake order.
func (p *pass) screen() {
	for _, i := range p.strays {
		s := &p.servers[i]
		p.skip(i, fleet.SkipUnknownPool, p.say(func() string { return fmt.Sprintf("pool %q is not in the config", s.node.Pool) }))
	}
	m := &p.mem
	if p.screenChanged {
		for _, i := range p.changed {
			if pl := p.servers[i].pool; pl != nil {
				pl.kept.rescreen(p, i, p.screening(i))
			}
		}
	} else {
		m.screens = slices.Grow(m.screens[:0], len(p.servers))[:len(p.servers)]
		for _, pl := range p.pools {
			pl.kept.clear()
			for _, i := range pl.members {
				m.screens[i] = p.screening(i)
				pl.kept.insert(p, i)
				pl.kept.queue(p, i)
			}
		}
	}
	m.screened = screenedFor{jobsKnown: p.snap.JobsKnown, noJobManager: p.noJobManager}
	// By pool, each by name: the tiers' order is the order capacity is used in.
	for _, pl := range p.pools {
		pl.lay(p)
		pl.wake.asleep = pl.kept.asleep
	}
}

// screening is what screening gives one server: its capacity tier (tierCount: none) with its
// free capacity, the skip rota gives it (none: ""), and whether it is asleep with no skip,
// with the key that orders it in its pool's wake queue.
type screening struct {
	tier   tier
	free   capacity
	skip   fleet.Reason
	asleep bool
	wake   wakeKey
	// idle is what an On server's idle check reads of its node (see idleKey).
	idle idleKey
}

// screening screens server i, a member of a pool.
func (p *pass) screening(i int) screening {
	n, pl := p.servers[i].node, p.servers[i].pool
	sc := screening{tier: tierCount}
	switch n.State {
	case fleet.StateOn:
		if p.takesWork(n) {
			sc.tier, sc.free = tierOn, freeCapacity(pl.cfg.Profile, n.Jobs, p.userID(n.Jobs.User))
		}
		sc.idle = p.idleKeyOf(n)
	case fleet.StatePoweringOn, fleet.StateBooting:
		sc.tier, sc.free = tierComing, profileCapacity(pl.cfg.Profile)
	case fleet.StateDraining:
		if p.resumable(n) {
			sc.tier, sc.free = tierResume, freeCapacity(pl.cfg.Profile, n.Jobs, p.userID(n.Jobs.User))
		}
	}
	switch {
	case n.Pinned:
		sc.skip = fleet.SkipPinned
	case n.Maintenance:
		sc.skip = fleet.SkipMaintenance
	case n.State.InFlight() && n.State != fleet.StateDraining:
		sc.skip = fleet.SkipInFlight
	case asleep(n.State):
		// Screened with the pool's wake queue (see wakeQueue.screen).
		sc.asleep = true
		sc.wake = wakeKey{
			failed: n.State == fleet.StateFailed, powerKnown: powerKnown(n), cycles: n.CyclesToday,
			rank: p.mem.rank[i], lastOff: n.LastOff, retryAfter: n.RetryAfter,
		}
	case n.State == fleet.StateOn || n.State == fleet.StateDraining:
		// Decided by the demand, settle and shrink steps.
	default:
		// Unknown, or a state this planner does not know: no power command (invariant 3).
		sc.skip = fleet.SkipPowerUnknown
	}
	return sc
}

// skipScreened gives server i the skip its screening found, worded.
func (p *pass) skipScreened(i int, r fleet.Reason) {
	n := p.servers[i].node
	switch r {
	case fleet.SkipPinned:
		p.skip(i, r, "pinned by operator")
	case fleet.SkipMaintenance:
		p.skip(i, r, "in maintenance")
	case fleet.SkipInFlight:
		p.skip(i, r, p.say(func() string { return string(n.State) + " since " + n.Since.UTC().Format(time.RFC3339) }))
	default:
		p.skip(i, r, p.say(func() string { return "state " + string(n.State) }))
	}
}

// takesWork reports whether the job manager can place waiting work on an On server.
func (p *pass) takesWork(n *fleet.Node) bool {
	return p.snap.JobsKnown && n.Jobs.Known && n.Jobs.Responding && !n.Jobs.Drained
}

// resumable reports whether a Draining server may be given back to the job manager.
func (p *pass) resumable(n *fleet.Node) bool {
	return !n.Pinned && !n.Maintenance && p.jobsKnown() && !drainedByPerson(n) && n.Power == bmc.StateOn
}

// asleep: Off or Failed, a server that may be woken.
func asleep(st fleet.State) bool { return st == fleet.StateOff || st == fleet.StateFailed }

// screenAsleep puts an Off or Failed server into its pool's wake queue, or says why not,
// from its screening's key (the node's, read when it was screened).
func (p *pass) screenAsleep(i int) {
	n, k := p.servers[i].node, &p.mem.screens[i].wake
	switch {
	case !k.powerKnown:
		p.skip(i, fleet.SkipPowerUnknown, p.say(func() string { return "bmc says " + string(n.Power) }))
	case k.failed && k.retryAfter.After(p.now):
		p.skip(i, fleet.SkipBackoff, p.say(func() string { return backoffDetail(n) }))
	case p.pol.Node.MinOff > 0 && !k.lastOff.IsZero() && k.lastOff.After(p.offFrom):
		// Hardware wear: a server stays off at least min_off, even when a floor or work wants it.
		// 0s holds nothing, not even a server this pass's repair found off (stamped after the
		// pass's now).
		p.skip(i, fleet.SkipMinOff, p.say(func() string { return "off since " + n.LastOff.UTC().Format(time.RFC3339) }))
	default:
		p.servers[i].pool.wake.add(p, i)
	}
}

func backoffDetail(n *fleet.Node) string {
	return fmt.Sprintf("failed %d times; retry after %s", n.Failures, n.RetryAfter.UTC().Format(time.RFC3339))
}

// powerKnown: the BMC answered on or off. Unknown and transitioning both block power commands
// and drains (a drain leads to a power-off): safety invariant 3.
func powerKnown(n *fleet.Node) bool { return n.Power == bmc.StateOn || n.Power == bmc.StateOff }

func drainedByPerson(n *fleet.Node) bool { return n.Jobs.Drained && !n.Jobs.DrainedByRota }

// jobsKnown: the job manager was read this pass, or there is none to read.
func (p *pass) jobsKnown() bool { return p.noJobManager || p.snap.JobsKnown }

// wakeQueue is a pool's servers that may be powered on, in the order rota wakes them.
type wakeQueue struct {
	all      []int
	byRegion map[string][]int
	// asleep are the pool's asleep servers screening did not skip, in the queue's order (the
	// pool's kept tiers'), while they are yet to be screened into all; nil once they are (see
	// screen).
	asleep []int
	// sorted: all is sorted and byRegion built. Most passes wake nothing, and most that do
	// wake a few servers: all is a heap in the queue's order, its first server the next
	// (sorted, as screened, until a server is taken from it), and sorted only when a region's
	// queue or a walk past refused servers needs it. The keys do not change within a pass, so
	// ordering late gives the same order.
	sorted bool
	// dept is the department of the first server queued, mixed whether another's differs:
	// only then does whose a server is change which wakes (see firstFor).
	dept  string
	mixed bool
}

// add queues server i.
func (q *wakeQueue) add(p *pass, i int) {
	if d := p.servers[i].node.Department; len(q.all) == 0 {
		q.dept = d
	} else if d != q.dept {
		q.mixed = true
	}
	q.all = append(q.all, i)
}

// before orders servers of a wake queue for hardware wear: cost is the same within a pool,
// so Off servers come before Failed ones (a retry is likelier to fail), then those cycled
// least today, then those off longest, then by name.
func (p *pass) before(a, b int) int {
	return p.mem.screens[a].wake.before(&p.mem.screens[b].wake)
}

// before is the wake queue's order of the servers keyed ka and kb (see pass.before); each key
// is compared only when those before it are equal.
func (ka *wakeKey) before(kb *wakeKey) int {
	if ka.failed != kb.failed {
		return cmp.Compare(boolInt(ka.failed), boolInt(kb.failed))
	}
	if ka.cycles != kb.cycles {
		return cmp.Compare(ka.cycles, kb.cycles)
	}
	if c := ka.lastOff.Compare(kb.lastOff); c != 0 {
		return c
	}
	return cmp.Compare(ka.rank, kb.rank)
}

// wakeKey is an asleep server's screening for the wake queue, read from its node when it is
// screened: what before orders it by (its state, cycles today, last power-off and rank among
// its pool's members, by name), and whether the BMC knows its power and its backoff, which
// screenAsleep reads.
type wakeKey struct {
	failed, powerKnown  bool
	cycles, rank        int
	lastOff, retryAfter time.Time
}

// screen puts the pool's asleep servers not skipped by their screening (pinned or in maintenance)
// into the queue, or gives them their skip, once a pass: before the queue's first use, or
// when every server must have its entry (explainRest). Each is screened on its node and the
// pass's time alone, so doing it late gives what doing it at screen would.
func (q *wakeQueue) screen(p *pass) {
	if q.asleep == nil {
		return
	}
	for _, i := range q.asleep {
		if !p.state[i].done {
			p.screenAsleep(i)
		}
	}
	q.asleep = nil
}

// order sorts the queue and splits it by region.
func (q *wakeQueue) order(p *pass) {
	q.sorted = true
	slices.SortFunc(q.all, p.before)
	q.byRegion = emptied(q.byRegion)
	for _, i := range q.all {
		r := p.servers[i].node.Region
		q.byRegion[r] = append(q.byRegion[r], i)
	}
}

// next returns the first server of the queue in region (empty: any) not yet decided. Decided
// servers are dropped from the front, so each queue is walked once per pass.
func (q *wakeQueue) next(p *pass, region string) (int, bool) {
	q.screen(p)
	if region == "" && !q.sorted {
		return q.top(p)
	}
	if !q.sorted {
		q.order(p)
	}
	list := q.all
	if region != "" {
		list = q.byRegion[region]
	}
	for len(list) > 0 && p.state[list[0]].done {
		list = list[1:]
	}
	if region != "" {
		q.byRegion[region] = list
	} else {
		q.all = list
	}
	if len(list) == 0 {
		return 0, false
	}
	return list[0], true
}

// top is next for any region while the queue is a heap: decided servers are popped.
func (q *wakeQueue) top(p *pass) (int, bool) {
	for len(q.all) > 0 && p.state[q.all[0]].done {
		last := len(q.all) - 1
		q.all[0] = q.all[last]
		q.all = q.all[:last]
		q.down(p, 0)
	}
	if len(q.all) == 0 {
		return 0, false
	}
	return q.all[0], true
}

// down restores the heap below position k.
func (q *wakeQueue) down(p *pass, k int) {
	h := q.all
	for {
		c := 2*k + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && p.before(h[c+1], h[c]) < 0 {
			c++
		}
		if p.before(h[c], h[k]) >= 0 {
			return
		}
		h[k], h[c] = h[c], h[k]
		k = c
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
