package plan

import (
	"fmt"
	"slices"
	"time"
)

// Steering new work to the cheapest tier: waiting work fills the room on servers that are on,
// cheapest pool first, before anything is woken. An empty server of a dearer pool is the
// exception: filling it keeps it on for the whole run, while a server of the work's home pool
// (the cheapest that fits), coming up, being drained or woken for it, costs that pool's price
// for the run plus at most a boot. When the second costs less, the work passes over the dear
// server's room, on or being drained, for the home pool's servers coming, then those it
// resumes, then those it wakes; what they cannot hold takes the dear servers passed over (see
// unsteer) before anything dearer is woken. It is judged the same way at each pass, so work
// steered stays steered while the servers woken for it boot. A dear server left idle is
// drained as usual. The job manager may still start the work on the dear server in the
// meantime (it is on): the node weights rota sets point it at the cheap tier, and a move takes
// the work there once it is up.

// cheaperToWake reports whether the group should pass over the empty servers of pl in tier t
// (on, or being drained) for its home pool. pl must be dearer than home and save when off;
// such a server must not be held on by the pool's floor (then filling it costs nothing; one
// being drained is not counted on, so resuming it would count); and home must take a job of
// the group (see homeTakes).
func (p *pass) cheaperToWake(g *group, pl *pool, t tier) bool {
	home := g.home
	up := pl.up
	if t == tierResume {
		up++
	}
	if home == nil || pl == home || !pl.saves || home.cost >= pl.cost || up-1 < pl.floor {
		return false
	}
	if !p.homeTakes(g) {
		return false
	}
	run := p.expectedRun(g)
	boot := time.Duration(home.cfg.BootTimeout)
	if home.cost*(run+boot).Hours() >= pl.cost*run.Hours() {
		return false
	}
	g.steered = pl
	return true
}

// homeTakes reports whether the group's home pool can take one of its jobs: on a server
// coming up or being drained, or by waking one (below its ceiling and the department's quota,
// or past the quota where it may borrow, in the borrowing round: see wakeFor; one in its wake
// queue that the group may use).
func (p *pass) homeTakes(g *group) bool { return p.roomAtHome(g) || p.canWakeFor(g) }

// roomAtHome reports whether a server of the group's home pool coming up or being drained (to
// be resumed), in its regions, has room for one of its jobs.
func (p *pass) roomAtHome(g *group) bool {
	home := g.home
	in := func(rb *regionBins) bool {
		return rb != nil && (p.roomIn(g, rb, tierComing) || p.roomIn(g, rb, tierResume))
	}
	if g.regions == nil {
		return slices.ContainsFunc(home.bins, in)
	}
	for _, r := range g.regions {
		if in(home.byRegion[r]) {
			return true
		}
	}
	return false
}

// roomIn reports whether a server of tier t in rb has room for one of the group's jobs and
// may take it.
func (p *pass) roomIn(g *group, rb *regionBins, t tier) bool {
	if !rb.room[t].mayHold(g.shape) {
		return false
	}
	for _, i := range rb.tiers[t] {
		// One of the resume tier resumed already is in the coming tier too, with the same
		// room: counting it in either answers the same.
		if p.state[i].free.holds(g.shape) > 0 && g.nd.allows(p.servers[i].node.Name) {
			return true
		}
	}
	return false
}

// canWakeFor reports whether the group's home pool can wake a server for it.
func (p *pass) canWakeFor(g *group) bool {
	home := g.home
	if home.powered >= home.ceiling {
		return false
	}
	if q, ok := home.quotas[g.dept]; ok && !q.Borrow && p.atQuota(home, g.dept) {
		return false
	}
	_, ok := p.wakeNext(home, g)
	return ok
}

// unsteer places what is left of group g on the empty servers, on or being drained, that it
// passed over for its home pool, once the home pool's servers coming and woken have not held
// it all (its wake queue or ceiling ran out, or it is a gang wider than the home pool can
// give): those servers are needed after all, and powering them off only to wake them, or
// others, again would cost a cycle and a boot of waiting.
func (p *pass) unsteer(g *group) {
	if g.steered == nil || g.slots == 0 || g.unsteered {
		return
	}
	g.unsteered = true
	for _, t := range [...]tier{tierOn, tierResume} {
		for _, pl := range g.pools {
			p.fill(g, pl, t)
		}
	}
}

// unsteerPastHome unsteers the group once its home pool has no room coming for it and can
// wake none: before a dearer pool's server being drained is resumed for it, the servers on it
// passed over take what they hold.
func (p *pass) unsteerPastHome(g *group) {
	if g.steered != nil && !g.unsteered && !p.homeTakes(g) {
		p.unsteer(g)
	}
}

// steeredDetail says, for the detail of a power-on in pool pl, that the group passed over a
// dearer pool for it (worded once per group); nothing for a wake in any pool but the home one.
func (p *pass) steeredDetail(g *group, pl *pool) string {
	if g.steered == nil || pl != g.home {
		return ""
	}
	if g.steeredText == "" {
		g.steeredText = fmt.Sprintf("; cheaper than room on pool %s over a %s run", g.steered.name, p.expectedRun(g))
	}
	return g.steeredText
}

// expectedRun is how long the group's jobs are expected to run: their shortest time limit,
// else the policy's estimate (policy.moves.estimate).
func (p *pass) expectedRun(g *group) time.Duration {
	if g.limit > 0 {
		return g.limit
	}
	return time.Duration(p.pol.Moves.Estimate)
}
