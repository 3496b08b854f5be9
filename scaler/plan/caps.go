package plan

import (
	"fmt"
	"time"

	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/scaler/fleet"
)

// The caps on scale-down are all applied here, in this order: the server's own limits first
// (dwell time, cycles, work placed on it), then its pool's (cooldowns, floor, warm spares,
// break-even), then the fleet's (disruption budget, concurrency). A server stopped by a cap
// gets a skip that names it. The caps are read from counts kept up to date as the pass plans,
// so a pass never plans past one.

// scaleDownCaps says which cap keeps idle server i from being powered off (or drained), or ""
// and the break-even numbers for the action when none does.
func (p *pass) scaleDownCaps(i int) (fleet.Reason, string) {
	s := &p.servers[i]
	n, pl, pol := s.node, s.pool, p.pol
	switch {
	case pol.Node.MinOn > 0 && !n.LastOn.IsZero() && p.now.Sub(n.LastOn) < time.Duration(pol.Node.MinOn):
		// Hardware wear: a server stays on at least min_on once it came up. 0s holds nothing,
		// not even a server this pass's repair found on (stamped after the pass's now).
		return fleet.SkipMinOn, p.say(func() string { return "on since " + n.LastOn.UTC().Format(time.RFC3339) })
	case n.CyclesToday >= pol.Node.MaxCyclesPerDay:
		// The cycle budget: a server is powered off at most max_cycles_per_day times in 24h.
		return fleet.SkipCycleCap, p.say(func() string {
			return fmt.Sprintf("%d power-offs in 24h, cap %d", n.CyclesToday, pol.Node.MaxCyclesPerDay)
		})
	case p.state[i].placed:
		// Waiting work was placed on it: the job manager starts it there, or a gang waits
		// for it and for busy servers to free (kept, or the gang would wait for ever).
		return fleet.SkipDemandWaits, "waiting work placed on it"
	case n.Jobs.Allocated() && pl.unplaced:
		// A server with work is held to the caps only to be moved: none while the pool's waiting work
		// has no place (an idle server the work does not fit may still go).
		return fleet.SkipDemandWaits, p.say(func() string { return "work waits for pool " + pl.name })
	case p.cooling(pl):
		return fleet.SkipCooldown, p.say(func() string { return pl.cooldown + " at " + pl.cooldownAt.UTC().Format(time.RFC3339) })
	case pl.belowFloor(1):
		return fleet.SkipFloor, p.say(pl.floorDetail)
	case pl.keepsSpare():
		// Warm capacity for work arriving within a boot (spares.go).
		return fleet.ReasonSpare, p.say(pl.spareDetail)
	}
	// A server with work is held to the caps only to be moved, whose own price (saving against the work
	// lost) decides; break-even prices an idle server's staying on.
	words := func() string { return "" }
	if !n.Jobs.Allocated() {
		v := p.breakEven(i, pl.warm-pl.offs)
		p.asked = append(p.asked, asked{i: i, level: pl.warm - pl.offs, stays: v.reason != ""})
		if v.reason != "" {
			return v.reason, p.say(func() string { return v.words(&pl.view) })
		}
		words = func() string { return v.words(&pl.view) }
	}
	if reason, detail := p.fleetCaps(); reason != "" {
		return reason, detail
	}
	return "", p.say(words)
}

// cooling reports whether a cooldown keeps pool pl from scaling down now, checked once a pass:
// pl.cooldown says which ("scaled down", "scaled up"), pl.cooldownAt when.
func (p *pass) cooling(pl *pool) bool {
	if !pl.cooled {
		h := &p.snap.History
		switch {
		case p.within(h.LastScaleDown[pl.name], p.pol.Cooldown.ScaleDown):
			pl.cooldown, pl.cooldownAt = "scaled down", h.LastScaleDown[pl.name]
		case p.within(h.LastScaleUp[pl.name], p.pol.Cooldown.ScaleUp):
			// Right after a scale-up the work that asked for it may still be arriving: no
			// scale-down in the same pool for cooldown.scale_up.
			pl.cooldown, pl.cooldownAt = "scaled up", h.LastScaleUp[pl.name]
		}
		pl.cooled = true
	}
	return pl.cooldown != ""
}

// fleetCaps says which of the fleet's caps keeps one more server from being drained or
// powered off ("" when none does). Within shrink it only tightens: once it refuses one, it
// refuses every server after it.
func (p *pass) fleetCaps() (fleet.Reason, string) {
	b := &p.budget
	switch {
	case b.recentOffs+b.plannedOffs+b.draining+1 > b.maxOffs:
		// A drain is a power-off to come: it takes its share of the budget now, so drained
		// servers never wait, out of service, for budget.
		return fleet.SkipBudget, p.say(p.budgetDetail)
	case b.inFlight+1 > b.maxConcurrent:
		return fleet.SkipConcurrency, p.say(func() string { return fmt.Sprintf("%d actions in flight, cap %d", b.inFlight, b.maxConcurrent) })
	}
	return "", ""
}

// powerOffCaps says which cap keeps a drained server from being powered off ("" when nothing
// does). Dwell time, cycles, cooldowns and floor were checked when its drain started; the
// budget is checked again because power-offs in the window may have been spent since.
func (p *pass) powerOffCaps() (fleet.Reason, string) {
	b := &p.budget
	if b.recentOffs+b.plannedOffs+1 > b.maxOffs {
		return fleet.SkipBudget, p.say(p.budgetDetail)
	}
	return "", ""
}

func (p *pass) budgetDetail() string {
	b := &p.budget
	return fmt.Sprintf("%d power-offs in the last %s, %d planned, %d draining; budget %d",
		b.recentOffs, time.Duration(p.pol.Disruption.Window), b.plannedOffs, b.draining, b.maxOffs)
}

// within reports whether t is less than d ago (a zero t never is).
func (p *pass) within(t time.Time, d model.Duration) bool {
	return !t.IsZero() && p.now.Sub(t) < time.Duration(d)
}
