package plan

import (
	"fmt"
	"math"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// Warm spares: work arrives faster than a server boots, so each pool keeps some capacity
// warm: empty servers on, or booting, with no waiting work placed on them. How much comes from
// what rota learned of the pool (package learn, handed in the snapshot): the rise of its need
// within one boot at policy.spares.quantile, for this hour of the week, and steeper while need
// is rising, so a burst that has begun wakes servers for the rest of it. The pool wakes servers
// to reach it (reason spare). Without that history yet, the servers the pool brought up over
// policy.spares.window, as a rate, times the boot time, times policy.spares.factor, rounded up,
// are kept (never woken). Either way at most policy.spares.max_share of the pool's servers
// (rounded down), so a forecast never keeps a small pool's last servers on.

// SparesCap is the most warm spares a pool of n servers keeps: policy.spares.max_share of
// them, rounded down, so a pool of fewer than 1/max_share servers keeps none.
func SparesCap(sp *config.Spares, n int) int {
	return int(math.Floor(sp.MaxShare*float64(n) + 1e-9))
}

// keepWarm counts each pool's warm capacity, sets its spares and wakes servers it lacks.
func (p *pass) keepWarm() {
	sp := &p.pol.Spares
	for _, pl := range p.pools {
		capN := SparesCap(sp, len(pl.members))
		p.countWarm(pl)
		if capN == 0 {
			continue
		}
		pl.spares, pl.sparesCap = p.sparesOf(pl, capN), capN
		if !pl.view.Ready {
			continue
		}
		if !p.snap.JobsKnown {
			continue // what the need is now is unknown: keep, but wake nothing
		}
		if pl.deferred {
			// Deferrable work waits outside its window with no room here, or takes a warm
			// server's: the job manager, which knows no window, starts it on the spares, and
			// each spare woken for one it took would go to the next (a noon of batch work
			// woke a whole pool so, found replaying). Keep, but wake nothing.
			if pl.warm < pl.spares {
				pl.blockWake(fleet.SkipDeferred, func() string {
					return p.say(func() string {
						return fmt.Sprintf("%d warm, keeps %d, but deferrable work waiting would take a spare woken", pl.warm, pl.spares)
					})
				})
			}
			continue
		}
		for pl.warm < pl.spares && pl.powered < pl.ceiling {
			i, ok := pl.wake.next(p, "")
			if !ok {
				break
			}
			p.powerOn(i, fleet.ReasonSpare, p.say(func() string { return fmt.Sprintf("%d warm, keeps %d; %s", pl.warm, pl.spares, pl.forecast()) }))
			pl.warm++
		}
	}
}

// sparesOf is the warm capacity pool pl keeps, at most capN, and sets its forecast words: from
// its View, or without history from its recent power-ons (recentSpares).
func (p *pass) sparesOf(pl *pool, capN int) int {
	if !pl.view.Ready {
		return p.recentSpares(pl, capN)
	}
	sp := &p.pol.Spares
	boot := pl.boot()
	want := pl.view.Quantile(sp.Quantile, boot)
	pl.forecast = func() string {
		s := fmt.Sprintf("forecast: need rises by %d within %s at q%g (%s, %d h of history)",
			want, boot, sp.Quantile, pl.view.Context(), pl.view.Origins/60)
		if want > capN {
			s += fmt.Sprintf("; capped at %d", capN)
		}
		return s
	}
	return min(want, capN)
}

// countWarm counts the pool's servers that are empty and take work now or soon: On with
// nothing allocated (the servers scale-down looks at), or powering on, booting or woken this
// pass; none with waiting work placed on it. Those on or coming are counted from the pool's
// tally (its servers up, less those On with work) less those placement filled.
func (p *pass) countWarm(pl *pool) {
	pl.warm += pl.tally.up - pl.tally.busyOn - pl.placedWarm
	for _, i := range pl.woken {
		if !p.state[i].placed {
			pl.warm++
		}
	}
}

// recentSpares is the spares without history: recent power-ons as a rate, times a boot; it
// sets the pool's forecast.
func (p *pass) recentSpares(pl *pool, capN int) int {
	sp := &p.pol.Spares
	window := time.Duration(sp.Window)
	if sp.Factor <= 0 || window <= 0 {
		return 0
	}
	ups := 0
	for _, i := range pl.members {
		n := p.servers[i].node
		switch {
		case n.State == fleet.StatePoweringOn || n.State == fleet.StateBooting:
			ups++
		case !n.LastOn.IsZero() && p.now.Sub(n.LastOn) < window:
			ups++
		}
	}
	boot := pl.boot()
	want := int(math.Ceil(sp.Factor*float64(ups)*float64(boot)/float64(window) - 1e-9))
	pl.forecast = func() string {
		return fmt.Sprintf("no history yet: %d power-ons in %s, boot %s, factor %g", ups, window, boot, sp.Factor)
	}
	return min(want, capN)
}

// keepsSpare reports whether powering off one more warm server of pl would leave it less warm
// capacity than its spares. Idle servers that a cap keeps on count as warm.
// warm: a server on and empty, or coming (its node's state and work say so; see countWarm).
func warm(n *fleet.Node) bool {
	switch n.State {
	case fleet.StateOn:
		return !n.Jobs.Allocated()
	case fleet.StatePoweringOn, fleet.StateBooting:
		return true
	}
	return false
}

func (pl *pool) keepsSpare() bool { return pl.spares > 0 && pl.warm-pl.offs-1 < pl.spares }

func (pl *pool) spareDetail() string {
	words := ""
	if pl.forecast != nil {
		words = pl.forecast()
	}
	return fmt.Sprintf("%d warm, keeps %d; %s", pl.warm-pl.offs, pl.spares, words)
}

// boot is the pool's boot time: the median seen, else its boot_timeout.
func (pl *pool) boot() time.Duration {
	if pl.view.Boot > 0 {
		return pl.view.Boot
	}
	return time.Duration(pl.cfg.BootTimeout)
}
