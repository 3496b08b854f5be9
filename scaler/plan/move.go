package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rotahq/rota/scaler/fleet"
)

// Rebalancing: a server whose every job could run elsewhere is emptied by moving them (the
// job manager requeues them, away from the server or from its whole, dearer pool), then
// drained and powered off like any other. A move is made only when it pays:
//
//	saving = server's price x its expected remaining time  -  what the destinations add
//	lost   = sum over its jobs of (run since checkpoint + restart cost) x the job's share of the server's price
//	move when saving >= k x lost (policy.moves.min_saving_factor)
//
// The expected remaining time is the longest of its jobs' (from each job's time limit, else
// policy.moves.estimate). A destination already running work, or coming up, adds nothing; an
// empty one (which would otherwise power off) adds its price for the time. Never a job that is
// not requeueable, marked do-not-disrupt, spans servers, or has less than policy.moves.tail
// left; never more than policy.moves.max_moves per window; and every move is held to the same
// caps as a drain (dwell times, cycles, floors, spares, disruption budget, concurrency). Each
// refusal of a server whose work had room elsewhere is a skip naming the job and the rule.

// mover is one pass's rebalancing: the destinations and the move budget left.
type mover struct {
	left int // moves left in the window
	dest []int
}

// rebalance plans the moves of this pass. It runs last, emptiness before consolidation: after
// demand has taken the room it needs and shrink has drained the idle servers, on the servers
// shrink left because work runs on them.
func (p *pass) rebalance() {
	m := &p.pol.Moves
	if !m.Enabled || !p.snap.JobsKnown || p.noJobManager {
		return
	}
	mv := &mover{left: m.MaxMoves - p.recentMoves()}
	var cands []int
	for i := range p.servers {
		s := &p.servers[i]
		if s.node.State != fleet.StateOn || s.pool == nil || !p.takesWork(s.node) || p.state[i].isAction {
			continue
		}
		if s.node.Jobs.Allocated() && p.leftAllocated(i) && s.pool.saves && powerKnown(s.node) {
			cands = append(cands, i)
		}
		mv.addDest(p, i)
	}
	for _, pl := range p.pools {
		for _, rb := range pl.bins {
			for _, i := range rb.tiers[tierComing] {
				mv.addDest(p, i)
			}
		}
	}
	// Dearest first, then the least used (cheapest to empty), then by name.
	slices.SortFunc(cands, func(a, b int) int {
		sa, sb := &p.servers[a], &p.servers[b]
		return cmp.Or(cmp.Compare(sb.pool.cost, sa.pool.cost), cmp.Compare(sa.node.Jobs.CPUs, sb.node.Jobs.CPUs),
			cmp.Compare(sa.node.Name, sb.node.Name))
	})
	// A department below its quota gets its servers back first: its work waits now.
	p.reclaim(mv)
	for _, i := range cands {
		if p.leftAllocated(i) {
			p.tryMove(mv, i)
		}
	}
}

// addDest lists server i as a destination for moved work, unless it has no CPU free: every
// job takes one at least, and what the servers have free only shrinks as the pass plans its
// moves, so it would hold none. (With the fleet full, each move candidate's jobs were weighed
// against every other server: a pass over 1,024 busy servers walked a million pairs.)
func (mv *mover) addDest(p *pass, i int) {
	if p.state[i].free.cpus > 0 {
		mv.dest = append(mv.dest, i)
	}
}

// leftAllocated reports whether shrink left server i on because work runs on it: a move
// candidate, whose skip a move (or a refusal) replaces.
func (p *pass) leftAllocated(i int) bool {
	s := &p.state[i]
	return s.done && !s.isAction && s.allocated
}

// recentMoves counts the moves made within policy.moves.window.
func (p *pass) recentMoves() int {
	since := p.now.Add(-time.Duration(p.pol.Moves.Window))
	n := 0
	for _, t := range p.snap.History.Moves {
		if t.After(since) {
			n++
		}
	}
	return n
}

// placement is where one job of a server would go.
type placement struct {
	job  *fleet.Job
	dest int
}

// tryMove moves server i's work if it has room elsewhere and every rule allows it.
func (p *pass) tryMove(mv *mover, i int) {
	s := &p.servers[i]
	run := s.node.Jobs.Running
	if len(run) == 0 || len(run) != s.node.Jobs.Jobs {
		return // the job manager does not list every job on it: nothing to weigh
	}
	if reason, detail := p.jobsMovable(run); reason != "" {
		// A refusal is told only where the work had somewhere to go.
		if p.roomFor(mv, i, run) != nil {
			p.skip(i, reason, detail)
		} else if _, places := p.roomToWake(i, run); places != nil {
			p.skip(i, reason, detail)
		}
		return
	}
	places := p.roomFor(mv, i, run)
	wake := -1
	if places == nil {
		if wake, places = p.roomToWake(i, run); places == nil {
			return // nowhere to go: shrink says why it stays (allocated)
		}
	}
	// Freed, the server becomes one more warm server of its pool.
	saving, lost, remaining, extra := p.weigh(i, s.pool.warm+1-s.pool.offs, run, places, wake)
	k := p.pol.Moves.MinSavingFactor
	numbers := fmt.Sprintf("saves %.2f over %s (destinations add %.2f), loses %.2f of work; k=%g", saving, remaining.Round(time.Minute), extra, lost, k)
	switch {
	case saving < k*lost || saving <= 0:
		p.skip(i, fleet.SkipMoveSaving, numbers)
		return
	case mv.left <= 0:
		p.skip(i, fleet.SkipMoveBudget, fmt.Sprintf("%d moves in the last %s, budget %d", p.recentMoves(), time.Duration(p.pol.Moves.Window), p.pol.Moves.MaxMoves))
		return
	}
	// The caps see the server as the empty one it becomes: warm spares and the break-even
	// price hold it the same.
	s.pool.warm++
	reason, detail := p.scaleDownCaps(i)
	s.pool.warm--
	if reason != "" {
		p.skip(i, reason, detail)
		return
	}
	if wake >= 0 {
		// The room is on a server of a cheaper pool that is off: wake it; the move follows
		// once it is up.
		p.powerOn(wake, fleet.ReasonRebalance, "to take the work of "+s.node.Name+": "+numbers)
		for _, j := range run {
			p.hold(p.servers[wake].pool, wake, jobDept(j, s.node))
		}
		mv.dest = append(mv.dest, wake)
		p.skip(i, fleet.SkipInFlight, "its work waits for "+p.servers[wake].node.Name+" to come up")
		return
	}
	for _, pl := range places {
		if d := &p.servers[pl.dest]; d.node.State != fleet.StateOn {
			p.skip(i, fleet.SkipInFlight, "its work waits for "+d.node.Name+" to come up")
			return
		}
	}
	mv.left--
	p.commitMove(i, run, places, saving, lost, numbers)
}

// roomToWake finds, when no server on or coming has room for server i's jobs, one server of a
// cheaper pool that is off and could hold them all: the cheapest pool first, and in it the
// server waiting work of the jobs' department would wake (firstFor, see movedDept). wake is -1
// when there is none.
func (p *pass) roomToWake(i int, run []fleet.Job) (wake int, places []placement) {
	src := &p.servers[i]
	for _, pl := range p.pools {
		if pl.cost >= src.pool.cost {
			break
		}
		if pl.powered >= pl.ceiling || p.quotaRefuses(pl, src.node, run) {
			continue
		}
		room := profileCapacity(pl.cfg.Profile)
		fits := true
		nds := make([]needs, len(run))
		for k := range run {
			j := &run[k]
			nds[k] = readNeeds(j.Partition, j.Needs)
			sh := p.jobShape(j)
			if !nds[k].offeredBy(&pl.cfg.Profile) || room.holds(sh) == 0 {
				fits = false
				break
			}
			room.take(sh, 1)
		}
		if !fits {
			continue
		}
		d, ok := pl.wake.firstFor(p, "", movedDept(src.node, run), func(d int) bool {
			return !slices.ContainsFunc(nds, func(nd needs) bool { return !nd.allows(p.servers[d].node.Name) })
		})
		if !ok {
			continue
		}
		for k := range run {
			places = append(places, placement{job: &run[k], dest: d})
		}
		return d, places
	}
	return -1, nil
}

// movedDept is the department a server is woken for when it takes the jobs moved off node n:
// theirs (jobDept) when they all share one; else none, so every labelled server counts as
// another's (woken for a mix, it would be lent to whichever of them is not its owner), as for
// waiting work without one.
func movedDept(n *fleet.Node, run []fleet.Job) string {
	if len(run) == 0 {
		return ""
	}
	dept := jobDept(run[0], n)
	if slices.ContainsFunc(run, func(j fleet.Job) bool { return jobDept(j, n) != dept }) {
		return ""
	}
	return dept
}

// jobsMovable says which of a server's jobs forbids moving them all ("" when none does).
func (p *pass) jobsMovable(run []fleet.Job) (fleet.Reason, string) {
	tail := time.Duration(p.pol.Moves.Tail)
	for _, j := range run {
		switch left := p.pol.Moves.Remaining(j.Started, j.TimeLimit, p.now); {
		case !j.Requeueable && j.Held != "":
			return fleet.SkipNotRequeueable, "job " + j.ID + " is not requeueable: " + j.Held
		case !j.Requeueable:
			return fleet.SkipNotRequeueable, "job " + j.ID + " is not requeueable"
		case j.DoNotDisrupt:
			return fleet.SkipDoNotDisrupt, "job " + j.ID + " is marked do-not-disrupt"
		case j.Servers > 1:
			return fleet.SkipNotRequeueable, fmt.Sprintf("job %s spans %d servers", j.ID, j.Servers)
		case left < tail:
			return fleet.SkipJobTail, fmt.Sprintf("job %s has %s left, tail %s", j.ID, left.Round(time.Minute), tail)
		}
	}
	return "", ""
}

// roomFor finds a place for every job of server i on servers that stay on (or are coming),
// best fit, in pools no dearer than its own: servers already running work first (they add
// nothing), then empty ones, cheapest pool first, and the job's own department's and
// unlabelled servers before another's (betterDest). Nil when some job has no place. Nothing
// is taken: commitMove takes it.
func (p *pass) roomFor(mv *mover, i int, run []fleet.Job) []placement {
	src := &p.servers[i]
	free := map[int]capacity{}
	out := make([]placement, 0, len(run))
	jobs := make([]int, len(run))
	for k := range jobs {
		jobs[k] = k
	}
	// Biggest first: first-fit decreasing.
	slices.SortFunc(jobs, func(a, b int) int {
		return cmp.Or(cmp.Compare(run[b].GPUs, run[a].GPUs), cmp.Compare(run[b].CPUs, run[a].CPUs), cmp.Compare(run[a].ID, run[b].ID))
	})
	for _, k := range jobs {
		j := &run[k]
		sh := p.jobShape(j)
		nd := readNeeds(j.Partition, j.Needs)
		best := -1
		for _, d := range mv.dest {
			ds := &p.servers[d]
			if d == i || ds.pool.cost > src.pool.cost || !nd.allows(ds.node.Name) || !nd.offeredBy(&ds.pool.cfg.Profile) {
				continue
			}
			room, ok := free[d]
			if !ok {
				room = p.state[d].free
			}
			if room.holds(sh) == 0 {
				continue
			}
			if best < 0 || p.betterDest(jobDept(*j, src.node), d, best, free) {
				best = d
			}
		}
		if best < 0 {
			return nil
		}
		room, ok := free[best]
		if !ok {
			room = p.state[best].free
		}
		room.take(sh, 1)
		free[best] = room
		out = append(out, placement{job: j, dest: best})
	}
	return out
}

// betterDest orders destinations for a job of department dept: running work (adds nothing)
// before empty, cheaper pool, then whose the server is as for a wake (firstFor): dept's own
// and unlabelled servers before another department's, which the job would be lent and its
// owner's work find taken; then least room left (best fit), then by name.
func (p *pass) betterDest(dept string, a, b int, free map[int]capacity) bool {
	sa, sb := &p.servers[a], &p.servers[b]
	room := func(d int) int {
		if c, ok := free[d]; ok {
			return c.cpus
		}
		return p.state[d].free.cpus
	}
	return cmp.Or(
		cmp.Compare(boolInt(!p.staysOn(a, free)), boolInt(!p.staysOn(b, free))),
		cmp.Compare(sa.pool.cost, sb.pool.cost),
		cmp.Compare(boolInt(p.othersServer(dept, a)), boolInt(p.othersServer(dept, b))),
		cmp.Compare(room(a), room(b)),
		cmp.Compare(sa.node.Name, sb.node.Name),
	) < 0
}

// staysOn reports whether destination d stays on without the moved work: it is held on
// (heldOn), or takes some of this move already.
func (p *pass) staysOn(d int, taken map[int]capacity) bool {
	_, takes := taken[d]
	return takes || p.heldOn(d)
}

// heldOn reports whether server d stays on whatever is moved to it: it runs work, is coming up
// for other work, or its pool's floor keeps it on. Moving work to it adds nothing.
func (p *pass) heldOn(d int) bool {
	s := &p.servers[d]
	return s.node.Jobs.Allocated() || s.node.State != fleet.StateOn || s.pool.up <= s.pool.floor
}

// weigh prices a move of server i's jobs to places: what it saves (the server off while its
// pool does not need it back, as the level-th warm server: offSaving), what work it loses,
// over how long, and what the destinations add. wake, when not -1, is a destination that is
// off and must boot first: it adds its price for its boot too.
func (p *pass) weigh(i, level int, run []fleet.Job, places []placement, wake int) (saving, lost float64, remaining time.Duration, extra float64) {
	m := &p.pol.Moves
	for _, j := range run {
		remaining = max(remaining, m.Remaining(j.Started, j.TimeLimit, p.now))
	}
	empty := map[int]time.Duration{}
	for _, pl := range places {
		if pl.dest == wake || !p.heldOn(pl.dest) {
			empty[pl.dest] = max(empty[pl.dest], m.Remaining(pl.job.Started, pl.job.TimeLimit, p.now))
		}
	}
	for d, t := range empty {
		dp := p.servers[d].pool
		if d == wake {
			t += time.Duration(dp.cfg.BootTimeout)
		}
		extra += dp.cost * t.Hours()
	}
	saving = p.offSaving(i, level, remaining) - extra
	return saving, p.lostWork(i, run), remaining, extra
}

// lostWork is what moving server i's jobs loses: each job's run since its last checkpoint (all
// of it when none is known) and the restart cost, at its share of the server's price.
func (p *pass) lostWork(i int, run []fleet.Job) (lost float64) {
	s := &p.servers[i]
	for _, j := range run {
		since := j.Started
		if j.Checkpoint.After(since) {
			since = j.Checkpoint
		}
		lostRun := max(p.now.Sub(since), 0) + time.Duration(p.pol.Moves.RestartCost)
		lost += lostRun.Hours() * s.pool.cost * share(s.pool.cfg.Profile.CPUCores, s.pool.cfg.Profile.GPUs, j)
	}
	return lost
}

// share is the job's share of a server of cores CPUs and gpus GPUs: by GPUs where it holds
// any, else by CPUs.
func share(cores, gpus int, j fleet.Job) float64 {
	if j.GPUs > 0 && gpus > 0 {
		return min(float64(j.GPUs)/float64(gpus), 1)
	}
	return min(float64(max(j.CPUs, 1))/float64(max(cores, 1)), 1)
}

// commitMove plans the move of server i: the action (draining it, a scale-down like a
// drain), the room taken on the destinations, and a skip on each destination not yet
// decided, so no later step drains it this pass.
func (p *pass) commitMove(i int, run []fleet.Job, places []placement, saving, lost float64, numbers string) {
	s := &p.servers[i]
	plan := &fleet.MovePlan{Drain: true, Saving: saving, Lost: lost}
	cheaper := true
	var dests []string
	for _, pl := range places {
		d := &p.servers[pl.dest]
		p.state[pl.dest].free.take(p.jobShape(pl.job), 1)
		cheaper = cheaper && d.pool.cost < s.pool.cost
		if !slices.Contains(dests, d.node.Name) {
			dests = append(dests, d.node.Name)
		}
	}
	for _, j := range run {
		plan.Jobs = append(plan.Jobs, j.ID)
	}
	away := "the server"
	if cheaper {
		// Away from the dear tier: the job manager may not start it on another dear server.
		for _, m := range s.pool.members {
			plan.Exclude = append(plan.Exclude, p.servers[m].node.Name)
		}
		away = "pool " + s.pool.name
	} else {
		plan.Exclude = []string{s.node.Name}
	}
	p.act(i, fleet.Move, fleet.ReasonRebalance, fmt.Sprintf("%d jobs to %s, away from %s: %s", len(run), strings.Join(dests, ", "), away, numbers))
	p.actions[len(p.actions)-1].Move = plan
	s.pool.up--
	s.pool.warm++ // empty once moved, and on its way off
	s.pool.offs++
	p.budget.drained()
	for _, pl := range places {
		if !p.state[pl.dest].done || p.leftAllocated(pl.dest) {
			p.skip(pl.dest, fleet.SkipDemandWaits, "takes work moved from "+s.node.Name)
		}
	}
}
