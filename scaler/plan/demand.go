package plan

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// group is waiting work aggregated by everything placement looks at: many Demand entries
// (often one job each) become one group, so placement works per group, never per job.
type group struct {
	groupKey
	// needs is what the group's jobs ask beyond their shape, as the job manager gave it (the
	// key holds its index alone).
	needs fleet.Needs
	jobs  int
	// since is when the oldest job of the group was submitted (zero: unknown, taken as old).
	since time.Time
	// slots is how many server-slots (jobs times nodes per job) still have no place.
	slots int
	// nd is what the group's jobs can run on beyond their shape; regions the regions they may
	// run in (nil: any), their own and those that see their storage.
	nd      needs
	regions []string
	// limit is the shortest time limit of its jobs (0: none given), the run the planner
	// expects of them.
	limit time.Duration
	// pools that fit the shape and needs in the regions, cheapest first; home (pools[homeAt])
	// is the first of them its department's quota does not close (max_servers 0, no borrow:
	// work below the threshold would wait there for ever), the pool whose backlog threshold
	// the group counts against and that it wakes servers in below it.
	pools  []*pool
	home   *pool
	homeAt int
	// due: the backlog threshold of home is passed, so the group may wake servers beyond
	// home; waiting and oldest are what it was judged on when it is not.
	due     bool
	waiting int
	oldest  time.Time
	// steered is the dearer pool whose empty servers the group passed over because waking
	// its home pool costs less (see cheaperToWake); steeredText says so in power-on details.
	// unsteered: its home pool could not wake enough, so it takes those servers after all
	// (see unsteer).
	steered     *pool
	steeredText string
	unsteered   bool
	// deferred: of a deferrable class outside its window (see classes.go).
	deferred bool
	// filled once placement first went through the capacity there is for the group;
	// yielded: it left a server to its owner's work then, and takes what is left after
	// (see yields).
	filled, yielded bool
}

// groupKey is what demand is grouped by. It holds the index of the needs (needsAt, 0 for
// none) rather than the needs themselves: every demand entry's key is hashed, and the needs'
// seven fields, almost always empty, were most of that hash.
type groupKey struct {
	class, region, dept, partition string
	nodes, needsAt                 int
	shape                          shape
}

// groups aggregates the snapshot's demand. Entries with no jobs are dropped.
func (p *pass) groups() []*group {
	byKey := map[groupKey]*group{}
	needsAt := map[fleet.Needs]int{}
	var list []*group
	for i := range p.snap.Demand {
		d := &p.snap.Demand[i]
		if d.Count <= 0 {
			continue
		}
		class := d.Class
		if class == "" {
			class = p.cfg.Classify(d.Shape)
		}
		k := groupKey{class: class, region: d.Region, dept: d.Department, partition: d.Partition,
			shape: shapeOf(d.Shape, d.Needs), nodes: max(d.Nodes, 1)}
		if d.Needs != (fleet.Needs{}) {
			k.needsAt = needsAt[d.Needs]
			if k.needsAt == 0 {
				k.needsAt = len(needsAt) + 1
				needsAt[d.Needs] = k.needsAt
			}
		}
		g := byKey[k]
		if g == nil {
			g = &group{groupKey: k, needs: d.Needs, since: d.Since, limit: d.TimeLimit}
			byKey[k] = g
			list = append(list, g)
		}
		g.jobs += d.Count
		if d.Since.Before(g.since) {
			g.since = d.Since
		}
		if d.TimeLimit > 0 && (g.limit == 0 || d.TimeLimit < g.limit) {
			g.limit = d.TimeLimit
		}
	}
	for _, g := range list {
		g.shape = p.withUser(g.shape, g.needs.User)
		g.slots = g.jobs * g.nodes
		g.nd = readNeeds(g.partition, g.needs)
		g.regions = p.regionsFor(g.region, g.needs.Storage)
		s := config.Shape{CPUs: g.shape.cpus, GPUs: g.shape.gpus, Memory: config.Bytes(g.shape.mem)}
		for _, pl := range p.pools {
			if pl.fits(s, &g.nd, g.regions) {
				g.pools = append(g.pools, pl)
			}
		}
		if len(g.pools) > 0 {
			g.homeAt = max(slices.IndexFunc(g.pools, func(pl *pool) bool { return !pl.closedTo(g.dept) }), 0)
			g.home = g.pools[g.homeAt]
		}
	}
	// Biggest shapes first (first-fit decreasing packs tighter; a whole server is the
	// biggest), then oldest first.
	slices.SortFunc(list, func(a, b *group) int {
		return cmp.Or(
			cmp.Compare(boolInt(b.shape.is.kinds == kindWhole), boolInt(a.shape.is.kinds == kindWhole)), cmp.Compare(b.shape.gpus, a.shape.gpus), cmp.Compare(b.shape.cpus, a.shape.cpus),
			cmp.Compare(b.shape.mem, a.shape.mem), cmp.Compare(b.nodes, a.nodes),
			a.since.Compare(b.since), cmp.Compare(a.class, b.class),
			cmp.Compare(a.region, b.region), cmp.Compare(a.dept, b.dept),
			cmp.Compare(a.partition, b.partition), a.needs.Compare(b.needs),
		)
	})
	return list
}

// perServer is how many slots of the group one server may take: a gang job needs its nodes on
// distinct servers, so a server takes at most one slot per job.
func (g *group) perServer() int {
	if g.nodes > 1 {
		return g.jobs
	}
	return math.MaxInt
}

// unmetJobs is how many of the group's jobs still have no place.
func (g *group) unmetJobs() int { return (g.slots + g.nodes - 1) / g.nodes }

// regionsFor is where work of region (empty: any) with data on storage (empty: none) may run:
// its region, and every region that sees its storage (policy.storage). Nil means any region.
func (p *pass) regionsFor(region, storage string) []string {
	shared := p.pol.RegionsSeeing(storage)
	switch {
	case region == "" && shared == nil:
		return nil
	case shared == nil:
		// The common case, one slice per region for the whole pass.
		if p.oneRegion == nil {
			p.oneRegion = map[string][]string{}
		}
		r, ok := p.oneRegion[region]
		if !ok {
			r = []string{region}
			p.oneRegion[region] = r
		}
		return r
	}
	var out []string
	if region != "" {
		out = append(out, region)
	}
	for _, r := range shared {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}
