package plan

import (
	"fmt"
	"slices"

	"github.com/rotahq/rota/scaler/fleet"
)

// Work that can wait, and work that cannot. A deferrable class (classes[].defer) waiting
// outside its schedule's window is placed on capacity that is on or coming, but wakes nothing
// and takes back no drained server; at the window's start, or once its oldest job waited
// defer.max, it is served as usual. A service class's work is placed before any other,
// quotas aside (a department gets its capacity back first: lendersFirst, yields); and while a
// schedule that protects services is open, its floor counts only servers with no work on
// them, so what other work takes of it is woken again.

// classes marks the deferred groups and moves service work to the front (stable: within
// each kind the order stays biggest shapes first).
func (p *pass) classes(groups []*group) {
	service := func(g *group) bool {
		cl := p.cfg.Class(g.class)
		return cl != nil && cl.Service
	}
	for _, g := range groups {
		g.deferred = p.cfg.Deferred(g.class, g.since, p.now)
	}
	slices.SortStableFunc(groups, func(a, b *group) int { return boolInt(!service(a)) - boolInt(!service(b)) })
}

// lastTier is the last kind of capacity the group may be placed on: deferred work takes no
// drained server back (that is a scale-up it is not to cause).
func (g *group) lastTier() tier {
	if g.deferred {
		return tierComing
	}
	return tierResume
}

// deferWake reports whether the group wakes nothing now, and says so on its home pool.
func (p *pass) deferWake(g *group) bool {
	if !g.deferred {
		return false
	}
	d := p.cfg.Class(g.class).Defer
	g.home.blockWake(fleet.SkipDeferred, func() string {
		return fmt.Sprintf("%d %s jobs deferred until %s opens (at most %s)", g.unmetJobs(), g.class, d.Until, d.Max)
	})
	return true
}

// belowFloor reports whether the pool would be below its floors with less of its servers
// with no work: the servers on or coming against the floor, and those of them with no work
// against the floor the open schedules that protect services keep free for them.
func (pl *pool) belowFloor(less int) bool {
	return pl.up-less < pl.floor || pl.freeFloor > 0 && pl.up-pl.busy-less < pl.freeFloor
}

// floorDetail says where the pool stands against its floors.
func (pl *pool) floorDetail() string {
	if pl.freeFloor == 0 {
		return fmt.Sprintf("%d of %d servers on, floor %d", pl.up, len(pl.cfg.Nodes), pl.floor)
	}
	return fmt.Sprintf("%d of %d servers on, %d with no work; floor %d, %d kept free for services", pl.up, len(pl.cfg.Nodes), pl.up-pl.busy, pl.floor, pl.freeFloor)
}
