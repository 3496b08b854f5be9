package plan

import (
	"time"

	"github.com/rotahq/rota/scaler/learn"
)

// asked is a break-even verdict a pass asked for: idle server i as the level-th warm server of
// its pool, and whether the verdict kept it on.
type asked struct {
	i, level int
	stays    bool
}

// Vouch reports whether the last pass (ActionsChanged), planned again at now with views for
// what was learned and nothing else changed, takes the same path: each choice it made on what
// was learned comes out the same. Those choices are each pool's readiness (whether its spares
// are woken, and how the break-even rule is asked), its spares, and the break-even rule's
// verdict on each idle server the pass asked about; a pass that makes them all as before makes
// every other choice as before too, and so decides the same. The replay asks it when only
// what was learned changed since its last call (a View's Until passed) and skips the call it
// vouches for. The next ActionsChanged plans as if Vouch had not been called; a Vouch that
// returns true leaves the Planner as the pass at now with views would (the next Vouch
// compares against these views).
func (pn *Planner) Vouch(views map[string]learn.View, now time.Time) bool {
	p := &pn.p
	if p.snap == nil {
		return false // no pass yet, or the last was paused
	}
	for _, pl := range p.pools {
		if views[pl.name].Ready != pl.view.Ready {
			return false
		}
	}
	p.now = now
	for _, pl := range p.pools {
		pl.view, pl.priced = views[pl.name], false
		if pl.sparesCap > 0 && p.sparesOf(pl, pl.sparesCap) != pl.spares {
			return false
		}
	}
	for _, a := range p.asked {
		if (p.breakEven(a.i, a.level).reason != "") != a.stays {
			return false
		}
	}
	return true
}

// WakesSettle reports whether a pass that sees the last pass's power-ons under way decides as
// it did, all else the same: that pass had at most one group of waiting work (work alike in
// all that placement reads: see group). With more groups, the next pass lays them over all the
// room coming, biggest first, where the last gave each server woken for work to the group that
// woke it: a group may take another's server and leave it short, and more be woken. One group
// steered off a dearer pool's empty servers stays steered: the servers woken for it, coming
// now, are the home pool's room that steering looks for (see homeTakes).
func (pn *Planner) WakesSettle() bool {
	p := &pn.p
	return len(p.waiting) <= 1
}
