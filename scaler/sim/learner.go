package sim

import (
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/learn"
)

// learner is what rota's replay learns, fed as the daemon's loop feeds the store: at each
// planner call, the need the snapshot shows and the boots and shutdowns finished since.
type learner struct {
	stats learn.Stats
	// views are each pool's View as of the last change of need, until its Until; need what
	// it was read at.
	views  []learn.View
	need   []int
	byName map[string]learn.View
	// idle are each pool's idle periods, learned from the world's log, with the rule on them
	// on (policy.break_even.idle_periods; nil with it off: half a megabyte a pool, made and
	// cleared for nothing would cost a small replay a tenth of its time); refreshed counts the
	// calls that changed a view.
	idle      []learn.Idle
	refreshed int
}

// learn feeds the call's observations to the stats, need the snapshot's (Snapshot.Need), and
// returns what the planner reads, as the loop's learn does.
func (l *learner) learn(w *world, cfg *config.Config, need map[string]int) map[string]learn.View {
	e := w.env
	if l.views == nil {
		l.views = make([]learn.View, len(e.Pools))
		l.need = make([]int, len(e.Pools))
		l.byName = make(map[string]learn.View, len(e.Pools))
		if cfg.Policy.BreakEven.IdlePeriods {
			l.idle = make([]learn.Idle, len(e.Pools))
		}
		for i := range l.need {
			l.need[i] = -1
		}
	}
	for _, tr := range w.seen {
		d := time.Duration(tr.took) * time.Second
		if tr.up {
			l.stats.ObserveBoot(e.Pools[tr.pool].Name, d)
		} else {
			l.stats.ObserveShutdown(e.Pools[tr.pool].Name, d)
		}
	}
	for _, ip := range w.idle {
		l.idle[ip.pool].Observe(ip.rank, w.wall(ip.start), time.Duration(ip.length)*time.Second, ip.ended)
	}
	w.idle = w.idle[:0]
	fresh := len(w.seen) > 0
	w.seen = w.seen[:0]
	now := w.wall(w.now)
	l.stats.Observe(now, need)
	minHistory := time.Duration(cfg.Policy.Forecast.MinHistory)
	for i := range e.Pools {
		name := e.Pools[i].Name
		if n := need[name]; fresh || n != l.need[i] || !now.Before(l.views[i].Until) {
			l.need[i] = n
			l.views[i] = l.stats.View(name, now, minHistory)
			if l.idle != nil {
				l.views[i].Idle = &l.idle[i]
			}
			l.refreshed++
			l.byName[name] = l.views[i]
		}
	}
	return l.byName
}

// ready reports whether pool has history enough (as of its last View).
func (l *learner) ready(pool int) bool { return l.views != nil && l.views[pool].Ready }
