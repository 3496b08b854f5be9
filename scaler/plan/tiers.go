package plan

import "slices"

// tiers is a pool's screening before any step: its capacity tiers by region and the servers
// screening skips, each list in its members' order (by name), and its asleep servers not
// skipped, in the wake queue's order (see pass.before). A
// Planner keeps it from pass to pass with each server's screening (scratch.screens), and a
// pass told which nodes changed screens those again and no other (see screen).
type tiers struct {
	regions         []*keptRegion // by region
	skipped, asleep []int
}

// keptRegion is a pool's capacity tiers in one region, as screening leaves them, and the
// room of each tier (see regionBins); stale: a server left the tier since its room was
// worked out (it is worked out again once, by lay).
type keptRegion struct {
	region string
	lists  [tierCount][]int
	room   [tierCount]capacity
	stale  [tierCount]bool
}

// clear empties the tiers, keeping their memory.
func (k *tiers) clear() {
	for _, kr := range k.regions {
		for t := range kr.lists {
			kr.lists[t], kr.room[t], kr.stale[t] = kr.lists[t][:0], capacity{}, false
		}
	}
	k.skipped, k.asleep = k.skipped[:0], k.asleep[:0]
}

// insert adds server i as screened (p.mem.screens[i]).
func (k *tiers) insert(p *pass, i int) {
	sc, rank := &p.mem.screens[i], p.mem.rank
	if sc.tier < tierCount {
		kr := k.region(p.servers[i].node.Region)
		kr.lists[sc.tier] = listed(kr.lists[sc.tier], i, true, rank)
		kr.room[sc.tier] = kr.room[sc.tier].union(sc.free)
	}
	if sc.skip != "" {
		k.skipped = listed(k.skipped, i, true, rank)
	}
}

// queue adds server i to the asleep servers if it is one, as screened (p.mem.screens[i]).
func (k *tiers) queue(p *pass, i int) {
	if p.mem.screens[i].asleep {
		j, _ := k.queued(p, i)
		k.asleep = slices.Insert(k.asleep, j, i)
	}
}

// unqueue takes server i out of the asleep servers, as screened (p.mem.screens[i]).
func (k *tiers) unqueue(p *pass, i int) {
	if p.mem.screens[i].asleep {
		if j, found := k.queued(p, i); found {
			k.asleep = slices.Delete(k.asleep, j, j+1)
		}
	}
}

// queued is where server i is, or would be, among the asleep servers, by its screening's key:
// a binary search by hand, comparing the keys directly rather than through a function value.
func (k *tiers) queued(p *pass, i int) (int, bool) {
	screens, key := p.mem.screens, &p.mem.screens[i].wake
	lo, hi := 0, len(k.asleep)
	for lo < hi {
		if h := int(uint(lo+hi) >> 1); screens[k.asleep[h]].wake.before(key) < 0 {
			lo = h + 1
		} else {
			hi = h
		}
	}
	return lo, lo < len(k.asleep) && screens[k.asleep[lo]].wake.before(key) == 0
}

// rescreen makes sc server i's screening, in place of the one it had.
func (k *tiers) rescreen(p *pass, i int, sc screening) {
	m := &p.mem
	old := &m.screens[i]
	requeue := sc.asleep != old.asleep || sc.wake != old.wake
	if requeue {
		k.unqueue(p, i)
	}
	switch {
	case sc.tier != old.tier || sc.skip != old.skip:
		k.remove(p, i)
		*old = sc
		k.insert(p, i)
	case sc.free != old.free && sc.tier < tierCount:
		// In the same lists: the tier's room alone may change.
		kr := k.region(p.servers[i].node.Region)
		if sc.free.union(old.free) == sc.free {
			kr.room[sc.tier] = kr.room[sc.tier].union(sc.free)
		} else {
			kr.stale[sc.tier] = true
		}
	}
	*old = sc
	if requeue {
		k.queue(p, i)
	}
}

// remove takes server i out, as it was screened (p.mem.screens[i]).
func (k *tiers) remove(p *pass, i int) {
	m := &p.mem
	sc := &m.screens[i]
	if sc.tier < tierCount {
		kr := k.region(p.servers[i].node.Region)
		kr.lists[sc.tier] = listed(kr.lists[sc.tier], i, false, m.rank)
		kr.stale[sc.tier] = true
	}
	k.skipped = listed(k.skipped, i, false, m.rank)
}

// region is the tiers of region, added (empty) if there are none yet.
func (k *tiers) region(r string) *keptRegion {
	for j, kr := range k.regions {
		switch {
		case kr.region == r:
			return kr
		case kr.region > r:
			kr = &keptRegion{region: r}
			k.regions = append(k.regions[:j], append([]*keptRegion{kr}, k.regions[j:]...)...)
			return kr
		}
	}
	kr := &keptRegion{region: r}
	k.regions = append(k.regions, kr)
	return kr
}

// lay gives the pass the pool's screening: its capacity tiers (each server's free capacity
// with them) and its skips.
func (pl *pool) lay(p *pass) {
	screens := p.mem.screens
	for _, kr := range pl.kept.regions {
		var rb *regionBins
		for t, list := range kr.lists {
			if len(list) == 0 {
				continue
			}
			if rb == nil {
				rb = pl.regionBins(kr.region)
			}
			if kr.stale[t] {
				kr.room[t], kr.stale[t] = capacity{}, false
				for _, i := range list {
					kr.room[t] = kr.room[t].union(screens[i].free)
				}
			}
			rb.tiers[t], rb.room[t] = append(rb.tiers[t], list...), kr.room[t]
			for _, i := range list {
				p.state[i].free = screens[i].free
			}
		}
	}
	for _, i := range pl.kept.skipped {
		p.skipScreened(i, screens[i].skip)
	}
}
