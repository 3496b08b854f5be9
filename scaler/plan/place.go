package plan

import (
	"fmt"
	"time"

	"github.com/rotahq/rota/scaler/fleet"
)

// tier is a kind of capacity, cheapest to use first.
type tier int

const (
	tierOn     tier = iota // free room on servers that are on
	tierComing             // servers powering on or booting (and those started this pass)
	tierResume             // servers rota is draining, resumed if work lands on them
	tierCount
)

// placeDemand meets waiting work: first with capacity that is on, coming or resumable (in
// that order, cheapest pool first), so rota never wakes more than the work needs; then, for
// what is left, by waking servers in the cheapest pool that fits, at once and however little
// waits (light work never wakes a GPU server when a CPU server fits); past the backlog
// threshold, also in dearer pools that fit. Without the job manager the demand is unknown and
// nothing is placed.
func (p *pass) placeDemand() {
	if !p.snap.JobsKnown {
		return
	}
	groups := p.groups()
	p.waiting = groups
	p.classes(groups)
	// A department within its quota takes the room there is before one past it, and on a
	// department's own server its work comes first: lending stops when the lender needs its
	// servers (quota.go). Work that left an owner its server takes what the owner left after.
	order := p.lendersFirst(groups)
	p.owners = p.ownersOf(order)
	for _, g := range order {
		p.fillGroup(g)
		g.filled = true
	}
	p.owners = nil
	for _, g := range order {
		if g.yielded {
			p.fillGroup(g)
		}
	}
	p.markDue(groups)
	var borrowers []*group
	for _, g := range groups {
		// Every group with work left wakes servers: work that nothing on, coming or
		// resumable can hold must never wait for something to end (nothing may ever end).
		// Below the threshold it wakes only in its home pool, the cheapest that fits.
		if g.slots > 0 && g.home != nil && !p.deferWake(g) && p.wakeFor(g, false) {
			borrowers = append(borrowers, g)
		}
	}
	// Borrowing comes last: a department past its quota takes only the room every other
	// department's work left.
	for _, g := range borrowers {
		p.wakeFor(g, true)
	}
	for _, g := range groups {
		if g.slots > 0 && g.home != nil {
			g.home.unplaced = true // no move in the pool while its work has no place
		}
		if g.slots > 0 && g.deferred {
			for _, pl := range g.pools {
				pl.deferred = true
			}
		}
	}
}

// fillGroup places the group's slots on the capacity on, coming, then resumable, cheapest pool
// first within each. While owners come first (p.owners), a group that left an owner its
// server resumes nothing: what the owner leaves may hold it (see yields).
func (p *pass) fillGroup(g *group) {
	for t := tierOn; t <= g.lastTier() && g.slots > 0; t++ {
		if t == tierResume && g.yielded && p.owners != nil {
			return
		}
		for _, pl := range g.pools {
			if t == tierResume && pl != g.home {
				p.unsteerPastHome(g)
			}
			p.fill(g, pl, t)
		}
	}
}

// fill places the group's slots on a pool's capacity of one tier, region by region: the
// regions the group may run in, or every region for work that may run anywhere.
func (p *pass) fill(g *group, pl *pool, t tier) {
	if g.slots == 0 {
		return
	}
	if g.regions != nil {
		for _, r := range g.regions {
			if rb := pl.byRegion[r]; rb != nil && g.slots > 0 {
				p.fillTier(g, pl, rb, t)
			}
		}
		return
	}
	for _, rb := range pl.bins {
		if g.slots > 0 {
			p.fillTier(g, pl, rb, t)
		}
	}
}

// fillTier places slots first fit on the servers of one tier. Servers left full (or resumed,
// which moves them to the coming tier) are dropped from it, so later groups skip them; a walk
// to the end leaves the tier's room exact. Servers the group may not use (by name), and empty
// servers of a dearer pool when waking a cheaper one costs less (see cheaperToWake), are
// passed over and kept for others. A server being drained is resumed as one is woken (see
// firstFor): the group's own and unlabelled servers first, then those another department owns.
func (p *pass) fillTier(g *group, pl *pool, rb *regionBins, t tier) {
	if t == tierResume {
		p.walkTier(g, pl, rb, t, true)
	}
	if g.slots > 0 {
		p.walkTier(g, pl, rb, t, false)
	}
}

// walkTier is one first-fit walk of fillTier over the tier's servers; ownFirst: passing over
// the servers of other departments (see othersServer).
func (p *pass) walkTier(g *group, pl *pool, rb *regionBins, t tier, ownFirst bool) {
	if !rb.room[t].mayHold(g.shape) {
		return
	}
	steer := t != tierComing && !g.unsteered && p.cheaperToWake(g, pl, t)
	bins := rb.tiers[t]
	w := 0
	var room capacity
	for k, i := range bins {
		s, st := &p.servers[i], &p.state[i]
		if t == tierResume && st.done {
			continue
		}
		passOver := !g.nd.allows(s.node.Name) || (steer && !s.node.Jobs.Allocated()) ||
			(ownFirst && p.othersServer(g.dept, i))
		if n := min(st.free.holds(g.shape), g.perServer(), g.slots); n > 0 && !passOver && !p.yields(g, i, t) {
			if t == tierResume {
				p.resume(i, fleet.ReasonDemandReturn, p.say(func() string { return fmt.Sprintf("%d %s jobs wait", g.unmetJobs(), g.class) }))
			}
			st.free.take(g.shape, n)
			g.slots -= n
			if !st.placed && warm(s.node) {
				s.pool.placedWarm++
				s.pool.deferred = s.pool.deferred || g.deferred
			}
			st.placed = true
			p.hold(pl, i, g.dept)
		}
		if !st.free.full() && !(t == tierResume && st.done) {
			bins[w] = i
			w++
			room = room.union(st.free)
		}
		if g.slots == 0 {
			if w == k+1 {
				w = len(bins) // nothing dropped: the rest stays where it is
			} else {
				w += copy(bins[w:], bins[k+1:])
			}
			rb.tiers[t] = bins[:w]
			return // the room of the rest is unknown: keep the old bound
		}
	}
	rb.tiers[t] = bins[:w]
	rb.room[t] = room
}

// markDue applies the backlog threshold. Each group counts against its home pool (the
// cheapest that fits it in its region) and class: when more than the threshold of jobs of one
// class wait there with no place on capacity on or coming, and the oldest has waited
// policy.backlog.for, the groups are due and may wake servers beyond their home pool, in
// dearer pools that fit. Work below the threshold still wakes servers, in its home pool only
// (see wakeFor): the threshold never starves work, it decides when work may cost more.
func (p *pass) markDue(groups []*group) {
	type key struct {
		pl    *pool
		class string
	}
	waiting := map[key]int{}
	oldest := map[key]time.Time{}
	for _, g := range groups {
		if g.slots == 0 || g.home == nil {
			continue
		}
		k := key{g.home, g.class}
		waiting[k] += g.unmetJobs()
		if o, ok := oldest[k]; !ok || g.since.Before(o) {
			oldest[k] = g.since
		}
	}
	wait := time.Duration(p.pol.Backlog.For)
	for _, g := range groups {
		k := key{g.home, g.class}
		n, ok := waiting[k]
		if !ok {
			continue
		}
		waited := oldest[k].IsZero() || p.now.Sub(oldest[k]) >= wait
		g.due = n > g.home.threshold && waited
		if !g.due {
			g.waiting, g.oldest = n, oldest[k]
		}
	}
}

// belowBacklog marks the dearer pools a group below the threshold could not spill to.
func (p *pass) belowBacklog(g *group) {
	wait := time.Duration(p.pol.Backlog.For)
	for _, pl := range g.pools[g.homeAt+1:] {
		pl.blockWake(fleet.SkipBelowBacklog, func() string {
			return fmt.Sprintf("%d %s jobs wait for pool %s, oldest since %s; spills past its pool at more than %d for %s",
				g.waiting, g.class, g.home.name, g.oldest.UTC().Format(time.RFC3339), g.home.threshold, wait)
		})
	}
}

// wakeFor powers on servers for the group, cheapest pool first, until its slots have a place
// or no pool that fits has room; a group below the backlog threshold (not due) up to its home
// pool (those before it are closed to it by its quota). It reports whether the group's department is past its quota
// in a pool that allows borrowing (the group then waits for the borrowing round).
func (p *pass) wakeFor(g *group, borrowing bool) bool {
	pools := g.pools
	if !g.due {
		pools = pools[:g.homeAt+1]
		defer func() {
			if g.slots > 0 {
				p.belowBacklog(g)
			}
		}()
	}
	for k, pl := range pools {
		if k == 1 {
			p.unsteer(g) // before waking in dearer pools: their servers on come first
		}
		p.fill(g, pl, tierComing)
		if profileCapacity(pl.cfg.Profile).holds(g.shape) == 0 {
			// A pool fits the group only if one server holds a job; checked here too, so a
			// mismatch between the two can never make the loop below wake every server.
			continue
		}
		for g.slots > 0 {
			if pl.powered >= pl.ceiling {
				pl.blockWake(fleet.SkipCeiling, pl.ceilingDetail)
				break
			}
			if q, ok := pl.quotas[g.dept]; ok && p.atQuota(pl, g.dept) && !(borrowing && q.Borrow) {
				if q.Borrow {
					return true
				}
				pl.blockWake(fleet.SkipQuota, func() string {
					return fmt.Sprintf("department %s holds %d servers, quota %d", g.dept, p.holds(pl, g.dept), q.MaxServers)
				})
				break
			}
			i, ok := p.wakeNext(pl, g)
			if !ok {
				if g.regions != nil && pl.noFit == nil {
					pl.noFit = g.regions
				}
				break
			}
			p.powerOn(i, fleet.ReasonBacklog, p.say(func() string {
				return fmt.Sprintf("%d %s jobs wait (%d cpus, %d gpus each)", g.unmetJobs(), g.class, g.shape.cpus, g.shape.gpus) + p.steeredDetail(g, pl)
			}))
			p.hold(pl, i, g.dept)
			s := &p.state[i]
			n := min(s.free.holds(g.shape), g.perServer(), g.slots)
			s.free.take(g.shape, n)
			g.slots -= n
			s.placed = true
		}
		if g.slots == 0 {
			return false
		}
	}
	p.unsteer(g)
	return false
}

// wakeNext is the next server of pl to wake for the group: in its regions in order (any
// region when it has none), among the servers it may use.
func (p *pass) wakeNext(pl *pool, g *group) (int, bool) {
	if g.regions == nil {
		return p.wakeIn(pl, g, "")
	}
	for _, r := range g.regions {
		if i, ok := p.wakeIn(pl, g, r); ok {
			return i, true
		}
	}
	return 0, false
}

// wakeIn is the next server of pl to wake for the group in region (empty: any), among the
// servers it may use, by the rule of firstFor.
func (p *pass) wakeIn(pl *pool, g *group, region string) (int, bool) {
	var mayUse func(int) bool
	if g.nd.bounded() {
		mayUse = func(i int) bool { return g.nd.allows(p.servers[i].node.Name) }
	}
	return pl.wake.firstFor(p, region, g.dept, mayUse)
}

// firstFor is the next server of the queue to wake in region (empty: any) for work of
// department dept, among the servers mayUse accepts (nil: all), in wear order; but a server
// labelled with another department (every labelled server, for work without one) gives way
// to the first of its own and unlabelled servers that is no worse (not failed where it is
// not). A borrower wakes a lender's server only when none of its own or unlabelled is off:
// waking it lends it, and its owner would later find it running the borrower's work. A failed
// server is never tried again for its label while a healthy one is off. Waiting work (wakeIn)
// and moved work (roomToWake) both wake by it.
func (q *wakeQueue) firstFor(p *pass, region, dept string, mayUse func(int) bool) (int, bool) {
	var i int
	var ok bool
	if mayUse == nil {
		i, ok = q.next(p, region)
	} else {
		i, ok = q.first(p, region, mayUse)
	}
	if !ok || !q.mixed || !p.othersServer(dept, i) {
		return i, ok
	}
	failed := p.mem.screens[i].wake.failed
	if j, ok := q.first(p, region, func(j int) bool {
		return !p.othersServer(dept, j) && p.mem.screens[j].wake.failed == failed && (mayUse == nil || mayUse(j))
	}); ok {
		return j, true
	}
	return i, true
}

// othersServer reports whether server i is labelled with a department other than dept:
// every labelled server, for work without a department.
func (p *pass) othersServer(dept string, i int) bool {
	d := p.servers[i].node.Department
	return d != "" && d != dept
}

// first is the first server of the queue in region not yet decided that ok accepts; unlike
// next it passes over the servers ok refuses without dropping them.
func (q *wakeQueue) first(p *pass, region string, ok func(int) bool) (int, bool) {
	q.screen(p)
	if !q.sorted {
		q.order(p) // walked in order past refused servers
	}
	if _, any := q.next(p, region); !any {
		return 0, false
	}
	list := q.all
	if region != "" {
		list = q.byRegion[region]
	}
	for _, i := range list {
		if !p.state[i].done && ok(i) {
			return i, true
		}
	}
	return 0, false
}
