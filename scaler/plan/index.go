package plan

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/learn"
)

// pool is one pool as the pass sees it: its limits for now, its counts, and its capacity.
type pool struct {
	cfg   *config.Pool
	name  string
	cost  float64
	saves bool
	// members are the pool's servers (indices into pass.servers), by name.
	members []int
	// floor and ceiling bound the servers on; freeFloor is the servers with no work kept on
	// for services, by the open schedules that protect them (see belowFloor); threshold is the
	// backlog threshold in force.
	floor, freeFloor, ceiling, threshold int
	// up counts servers On or coming (PoweringOn, Booting), after this pass's actions so far:
	// what floors hold and what Decision.Desired reports. powered adds the Draining servers
	// (they still draw power): what the ceiling caps. Counting Draining in one and not the
	// other makes both limits err on the safe side.
	up, powered int
	// busy counts the servers on with work allocated.
	busy int
	// held counts, per department, the servers it holds: what quotas cap (see hold).
	held   map[string]int
	quotas map[string]config.Quota
	// tally is the pool's counts over its members before the pass acts, and kept its
	// screening, both kept from pass to pass (see tally, tiers): what up, powered, busy and
	// held, the warm count, the bins and the screening's skips start from.
	tally counts
	kept  tiers
	// regions are the regions of the pool's servers (inventory); lastRegion the last one
	// added, as servers of one region usually come together.
	regions    map[string]bool
	lastRegion string

	// bins is the capacity for waiting work, per region (sorted by region), in tiers;
	// binCache keeps each region's bins from pass to pass (Planner), emptied when reused.
	bins     []*regionBins
	byRegion map[string]*regionBins
	binCache map[string]*regionBins
	// lastBins are the bins added to last: servers of one region usually come together.
	lastBins *regionBins
	wake     wakeQueue
	// woken are the servers powered on this pass (in no order: what countWarm counts).
	woken []int

	// view is what rota learned about the pool (its zero value: nothing yet).
	view learn.View
	// spares is how much warm capacity the pool keeps, forecast words saying why; warm
	// counts its empty servers that are on or coming with no work placed on them, and offs
	// the power-offs and drains planned among them this pass (see spares.go).
	spares, warm, offs int
	// sparesCap is the cap the spares were worked out under (0: none were; see Vouch).
	sparesCap int
	// ranked counts the pool's empty servers ranked so far (rankIdle; 0 between).
	ranked   int
	forecast func() string
	// rule is the pool's prices and the break-even rule's answers, kept from pass to pass;
	// priced once they are checked this pass (see costs).
	rule   ruleMemo
	priced bool
	// cooled once the cooldowns were checked this pass; cooldown is the one that holds ("":
	// none), cooldownAt its scale-down or scale-up (see cooling).
	cooled     bool
	cooldown   string
	cooldownAt time.Time
	// placedWarm counts the servers on and empty, or coming, that waiting work was placed on
	// this pass (see countWarm).
	placedWarm int
	// shut is the cap of the pool's that refuses its next idle servers in a quiet pass's
	// scale-down ("": none), shutCycles their cycles today when it is the break-even rule
	// (see shutBy).
	shut       fleet.Reason
	shutCycles int
	// unplaced: waiting work counting against the pool found no place this pass; deferred:
	// deferrable work outside its window that fits the pool found none, or took a warm
	// server's room here (see keepWarm).
	unplaced, deferred bool
	// block is why waiting work woke no (more) servers here; noFit the regions some waiting
	// work needs when the pool's idle servers are in none of them.
	block       fleet.Reason
	blockDetail string
	noFit       []string
}

func newPass(snap fleet.Snapshot, cfg *config.Config, now time.Time) *pass {
	p := &pass{}
	p.reset(snap, cfg, now, nil)
	return p
}

// scratch is memory a Planner keeps from one pass to the next: the servers and their pass
// state, the pools (each with its own slices and maps) and the actions, emptied and reused.
type scratch struct {
	servers []server
	state   []serverPass
	pools   []pool
	byName  map[string]*pool
	order   []*pool
	actions []fleet.Action
	// layout is each node's name, pool and region at the pass before, in snapshot order:
	// while they and the config's pools are the same, each pool's members (by name) and
	// regions are those of the pass before, kept rather than worked out again.
	layout []placeKey
	// strays are the servers in no pool of the config; tally the nodes' counts (see tally).
	strays []int
	tally  tally
	// rank is each member's place in its pool's members; screens each member's screening,
	// for the snapshot's jobs view as in screened (see tiers).
	rank     []int
	screens  []screening
	screened screenedFor
	// names is each node's place by name (see rankNames), kept with the layout.
	names []int
	// idle are shrink's idle servers and costKeys costOrder's keys, reused.
	idle     []int
	costKeys []costKey
	// asked are the pass's break-even verdicts (see Vouch), reused.
	asked []asked
	// users are the users' numbers (see userID).
	users map[string]int32
}

// screenedFor is what of the snapshot the servers' screenings were made for.
type screenedFor struct{ jobsKnown, noJobManager bool }

// placeKey is what a node's place in the pass (its pool, its members' order, its pool's
// regions) is worked out from, and the pool it gave (nil: none in the config).
type placeKey struct {
	name, pool, region string
	pl                 *pool
}

func (k *placeKey) of(n *fleet.Node) bool {
	return n.Name == k.name && n.Pool == k.pool && n.Region == k.region
}

// samePools reports whether cfg's pools are named as at the pass before, in the same order.
func (m *scratch) samePools(cfg *config.Config) bool {
	if len(m.order) != len(cfg.Pools) {
		return false
	}
	for i := range cfg.Pools {
		if m.pools[i].name != cfg.Pools[i].Name {
			return false
		}
	}
	return true
}

// reset makes p the start of a pass over snap, reusing the memory of the pass before. When
// changed is not nil (a Planner told which nodes changed) and the tally kept from the pass
// before follows (see tally.follows), only the nodes listed in changed are counted again.
func (p *pass) reset(snap fleet.Snapshot, cfg *config.Config, now time.Time, changed []int) {
	m := p.mem
	if cap(p.actions) > cap(m.actions) {
		m.actions = p.actions
	}
	*p = pass{
		input: snap, cfg: cfg, pol: &cfg.Policy, now: now, quiet: p.quiet,
		offFrom:      now.Add(-time.Duration(cfg.Policy.Node.MinOff)),
		noJobManager: snap.NoJobManager,
	}
	p.snap = &p.input
	// Only a Planner (quiet) plans again with this memory: Plan keeps no layout.
	kept := p.quiet && len(m.layout) == len(snap.Nodes) && m.samePools(cfg)
	follow := kept && changed != nil && m.tally.follows(p.snap, cfg, m.layout, changed)
	if cap(m.servers) < len(snap.Nodes) {
		m.servers = make([]server, len(snap.Nodes))
	}
	p.servers = m.servers[:len(snap.Nodes)]
	if !follow {
		clear(p.servers) // when following, the same nodes in the same pools
	}
	if cap(m.state) < len(snap.Nodes) {
		m.state = make([]serverPass, len(snap.Nodes))
	}
	p.state = m.state[:len(snap.Nodes)]
	clear(p.state)
	if !p.quiet {
		p.skips = make([]fleet.Skip, 0, len(snap.Nodes))
	}
	if m.byName == nil {
		m.byName = make(map[string]*pool, len(cfg.Pools))
	}
	clear(m.byName)
	p.byName = m.byName
	if len(m.pools) < len(cfg.Pools) {
		m.pools = append(m.pools, make([]pool, len(cfg.Pools)-len(m.pools))...)
	}
	p.pools = m.order[:0]
	for i := range cfg.Pools {
		pl := &m.pools[i]
		pl.reset(cfg, &cfg.Pools[i], now, kept, follow)
		pl.view = snap.Learned[pl.name]
		p.pools = append(p.pools, pl)
		p.byName[pl.name] = pl
	}
	m.order = p.pools
	p.actions = m.actions[:0]
	p.asked = m.asked[:0]
	slices.SortFunc(p.pools, func(a, b *pool) int {
		return cmp.Or(cmp.Compare(a.cost, b.cost), cmp.Compare(a.name, b.name))
	})
	if follow {
		for _, i := range changed {
			m.tally.recount(i, &snap.Nodes[i], p.servers[i].pool)
		}
		// Screened again: the changed nodes, or all when the jobs view is another.
		p.screenChanged = m.screened == screenedFor{jobsKnown: snap.JobsKnown, noJobManager: snap.NoJobManager}
		p.changed = changed
	} else {
		p.layOut(&m, kept)
	}
	p.on, p.draining, p.strays = m.tally.on, m.tally.draining, m.strays
	p.budget = newBudget(p.snap, p.pol, now)
	p.budget.inFlight, p.budget.draining = m.tally.inFlight, m.tally.drainingN
	for _, pl := range p.pools {
		pl.powered, pl.up, pl.busy = pl.tally.powered, pl.tally.up, pl.tally.busy
		for d, n := range pl.tally.held {
			pl.held[d] = n
		}
	}
	p.mem = m
}

// layOut gives every server its node and pool, and counts them all afresh into m's tally;
// kept: the pools' members and regions are those of the pass before while each node's name,
// pool and region are as they were (m.layout).
func (p *pass) layOut(m *scratch, kept bool) {
	snap := p.snap
	m.tally.clear(len(snap.Nodes))
	m.strays = m.strays[:0]
	var last *pool // nodes of one pool usually come together: skip the map for them
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		if kept && !m.layout[i].of(n) {
			kept = false
			p.place(i) // the layout changed at i: place the servers before it afresh
		}
		s := &p.servers[i]
		s.node = n
		switch {
		case kept:
			last = m.layout[i].pl
		case last == nil || last.name != n.Pool:
			last = p.byName[n.Pool]
		}
		s.pool = last
		if s.pool == nil {
			m.strays = append(m.strays, i)
		} else if !kept {
			s.pool.place(i, n)
		}
		m.tally.recount(i, n, s.pool)
	}
	if !kept {
		byNodeName := func(a, b int) int { return cmp.Compare(p.servers[a].node.Name, p.servers[b].node.Name) }
		for _, pl := range p.pools {
			// Snapshots usually list a pool's nodes by name already: check before sorting.
			if !slices.IsSortedFunc(pl.members, byNodeName) {
				slices.SortFunc(pl.members, byNodeName)
			}
		}
		if p.quiet {
			m.layout = m.layout[:0]
			for i := range snap.Nodes {
				n := &snap.Nodes[i]
				m.layout = append(m.layout, placeKey{n.Name, n.Pool, n.Region, p.servers[i].pool})
			}
		}
	}
	if p.quiet {
		m.tally.nodes, m.tally.cfg = snap.Nodes, p.cfg
	}
	m.rank = slices.Grow(m.rank[:0], len(snap.Nodes))[:len(snap.Nodes)]
	for _, pl := range p.pools {
		for r, i := range pl.members {
			m.rank[i] = r
		}
	}
	if !kept || len(m.names) != len(snap.Nodes) {
		m.rankNames(p)
	}
}

// rankNames gives each node its place among the snapshot's nodes by name, nodes of one name
// one place: comparing two nodes' places is comparing their names.
func (m *scratch) rankNames(p *pass) {
	n := len(p.servers)
	byName := make([]int, n)
	for i := range byName {
		byName[i] = i
	}
	slices.SortFunc(byName, func(a, b int) int { return cmp.Compare(p.servers[a].node.Name, p.servers[b].node.Name) })
	m.names = slices.Grow(m.names[:0], n)[:n]
	for k, i := range byName {
		m.names[i] = k
		if k > 0 && p.servers[i].node.Name == p.servers[byName[k-1]].node.Name {
			m.names[i] = m.names[byName[k-1]]
		}
	}
}

// place gives the pools their members and regions afresh, from the servers before k (their
// pools set): the layout kept from the pass before is wrong from k on.
func (p *pass) place(k int) {
	for _, pl := range p.pools {
		pl.members, pl.regions = pl.members[:0], emptied(pl.regions)
	}
	for i := range k {
		if s := &p.servers[i]; s.pool != nil {
			s.pool.place(i, s.node)
		}
	}
}

// reset makes pl the pool c at the start of a pass at now, keeping its memory; kept: its
// members and regions are those of the pass before (see scratch.layout); follow: its counts
// are those of the pass before, to be brought up to date (see tally).
func (pl *pool) reset(cfg *config.Config, c *config.Pool, now time.Time, kept, follow bool) {
	old := *pl
	*pl = pool{
		cfg: c, name: c.Name, cost: c.Cost.PlanPerHour(), saves: c.Cost.Saves(),
		ceiling:    len(c.Nodes),
		threshold:  cfg.Policy.Backlog.QueuedJobs,
		members:    old.members,
		regions:    old.regions,
		lastRegion: old.lastRegion,
		held:       emptied(old.held),
		quotas:     emptied(old.quotas),
		byRegion:   emptied(old.byRegion),
		binCache:   old.binCache,
		bins:       old.bins[:0],
		wake:       wakeQueue{all: old.wake.all[:0], byRegion: old.wake.byRegion},
		woken:      old.woken[:0],
		rule:       old.rule,
		tally:      old.tally,
		kept:       old.kept,
	}
	if !follow {
		pl.tally = counts{held: emptied(old.tally.held)}
	}
	if !kept {
		pl.members, pl.regions = pl.members[:0], emptied(pl.regions)
	}
	if c.Max != nil {
		pl.ceiling = *c.Max
	}
	share, free, scheduled := 0.0, 0.0, false
	for i := range cfg.Policy.Schedules {
		s := &cfg.Policy.Schedules[i]
		if !s.Active(now) || !s.AppliesTo(c.Name) {
			continue
		}
		share = max(share, s.MinOnShare)
		if s.ProtectServices {
			free = max(free, s.MinOnShare)
		}
		// An open window's threshold replaces the policy's, a higher one too (patience by
		// day); several windows open at once: the most eager wins, as the floor takes the
		// highest share.
		if s.BacklogQueuedJobs != nil {
			if !scheduled {
				pl.threshold, scheduled = *s.BacklogQueuedJobs, true
			}
			pl.threshold = min(pl.threshold, *s.BacklogQueuedJobs)
		}
	}
	// The ceiling caps everything, floors included: a share that asks for more servers than
	// Max allows gets Max. The tiny epsilon keeps 0.3 of 10 servers at 3, not 4.
	servers := func(share float64) int { return int(math.Ceil(share*float64(len(c.Nodes)) - 1e-9)) }
	pl.floor = min(max(c.Min, servers(share)), pl.ceiling)
	pl.freeFloor = min(servers(free), pl.ceiling)
	for _, q := range cfg.Policy.Quotas {
		if q.Pool == c.Name {
			pl.quotas[q.Department] = q
		}
	}
}

// emptied is m cleared for reuse, or a new map.
func emptied[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	clear(m)
	return m
}

// place adds server i (node n) to the pool's members and regions.
func (pl *pool) place(i int, n *fleet.Node) {
	pl.members = append(pl.members, i)
	if len(pl.members) == 1 || n.Region != pl.lastRegion {
		pl.regions[n.Region] = true
		pl.lastRegion = n.Region
	}
}

// powered: the states the ceiling counts (on, coming, or draining).
func powered(st fleet.State) bool {
	switch st {
	case fleet.StateOn, fleet.StatePoweringOn, fleet.StateBooting, fleet.StateDraining:
		return true
	}
	return false
}

// regionBins is a pool's capacity in one region, by tier, each tier by name.
type regionBins struct {
	region string
	tiers  [tierCount][]int
	// room bounds each tier's free capacity from above, dimension by dimension: work that
	// exceeds it skips the tier without walking it.
	room [tierCount]capacity
}

// add puts server i, of region and with free capacity, into tier t of its region.
func (pl *pool) add(t tier, region string, free capacity, i int) {
	rb := pl.lastBins
	if rb == nil || rb.region != region {
		rb = pl.regionBins(region)
		pl.lastBins = rb
	}
	rb.tiers[t] = append(rb.tiers[t], i)
	rb.room[t] = rb.room[t].union(free)
}

// regionBins are the pool's bins in region, made empty the first time in a pass.
func (pl *pool) regionBins(region string) *regionBins {
	rb := pl.byRegion[region]
	if rb == nil {
		rb = pl.binCache[region]
		if rb == nil {
			if pl.binCache == nil {
				pl.binCache = map[string]*regionBins{}
			}
			rb = &regionBins{region: region}
			pl.binCache[region] = rb
		}
		for t := range rb.tiers {
			rb.tiers[t], rb.room[t] = rb.tiers[t][:0], capacity{}
		}
		pl.byRegion[region] = rb
		// Members are visited by name and regions appear in that order; sort to make the
		// order of regions independent of names.
		pl.bins = append(pl.bins, rb)
		slices.SortFunc(pl.bins, func(a, b *regionBins) int { return cmp.Compare(a.region, b.region) })
	}
	return rb
}

// fits reports whether the pool can run a job of shape s with needs nd in one of regions
// (nil: any region).
func (pl *pool) fits(s config.Shape, nd *needs, regions []string) bool {
	if !pl.cfg.Profile.Fits(s) || !nd.offeredBy(&pl.cfg.Profile) {
		return false
	}
	return regions == nil || slices.ContainsFunc(regions, func(r string) bool { return pl.regions[r] })
}

// blockWake records the first reason waiting work woke no (more) servers in the pool; detail
// is only worded for the first.
func (pl *pool) blockWake(r fleet.Reason, detail func() string) {
	if pl.block == "" {
		pl.block, pl.blockDetail = r, detail()
	}
}
