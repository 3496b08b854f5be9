package plan

import (
	"fmt"
	"slices"

	"github.com/rotahq/rota/scaler/fleet"
)

// Work that can wait, and work that cannot. A deferrable class (classes[].defer) waiting
// outside its schedule's window is placed on capacity that is on or coming, but wakes nothing
// and takes back no drained server; at the window's start, or once its oldest job waited
// defer.max, it is served as usual. A service class's work is placed before any other; and
// while a schedule that protects services is open, its floor counts only servers with no work
// on them, so what other work takes of it is woken again.

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

// floorCount is what holds the pool's floor: its servers on or coming, and while a schedule
// protecting services is open, only those of them with no work on them.
func (pl *pool) floorCount() int {
	if pl.protect {
		return pl.up - pl.busy
	}
	return pl.up
}
