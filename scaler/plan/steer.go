package plan

import (
	"fmt"
	"time"
)

// Steering new work to the cheapest tier: waiting work fills the room on servers that are on,
// cheapest pool first, before anything is woken. An empty server of a dearer pool is the
// exception: filling it keeps it on for the whole run, while waking a server of the work's
// home pool (the cheapest that fits) costs that pool's price for the run plus a boot. When the
// second costs less, the work leaves the dear server's room alone and wakes a cheap server;
// the dear one, left idle, is drained as usual. The job manager may still start the work on
// the dear server in the meantime (it is on): the node weights rota sets point it at the
// cheap tier, and a move takes the work there once it is up.

// cheaperToWake reports whether the group should pass over the empty servers of pl and wake a
// server of its home pool instead. pl must be dearer than home and save when off, and not be
// held on by its floor (then filling it costs nothing); home must be able to wake a server
// for the group (below its ceiling and its quota, one in its wake queue the group may use).
func (p *pass) cheaperToWake(g *group, pl *pool) bool {
	home := g.home
	if home == nil || pl == home || !pl.saves || home.cost >= pl.cost || pl.up-1 < pl.floor {
		return false
	}
	if home.powered >= home.ceiling {
		return false
	}
	if q, ok := home.quotas[g.dept]; ok && home.held[g.dept] >= q.MaxServers {
		return false
	}
	if _, ok := p.wakeNext(home, g); !ok {
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

// unsteer places what is left of group g on the empty servers on that it passed over for its
// home pool, once waking servers there has not held it all (the home pool's wake queue or
// ceiling ran out, or it is a gang wider than the home pool can give): those servers are
// needed after all, and powering them off only to wake them, or others, again would cost a
// cycle and a boot of waiting.
func (p *pass) unsteer(g *group) {
	if g.steered == nil || g.slots == 0 || g.unsteered {
		return
	}
	g.unsteered = true
	for _, pl := range g.pools {
		p.fill(g, pl, tierOn)
	}
}

// steeredDetail says, for a power-on's detail, that the group passed over a dearer pool
// (worded once per group).
func (p *pass) steeredDetail(g *group) string {
	if g.steered != nil && g.steeredText == "" {
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
