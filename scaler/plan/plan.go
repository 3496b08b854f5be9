package plan

import (
	"cmp"
	"slices"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// Plan decides one pass. It never fails: what it cannot know, it does not act on. It reads
// snap and cfg and modifies neither, keeps nothing between calls and reads no clock but now,
// so concurrent calls are safe and the same input always gives the same Decision. Every node of
// snap gets exactly one entry in the Decision, an Action or a Skip, listed by node name.
func Plan(snap fleet.Snapshot, cfg *config.Config, now time.Time) fleet.Decision {
	p := newPass(snap, cfg, now)
	if snap.Paused {
		// Safety invariant 5: a paused scaler acts on nothing, not even to hold a floor.
		p.skipAll(fleet.SkipPaused, "scaler paused by operator")
		return p.decision()
	}
	p.steps()
	p.explainRest()
	return p.decision()
}

// Actions is Plan's actions alone, by node name: the same decision without the skips and
// without details, for a caller that plans often and only acts (the replay). It is as pure
// as Plan.
func Actions(snap fleet.Snapshot, cfg *config.Config, now time.Time) []fleet.Action {
	var pn Planner
	return slices.Clone(pn.Actions(snap, cfg, now))
}

// Planner plans one pass after another as Actions does, reusing its memory between passes: for
// a caller that plans often and only acts (the replay). What it returns is what Actions
// returns for the same input, whatever came before, but with no Detail (the words cost more
// than some passes; a caller that shows them plans with Plan); the slice is valid until the
// next call. It keeps references to the last snapshot's nodes. The zero Planner is ready for
// use; it is not safe for concurrent use.
type Planner struct {
	p pass
}

// Actions is Actions without details, reusing the Planner's memory.
func (pn *Planner) Actions(snap fleet.Snapshot, cfg *config.Config, now time.Time) []fleet.Action {
	return pn.ActionsChanged(snap, cfg, now, nil)
}

// ActionsChanged is Actions for a snapshot that is the last call's changed in place: its
// nodes the same slice, rewritten only at the indices listed in changed, Telemetry aside
// (which may change at any node), and cfg the same config, unchanged. The nodes' counts
// are then brought up to date from the listed nodes alone rather than counted over every
// node. A snapshot that is not (another slice or length, another config, a node listed that
// moved to another pool or region), the first call, and a nil changed are planned as
// Actions plans them. A node changed but not listed makes the counts wrong: the caller
// must list every change.
func (pn *Planner) ActionsChanged(snap fleet.Snapshot, cfg *config.Config, now time.Time, changed []int) []fleet.Action {
	p := &pn.p
	if snap.Paused {
		p.mem.tally.cfg = nil // changes not counted: the next call counts afresh
		p.snap = nil          // no pass to vouch for
		return nil
	}
	p.quiet = true
	p.reset(snap, cfg, now, changed)
	p.steps()
	p.mem.asked = p.asked
	slices.SortFunc(p.actions, func(a, b fleet.Action) int { return cmp.Compare(a.Node, b.Node) })
	return p.actions
}

// steps are a pass's ordered steps, up to the actions.
func (p *pass) steps() {
	p.screen()
	p.raiseFloors()
	p.placeDemand()
	p.keepWarm()
	p.settleDraining()
	p.shrink()
	p.rebalance()
}

// pass is one planning pass: the input, the index built from it, and the outcome so far.
type pass struct {
	// input is the snapshot; snap points to it.
	input fleet.Snapshot
	snap  *fleet.Snapshot
	cfg   *config.Config
	pol   *config.Policy
	now   time.Time
	// offFrom is now less node.min_off: a server powered off after it is within min_off.
	offFrom time.Time
	// quiet: only the actions are wanted (Planner), so skips are not listed and no detail is
	// worded, an action's or a skip's (see say).
	quiet bool
	// mem is memory kept from the pass before (Planner), reused; changed are the nodes a
	// Planner was told changed, screened again alone when screenChanged (see screen).
	mem           scratch
	changed       []int
	screenChanged bool
	// noJobManager is the snapshot's NoJobManager.
	noJobManager bool

	// servers are the snapshot's nodes, by index, and state what this pass worked out for
	// each, kept apart so that a pass empties it in one block.
	servers []server
	state   []serverPass
	// on, draining and strays are the servers On, Draining and in no pool of the config,
	// by index.
	on, draining, strays []int
	pools                []*pool // cheapest first, then by name
	byName               map[string]*pool
	budget               budget
	// holders records which server counted toward which department's quota (see hold); lent
	// the count of lentOut, kept while no action was added.
	holders map[holdKey]bool
	lent    map[lentKey]lentCount
	// waiting is the demand's groups, as placement left them (what quotas take back for);
	// oneRegion the regions of work that may run in one region only, shared by its groups.
	waiting   []*group
	oneRegion map[string][]string
	// owners are the groups by department while owners' work comes first on their own
	// servers (see yields); nil otherwise.
	owners map[string][]*group

	actions []fleet.Action
	skips   []fleet.Skip
	// asked are the break-even verdicts the pass asked for, in order (see Vouch).
	asked []asked
}

// server is one node as the pass sees it.
type server struct {
	node *fleet.Node
	pool *pool // nil: not in the config
}

// serverPass is what a pass works out for a server, empty at its start.
type serverPass struct {
	// free is the capacity left for waiting work (On, coming, resumable or woken servers);
	// placed is set once waiting work was placed on it (it is then kept on).
	free   capacity
	placed bool
	// done is set once the server has its one action or skip; out is its index in the
	// pass's actions (isAction) or skips (none in a quiet pass); allocated: its skip is
	// fleet.SkipAllocated (see leftAllocated).
	done      bool
	isAction  bool
	allocated bool
	out       int
	// idleRank is an empty On server's rank among its pool's empty On servers in the job
	// manager's placement order (by name): 1 takes the next job (see rankIdle).
	idleRank int
}

func (p *pass) act(i int, kind fleet.Kind, reason fleet.Reason, detail string) {
	if p.quiet {
		detail = "" // worded by a step that did not ask say: not kept either
	}
	s, n := &p.state[i], p.servers[i].node
	s.done, s.isAction, s.out = true, true, len(p.actions)
	p.actions = append(p.actions, fleet.Action{Kind: kind, Node: n.Name, Pool: n.Pool, Reason: reason, Detail: detail})
}

// skip gives server i its skip. A server already skipped (a move candidate shrink left
// allocated) gets the new one instead.
func (p *pass) skip(i int, reason fleet.Reason, detail string) {
	s := &p.state[i]
	s.done, s.allocated = true, reason == fleet.SkipAllocated
	if p.quiet {
		return
	}
	s.out = len(p.skips)
	n := p.servers[i].node
	p.skips = append(p.skips, fleet.Skip{Node: n.Name, Pool: n.Pool, Reason: reason, Detail: detail})
}

// say is a detail, worded only when details are kept (not in a quiet pass).
func (p *pass) say(detail func() string) string {
	if p.quiet {
		return ""
	}
	return detail()
}

func (p *pass) skipAll(reason fleet.Reason, detail string) {
	for i := range p.servers {
		p.skip(i, reason, detail)
	}
}

// decision lists the outcome by node name, so the result does not depend on input order.
func (p *pass) decision() fleet.Decision {
	d := fleet.Decision{
		Actions: make([]fleet.Action, 0, len(p.actions)),
		Skips:   make([]fleet.Skip, 0, len(p.skips)),
		Desired: make(map[string]int, len(p.pools)),
	}
	for _, i := range p.nameOrder() {
		if s := &p.state[i]; s.isAction {
			d.Actions = append(d.Actions, p.actions[s.out])
		} else {
			d.Skips = append(d.Skips, p.skips[s.out])
		}
	}
	for _, pl := range p.pools {
		d.Desired[pl.name] = pl.up
	}
	return d
}
