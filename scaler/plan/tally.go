package plan

import (
	"slices"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// tally is what a pass counts over every node before its steps: each pool's counts, the
// budget's, and the servers On and Draining. A Planner keeps it from pass to pass with what
// each node added to it, so a pass told which nodes changed (Planner.ActionsChanged) counts
// those again and no other.
type tally struct {
	// shares is what each node added, by index; on and draining are the servers On and
	// Draining, by index.
	shares       []nodeShare
	on, draining []int
	// inFlight and drainingN count the nodes in flight and Draining (the budget's counts).
	inFlight, drainingN int
	// nodes and cfg are the snapshot's nodes and the config the tally was counted for (nil:
	// not counted by a Planner, or its layout changed since).
	nodes []fleet.Node
	cfg   *config.Config
}

// nodeShare is what one node adds to the tally: its state, whether work is allocated on it, its
// department, the other departments with a quota in its pool whose jobs run on it (runs), and
// its pool (nil: none in the config).
type nodeShare struct {
	state     fleet.State
	allocated bool
	dept      string
	runs      []string
	pool      *pool
}

// counts are a pool's counts over its members (see pool: powered, up, busy, held); busyOn
// counts the busy ones that are On (see countWarm).
type counts struct {
	powered, up, busy, busyOn int
	held                      map[string]int
}

// clear empties the tally for a pass counting n nodes afresh; each pool's counts are emptied
// by pool.reset.
func (t *tally) clear(n int) {
	t.shares = slices.Grow(t.shares[:0], n)[:n]
	clear(t.shares)
	t.on, t.draining = t.on[:0], t.draining[:0]
	t.inFlight, t.drainingN = 0, 0
	t.nodes, t.cfg = nil, nil
}

// recount takes node i out of the tally, as it was counted, and counts it as n, of pool pl.
func (t *tally) recount(i int, n *fleet.Node, pl *pool) {
	old := &t.shares[i]
	t.add(old, -1)
	was := old.state
	*old = nodeShare{state: n.State, allocated: n.Jobs.Allocated(), dept: n.Department, runs: runners(n, pl), pool: pl}
	t.add(old, 1)
	if n.State != was {
		t.on = listed(t.on, i, n.State == fleet.StateOn, nil)
		t.draining = listed(t.draining, i, n.State == fleet.StateDraining, nil)
	}
}

// add adds d times a node's nodeShare (d is 1 or -1); the zero nodeShare adds nothing.
func (t *tally) add(sh *nodeShare, d int) {
	if sh.state.InFlight() {
		t.inFlight += d
	}
	if sh.state == fleet.StateDraining {
		t.drainingN += d
	}
	if sh.pool != nil {
		sh.pool.tally.add(sh, d)
	}
}

// add adds d times a member's nodeShare.
func (c *counts) add(sh *nodeShare, d int) {
	if !powered(sh.state) {
		return
	}
	c.powered += d
	if sh.state != fleet.StateDraining {
		c.up += d
		if sh.allocated {
			c.busy += d
			if sh.state == fleet.StateOn {
				c.busyOn += d
			}
		}
	}
	if sh.dept != "" {
		c.hold(sh.dept, d)
	}
	for _, dept := range sh.runs {
		c.hold(dept, d)
	}
}

// hold adds d servers to what dept holds.
func (c *counts) hold(dept string, d int) {
	if c.held[dept] += d; c.held[dept] == 0 {
		delete(c.held, dept)
	}
}

// runners are the departments with a quota in pl, other than n's own, whose jobs run on n: a
// server its work holds counts toward its quota, whoever's it is.
func runners(n *fleet.Node, pl *pool) []string {
	if pl == nil || len(pl.quotas) == 0 {
		return nil
	}
	var out []string
	for _, j := range n.Jobs.Running {
		if _, ok := pl.quotas[j.Department]; ok && j.Department != n.Department && !slices.Contains(out, j.Department) {
			out = append(out, j.Department)
		}
	}
	return out
}

// listed puts i into list when in, and takes it out when not. The list is sorted by rank (of
// each index; nil: by index), and no two of its indices have the same rank.
func listed(list []int, i int, in bool, rank []int) []int {
	var k int
	var found bool
	if rank == nil {
		k, found = slices.BinarySearch(list, i)
	} else {
		// By hand: slices.BinarySearchFunc calls its comparison through a pointer at each
		// probe, a third of the screening of a replay's changed nodes.
		r := rank[i]
		lo, hi := 0, len(list)
		for lo < hi {
			if h := int(uint(lo+hi) >> 1); rank[list[h]] < r {
				lo = h + 1
			} else {
				hi = h
			}
		}
		k, found = lo, lo < len(list) && rank[list[lo]] == r
	}
	switch {
	case in && !found:
		return slices.Insert(list, k, i)
	case !in && found:
		return slices.Delete(list, k, k+1)
	}
	return list
}

// follows reports whether the tally may be brought up to date from the nodes listed in
// changed alone: it was counted for the same nodes (the same slice, rewritten in place) and
// config, and none of changed moved to another pool or region or was renamed (the layout the
// tally's pools come from).
func (t *tally) follows(snap *fleet.Snapshot, cfg *config.Config, layout []placeKey, changed []int) bool {
	if t.cfg != cfg || len(snap.Nodes) == 0 || len(snap.Nodes) != len(t.nodes) || &snap.Nodes[0] != &t.nodes[0] {
		return false
	}
	for _, i := range changed {
		if i < 0 || i >= len(layout) || !layout[i].of(&snap.Nodes[i]) {
			return false
		}
	}
	return true
}
