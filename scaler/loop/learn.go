package loop

import (
	"cmp"
	"slices"
	"time"

	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/learn"
	"github.com/rotahq/rota/scaler/store"
)

// saveEvery is how often the loop writes what it learned to the store: a crash loses at most
// that much of it, and the statistics are not rewritten at every pass.
const saveEvery = 5 * time.Minute

// learner is what the loop learns (package learn), kept in the store and handed to the
// planner in the snapshot: the replay (scaler/sim) feeds the same statistics the same way.
type learner struct {
	loaded bool
	stats  learn.Stats
	// damaged are the pools whose stored statistics do not read: learned afresh in memory,
	// their records left as they are.
	damaged map[string]error
	saved   time.Time
	// started is when each power-on or power-off under way began (its intent), for the boot
	// and shutdown times; busy when each node last had work, for IdleSince.
	started map[string]startedAt
	busy    map[string]time.Time
	// idle are each pool's idle periods (policy.break_even.idle_periods), kept in the store
	// with the statistics (idleDamaged as damaged); open each node's idle period under way.
	idle        map[string]*learn.Idle
	idleDamaged map[string]error
	open        map[string]openIdle
}

// openIdle is a node's idle period under way: when it began and the node's rank then.
type openIdle struct {
	start time.Time
	rank  int
}

type startedAt struct {
	kind fleet.Kind
	at   time.Time
}

// learn feeds the pass's observations to the statistics, sets each node's IdleSince and the
// snapshot's Learned, and saves the statistics when they are due. before and after are the
// records before and after the pass's repair (which often finishes a boot begun a pass ago).
func (l *Loop) learn(snap *fleet.Snapshot, before, after map[string]store.Node, now time.Time) {
	lr := &l.learned
	if !lr.loaded {
		l.loadLearned(now)
	}
	for _, recs := range []map[string]store.Node{before, after} {
		for name, r := range recs {
			l.noteTransition(name, r)
		}
	}
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		if n.Jobs.Allocated() || !snap.JobsKnown {
			lr.busy[n.Name] = now
		}
		n.IdleSince = lr.busy[n.Name]
		if n.LastOn.After(n.IdleSince) {
			n.IdleSince = n.LastOn
		}
	}
	if need := snap.Need(l.cfg); need != nil {
		lr.stats.Observe(now, need)
	}
	if l.cfg.Policy.BreakEven.IdlePeriods && snap.JobsKnown {
		lr.learnIdle(snap, now)
	}
	snap.Learned = make(map[string]learn.View, len(l.cfg.Pools))
	minHistory := time.Duration(l.cfg.Policy.Forecast.MinHistory)
	for _, p := range l.cfg.Pools {
		v := lr.stats.View(p.Name, now, minHistory)
		v.Idle = lr.idle[p.Name]
		snap.Learned[p.Name] = v
	}
	if now.Sub(lr.saved) >= saveEvery {
		lr.saved = now
		err := l.o.Store.PutLearned(lr.stats, lr.damaged)
		if err == nil && len(lr.idle) > 0 {
			err = l.o.Store.PutLearnedIdle(lr.idle, lr.idleDamaged)
		}
		if err != nil {
			l.log.WithError(err).Warn("what was learned not saved; tried again at the next save")
		}
	}
}

// learnIdle follows each node's idle periods as the replay does (scaler/sim): one begins when
// a node on has no work, at its IdleSince, with its rank among its pool's empty nodes on in the
// job manager's placement order (by name); it ends when work is allocated on the node, or is
// cut when the node leaves On (drained or powered off) first.
func (lr *learner) learnIdle(snap *fleet.Snapshot, now time.Time) {
	if lr.open == nil {
		lr.open = map[string]openIdle{}
	}
	empty := make([]*fleet.Node, 0, len(snap.Nodes))
	for i := range snap.Nodes {
		if n := &snap.Nodes[i]; n.Pool != "" && n.State == fleet.StateOn && !n.Jobs.Allocated() {
			empty = append(empty, n)
		}
	}
	slices.SortFunc(empty, func(a, b *fleet.Node) int { return cmp.Compare(a.Name, b.Name) })
	ranks := map[string]int{}
	for _, n := range empty {
		ranks[n.Pool]++
		if _, ok := lr.open[n.Name]; !ok {
			lr.open[n.Name] = openIdle{start: n.IdleSince, rank: ranks[n.Pool]}
		}
	}
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		o, ok := lr.open[n.Name]
		if !ok || n.State == fleet.StateOn && !n.Jobs.Allocated() {
			continue
		}
		d := lr.idle[n.Pool]
		if d == nil {
			d = &learn.Idle{}
			lr.idle[n.Pool] = d
		}
		d.Observe(o.rank, o.start, now.Sub(o.start), n.Jobs.Allocated())
		delete(lr.open, n.Name)
	}
}

// loadLearned reads the statistics once. After a gap longer than a few passes (rota was down)
// nothing is counted across it.
func (l *Loop) loadLearned(now time.Time) {
	lr := &l.learned
	lr.loaded, lr.saved = true, now
	lr.started, lr.busy = map[string]startedAt{}, map[string]time.Time{}
	names := make([]string, 0, len(l.cfg.Pools))
	for _, p := range l.cfg.Pools {
		names = append(names, p.Name)
	}
	stats, bad, err := l.o.Store.Learned(names)
	l.readFailed("statistics", err, bad)
	lr.stats, lr.damaged = stats, bad
	if l.cfg.Policy.BreakEven.IdlePeriods {
		idle, bad, err := l.o.Store.LearnedIdle(names)
		l.readFailed("idle periods", err, bad)
		lr.idle, lr.idleDamaged = idle, bad
	}
	gap := 3 * time.Duration(l.cfg.Policy.EvaluationInterval)
	for _, p := range lr.stats.Pools {
		if now.Sub(time.Unix(p.Last, 0)) > gap {
			lr.stats.Gap(now)
			break
		}
	}
}

// readFailed logs what of the store's learned what (statistics, idle periods) did not read:
// err the whole read, bad each pool's damaged record. Those pools learn afresh in memory.
func (l *Loop) readFailed(what string, err error, bad map[string]error) {
	if err != nil {
		l.log.WithError(err).Error("the learned " + what + " could not be read: learning afresh")
	}
	for name, e := range bad {
		l.log.WithField("pool", name).WithError(e).Error("stored " + what + " do not read: learning afresh, the record left as it is")
	}
}

// noteTransition learns boot and shutdown times: from the start of a power-on or power-off
// (its intent) to the node's LastOn or LastOff after it.
func (l *Loop) noteTransition(name string, r store.Node) {
	lr := &l.learned
	if r.Intent != nil && (r.Intent.Kind == fleet.PowerOn || r.Intent.Kind == fleet.PowerOff) {
		if s, ok := lr.started[name]; !ok || s.kind != r.Intent.Kind {
			lr.started[name] = startedAt{kind: r.Intent.Kind, at: r.Intent.Started}
		}
		return
	}
	s, ok := lr.started[name]
	if !ok {
		return
	}
	delete(lr.started, name)
	ref, _ := l.cfg.Node(name)
	if ref.Pool == nil {
		return
	}
	switch {
	case s.kind == fleet.PowerOn && r.State == fleet.StateOn && r.LastOn.After(s.at):
		lr.stats.ObserveBoot(ref.Pool.Name, r.LastOn.Sub(s.at))
	case s.kind == fleet.PowerOff && r.State == fleet.StateOff && r.LastOff.After(s.at):
		lr.stats.ObserveShutdown(ref.Pool.Name, r.LastOff.Sub(s.at))
	}
}
