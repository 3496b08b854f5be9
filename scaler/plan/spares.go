package plan

import (
	"math"
	"strconv"
	"time"

	"github.com/rotahq/rota/scaler/fleet"
)

// Warm spares: bursts of work arrive faster than a server boots, so each pool keeps a few
// idle servers on instead of draining them. How many follows the pool's own recent need: the
// servers it brought up over policy.spares.window (those whose last power-on ended in the
// window, and those powering on or booting now) are the arrival rate of work that needed a
// boot; that rate times the pool's boot time is how many such arrivals one boot spans.
// Times policy.spares.factor, rounded up, capped at policy.spares.max_share of the pool's
// servers (rounded down, so a share never keeps a small pool's last servers on). Spares are
// kept, never woken: a quiet pool has no recent power-ons and keeps none.

// countSpares sets the spares of each pool with idle servers (after idleCheck counted them).
func (p *pass) countSpares() {
	sp := &p.pol.Spares
	window := time.Duration(sp.Window)
	if sp.Factor <= 0 || sp.MaxShare <= 0 || window <= 0 {
		return
	}
	for _, pl := range p.pools {
		capN := int(math.Floor(sp.MaxShare*float64(len(pl.members)) + 1e-9))
		if capN == 0 || pl.idle == 0 {
			continue // nothing to keep: spare the walk
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
		boot := float64(time.Duration(pl.cfg.BootTimeout))
		want := int(math.Ceil(sp.Factor*float64(ups)*boot/float64(window) - 1e-9))
		pl.spares = min(want, capN)
	}
}

// keepsSpare reports whether draining one more idle server of pl would leave it fewer idle
// servers than its spares. Idle servers that a cap keeps on count as spares too.
func (pl *pool) keepsSpare() bool { return pl.idle-pl.drains-1 < pl.spares }

func (pl *pool) spareDetail() string {
	return "warm spare: " + strconv.Itoa(pl.idle-pl.drains) + " idle, keeps " + strconv.Itoa(pl.spares) +
		" for work arriving within a boot"
}
