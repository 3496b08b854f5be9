package sim

import (
	"time"

	"github.com/rotahq/rota/scaler/fleet"
)

// history is what the policy did recently, for rota's cooldowns and disruption budget.
type history struct {
	lastUp, lastDown []int64 // per pool
	offs             []int64 // fleet-wide power-offs of the last 24 hours
	moves            []int64 // fleet-wide moves of the last 24 hours
	// cached is the planner's view, valid while fresh (record clears it).
	cached fleet.History
	fresh  bool
}

func (h *history) record(k fleet.Kind, pool int, now int64) {
	h.fresh = false
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

// view is the history as the planner reads it (the planner only reads it).
func (h *history) view(w *world) fleet.History {
	if h.fresh {
		return h.cached
	}
	v := fleet.History{LastScaleUp: map[string]time.Time{}, LastScaleDown: map[string]time.Time{}}
	for p, pl := range w.env.Pools {
		if h.lastUp[p] != noTime {
			v.LastScaleUp[pl.Name] = w.wall(h.lastUp[p])
		}
		if h.lastDown[p] != noTime {
			v.LastScaleDown[pl.Name] = w.wall(h.lastDown[p])
		}
	}
	for _, t := range h.offs {
		v.PowerOffs = append(v.PowerOffs, w.wall(t))
	}
	for _, t := range h.moves {
		v.Moves = append(v.Moves, w.wall(t))
	}
	h.cached, h.fresh = v, true
	return v
}
