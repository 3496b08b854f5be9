package plan

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/rotahq/rota/scaler/fleet"
)

// holdKey is a server held by a department this pass.
type holdKey struct {
	server int
	dept   string
}

// hold counts server i toward dept's quota in pool pl, once. A department holds the powered
// servers labelled with it or running its jobs (counted with the pool's tally), plus every
// server its waiting work is placed on or woken for this pass: that part keeps the quota from
// leaking while the servers it woke are still coming up, before its jobs run there.
func (p *pass) hold(pl *pool, i int, dept string) {
	n := p.servers[i].node
	if _, ok := pl.quotas[dept]; !ok || powered(n.State) && (n.Department == dept || slices.Contains(p.mem.tally.shares[i].runs, dept)) {
		return
	}
	k := holdKey{i, dept}
	if p.holders[k] {
		return
	}
	if p.holders == nil {
		p.holders = map[holdKey]bool{}
	}
	p.holders[k] = true
	pl.held[dept]++
}

// Quotas that are guarantees: a department below its quota in a pool gets its capacity back.
// Its work takes the room on servers that are on before the work of departments past their
// quota (lendersFirst), and on its own servers before any other's (yields), so rota stops
// lending; and when its work still has no place (the pool is at its ceiling, or has nothing
// left to wake), a server held by borrowed work (every job on it of departments past their
// quota there, with borrow) has that work moved off it, by the same rules and scoring as any
// move (reclaim), so the lender's work takes it.

// lendersFirst orders the groups so that those of departments within their quota in every
// pool they fit come first, each side in the order given.
func (p *pass) lendersFirst(groups []*group) []*group {
	out := make([]*group, 0, len(groups))
	var past []*group
	for _, g := range groups {
		if p.pastQuota(g) {
			past = append(past, g)
		} else {
			out = append(out, g)
		}
	}
	return append(out, past...)
}

// ownersOf lists the groups by department, in the order given (the order they are placed
// in), for the departments with a quota in some pool: nil when there are none.
func (p *pass) ownersOf(groups []*group) map[string][]*group {
	if len(p.pol.Quotas) == 0 {
		return nil
	}
	var out map[string][]*group
	for _, g := range groups {
		if g.dept == "" {
			continue
		}
		if out == nil {
			out = map[string][]*group{}
		}
		out[g.dept] = append(out[g.dept], g)
	}
	return out
}

// yields reports whether group g leaves server i, of tier t, to its owner: the server is
// labelled with another department with a quota in its pool, whose work not yet placed
// (after g in the order) may take it, and has the pool for home (light work of a department
// owning GPU servers is not owed their room before others' GPU work: its home is a CPU pool).
// So on each server its owner's work comes first, whatever order the groups sort in (both
// departments may be past their quota: the owner by its own server, coming up for the
// borrower); g is marked to take what the owner leaves.
func (p *pass) yields(g *group, i int, t tier) bool {
	s := &p.servers[i]
	owner := s.node.Department
	if p.owners == nil || owner == "" || owner == g.dept {
		return false
	}
	if _, ok := s.pool.quotas[owner]; !ok {
		return false
	}
	waiting := p.owners[owner]
	for len(waiting) > 0 && waiting[0].filled {
		waiting = waiting[1:] // placed in order: those placed come first
	}
	p.owners[owner] = waiting
	for _, o := range waiting {
		if o.slots > 0 && o.home == s.pool && t <= o.lastTier() && p.mayTake(o, i) {
			g.yielded = true
			return true
		}
	}
	return false
}

// mayTake reports whether group g may be placed on server i: its pool fits the group, the
// server is in one of its regions and one it may use, with room for one of its jobs.
func (p *pass) mayTake(g *group, i int) bool {
	s := &p.servers[i]
	return slices.Contains(g.pools, s.pool) && (g.regions == nil || slices.Contains(g.regions, s.node.Region)) &&
		g.nd.allows(s.node.Name) && p.state[i].free.holds(g.shape) > 0
}

// pastQuota reports whether the group's department holds its whole quota in a pool it fits.
func (p *pass) pastQuota(g *group) bool {
	for _, pl := range g.pools {
		if p.atQuota(pl, g.dept) {
			return true
		}
	}
	return false
}

// atQuota reports whether dept holds its whole quota in pl (false without one there).
func (p *pass) atQuota(pl *pool, dept string) bool {
	q, ok := pl.quotas[dept]
	// held bounds holds from above: the servers lent out are counted only where it may matter
	return ok && pl.held[dept] >= q.MaxServers && p.holds(pl, dept) >= q.MaxServers
}

// holds is how many servers of pl dept holds toward its quota: those it holds (hold), less its
// own lent out (lentOut), which hold none of its work.
func (p *pass) holds(pl *pool, dept string) int { return pl.held[dept] - p.lentOut(pl, dept) }

// closedTo reports whether dept's quota in pl lets it wake no server there, ever: none, and
// no borrowing.
func (pl *pool) closedTo(dept string) bool {
	q, ok := pl.quotas[dept]
	return ok && q.MaxServers == 0 && !q.Borrow
}

// quotaRefuses reports whether waking a server of pl for the jobs moved off node n would take
// a department (jobDept) past its quota there: quotas cap waking, for moved work too. One
// that may borrow may take it: rebalancing runs after every department's waiting work was
// served.
func (p *pass) quotaRefuses(pl *pool, n *fleet.Node, run []fleet.Job) bool {
	for _, j := range run {
		dept := jobDept(j, n)
		if q, ok := pl.quotas[dept]; ok && !q.Borrow && p.atQuota(pl, dept) {
			return true
		}
	}
	return false
}

// reclaim moves borrowed work off servers for waiting work of departments below their quota.
func (p *pass) reclaim(mv *mover) {
	if !p.cfg.Jobs.MovesOffServersInService() {
		return // each such move would fail, and spend the move budget
	}
	for _, g := range p.waiting {
		for _, pl := range g.pools {
			q, ok := pl.quotas[g.dept]
			for ok && g.slots > 0 && p.holds(pl, g.dept) < q.MaxServers && mv.left > 0 {
				i, found := p.borrowed(pl, g.dept)
				if !found {
					break
				}
				// A refusal is the server's skip: the next call looks at another server.
				p.reclaimFrom(mv, g, pl, i)
			}
		}
	}
}

// lentOut counts dept's own servers of pl lent out: labelled with it (so counted toward its
// quota, see hold), powered, and running only other departments' work, not yet taken back
// this pass. They hold none of its work, so its quota does not count them as used.
func (p *pass) lentOut(pl *pool, dept string) int {
	k := lentKey{pl, dept}
	if c, ok := p.lent[k]; ok && c.actions == len(p.actions) {
		return c.n // an action is the one change that counts (isAction)
	}
	n := 0
	for _, i := range pl.members {
		node := p.servers[i].node
		if node.Department == dept && powered(node.State) && !p.state[i].isAction && othersOnly(node, dept) {
			n++
		}
	}
	if p.lent == nil {
		p.lent = map[lentKey]lentCount{}
	}
	p.lent[k] = lentCount{len(p.actions), n}
	return n
}

// lentKey is a department's servers of a pool; lentCount their count lent out, with the
// actions there were when it was counted.
type lentKey struct {
	pool *pool
	dept string
}

type lentCount struct{ actions, n int }

// othersOnly reports whether every job on the node is listed and of a department other than
// dept (jobDept), and there is one.
func othersOnly(n *fleet.Node, dept string) bool {
	run := n.Jobs.Running
	if len(run) == 0 || len(run) != n.Jobs.Jobs {
		return false
	}
	for _, j := range run {
		if jobDept(j, n) == dept {
			return false
		}
	}
	return true
}

// jobDept is the department whose work job j, running on node n, is: its own, else n's
// owner's, as the books charge it (an unlabelled server's: nobody's). The quota give-back
// (othersOnly) and where moved work goes (movedDept, roomFor) read it alike, so a job without
// a department is never the lender's for one and a stranger's for the other.
func jobDept(j fleet.Job, n *fleet.Node) string {
	return cmp.Or(j.Department, n.Department)
}

// borrowed is a server of pl, left on for its work, whose every job belongs to a department
// other than dept that runs work on more of pl's servers than its quota there, with borrow,
// and is not labelled with one of those departments (a department's own server is not
// borrowed). dept's own servers come first: they go back to their owner.
func (p *pass) borrowed(pl *pool, dept string) (int, bool) {
	servers := map[string]int{}
	for _, i := range pl.members {
		seen := map[string]bool{}
		for _, j := range p.servers[i].node.Jobs.Running {
			if !seen[j.Department] {
				seen[j.Department] = true
				servers[j.Department]++
			}
		}
	}
	found, ok := 0, false
	for _, i := range pl.members {
		node := p.servers[i].node
		if !p.leftAllocated(i) || !othersOnly(node, dept) {
			continue
		}
		lent := true
		for _, j := range node.Jobs.Running {
			q, quota := pl.quotas[j.Department]
			if !quota || !q.Borrow || servers[j.Department] <= q.MaxServers || node.Department == j.Department {
				lent = false
				break
			}
		}
		switch {
		case lent && node.Department == dept:
			return i, true
		case lent && !ok:
			found, ok = i, true
		}
	}
	return found, ok
}

// reclaimFrom moves the borrowed work off server i for group g, if the rules allow: the jobs
// movable, the saving (the server's price over the lender's expected run) at least k times the
// work lost, the move budget. The server stays in service, for the lender's work; a server
// refused gets the rule as its skip.
func (p *pass) reclaimFrom(mv *mover, g *group, pl *pool, i int) {
	s := &p.servers[i]
	run := s.node.Jobs.Running
	if reason, detail := p.jobsMovable(run); reason != "" {
		p.skip(i, reason, detail)
		return
	}
	lost := p.lostWork(i, run)
	gain := p.expectedRun(g)
	saving := pl.cost * gain.Hours()
	k := p.pol.Moves.MinSavingFactor
	numbers := fmt.Sprintf("gives department %s its quota back for %s (%.2f), loses %.2f of work; k=%g", g.dept, gain, saving, lost, k)
	if saving < k*lost {
		p.skip(i, fleet.SkipMoveSaving, numbers)
		return
	}
	plan := &fleet.MovePlan{Exclude: []string{s.node.Name}, Saving: saving, Lost: lost}
	for _, j := range run {
		plan.Jobs = append(plan.Jobs, j.ID)
	}
	p.act(i, fleet.Move, fleet.ReasonQuota, fmt.Sprintf("%d borrowed jobs off the server: %s", len(run), numbers))
	p.actions[len(p.actions)-1].Move = plan
	mv.left--
	p.hold(pl, i, g.dept)
	g.slots -= min(profileCapacity(pl.cfg.Profile).holds(g.shape), g.perServer(), g.slots)
}
