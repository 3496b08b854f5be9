package sim

import (
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// history is what the policy did recently, for rota's cooldowns and disruption budget.
type history struct {
	lastUp, lastDown []int64 // per pool
	offs             []int64 // fleet-wide power-offs of the last 24 hours
	moves            []int64 // fleet-wide moves of the last 24 hours
}

func (h *history) record(k fleet.Kind, pool int, now int64) {
	switch k {
	case fleet.PowerOn, fleet.Resume:
		h.lastUp[pool] = now
	case fleet.Drain:
		h.lastDown[pool] = now
	case fleet.PowerOff:
		h.lastDown[pool] = now
		h.offs = append(pruneBefore(h.offs, now-24*3600), now)
	case fleet.Move:
		// A move drains its server, like a drain (the executor records both).
		h.lastDown[pool] = now
		h.moves = append(pruneBefore(h.moves, now-24*3600), now)
	}
}

// histView is the history as the planner reads it, kept from call to call: the last scale-up
// and scale-down of each pool, and the power-offs and moves within the windows the planner
// counts them over (it reads no older ones).
type histView struct {
	v fleet.History
	// up and down are the replay times the maps hold.
	up, down []int64
}

func (c *histView) of(w *world, pol *config.Policy) fleet.History {
	h := &w.hist
	if c.v.LastScaleUp == nil {
		c.v.LastScaleUp, c.v.LastScaleDown = map[string]time.Time{}, map[string]time.Time{}
		c.up, c.down = make([]int64, len(w.env.Pools)), make([]int64, len(w.env.Pools))
		for p := range c.up {
			c.up[p], c.down[p] = noTime, noTime
		}
	}
	for p, pl := range w.env.Pools {
		if h.lastUp[p] != c.up[p] {
			c.up[p], c.v.LastScaleUp[pl.Name] = h.lastUp[p], w.wall(h.lastUp[p])
		}
		if h.lastDown[p] != c.down[p] {
			c.down[p], c.v.LastScaleDown[pl.Name] = h.lastDown[p], w.wall(h.lastDown[p])
		}
	}
	now := w.wall(w.now)
	c.v.PowerOffs = within(c.v.PowerOffs[:0], w, h.offs, now.Add(-time.Duration(pol.Disruption.Window)))
	c.v.Moves = within(c.v.Moves[:0], w, h.moves, now.Add(-time.Duration(pol.Moves.Window)))
	return c.v
}

// within appends the times of ts after since (sorted: from the first of them on).
func within(out []time.Time, w *world, ts []int64, since time.Time) []time.Time {
	for k := len(ts) - 1; k >= 0; k-- {
		if !w.wall(ts[k]).After(since) {
			ts = ts[k+1:]
			break
		}
	}
	for _, t := range ts {
		out = append(out, w.wall(t))
	}
	return out
}
