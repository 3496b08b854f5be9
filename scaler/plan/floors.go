package plan

import (
	"fmt"

	"github.com/rotahq/rota/scaler/fleet"
)

// raiseFloors brings every pool up to its floor (policy min, or the active schedule's share):
// first by resuming servers rota is draining (cheaper than a boot), then by powering on the
// servers its wake queue offers. Floors need no demand, so they hold even when the job manager
// could not be read; resuming does need the job manager, so only waking is left then.
func (p *pass) raiseFloors() {
	for _, pl := range p.pools {
		if !pl.belowFloor(0) {
			continue
		}
		for _, rb := range pl.bins {
			for _, i := range rb.tiers[tierResume] {
				if pl.belowFloor(0) && !p.state[i].done {
					p.resume(i, fleet.ReasonFloor, p.say(pl.floorDetail))
				}
			}
		}
		for pl.belowFloor(0) {
			if pl.powered >= pl.ceiling {
				pl.blockWake(fleet.SkipCeiling, pl.ceilingDetail)
				break
			}
			i, ok := pl.wake.next(p, "")
			if !ok {
				break
			}
			p.powerOn(i, fleet.ReasonFloor, p.say(pl.floorDetail))
		}
	}
}

func (pl *pool) ceilingDetail() string {
	return fmt.Sprintf("%d servers powered, ceiling %d", pl.powered, pl.ceiling)
}

// powerOn starts server i; it then counts as coming capacity of its pool.
func (p *pass) powerOn(i int, reason fleet.Reason, detail string) {
	s := &p.servers[i]
	if s.node.State == fleet.StateFailed {
		reason, detail = fleet.ReasonRetry, p.say(func() string { return fmt.Sprintf("after %d failures; %s", s.node.Failures, detail) })
	}
	p.act(i, fleet.PowerOn, reason, detail)
	pl := s.pool
	pl.woken = append(pl.woken, i)
	pl.up++
	pl.powered++
	p.budget.poweredOn()
	p.state[i].free = profileCapacity(pl.cfg.Profile)
	pl.add(tierComing, s.node.Region, p.state[i].free, i)
}

// resume gives Draining server i back to the job manager; its free room joins the pool's
// coming capacity.
func (p *pass) resume(i int, reason fleet.Reason, detail string) {
	s := &p.servers[i]
	p.act(i, fleet.Resume, reason, detail)
	s.pool.up++
	p.budget.resumed()
	s.pool.add(tierComing, s.node.Region, p.state[i].free, i)
}
