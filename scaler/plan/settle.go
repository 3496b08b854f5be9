package plan

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/rotahq/rota/scaler/fleet"
)

// settleDraining finishes or undoes the drains rota started: a Draining server the job manager
// shows drained and empty is powered off (within the caps); one whose drain ran past
// policy.drain.timeout since it began is resumed, so no server is left drained forever.
// Servers a person drained are never resumed nor powered off by rota.
func (p *pass) settleDraining() {
	var draining []int
	for _, i := range p.draining {
		if !p.state[i].done {
			draining = append(draining, i)
		}
	}
	p.costOrder(draining)
	for _, i := range draining {
		p.settle(i)
	}
}

func (p *pass) settle(i int) {
	s := &p.servers[i]
	n := s.node
	if !p.jobsKnown() {
		// Without the job manager's view nothing is known to be empty, and a resume could
		// undo a drain a person made: neither power-off nor resume.
		p.skip(i, fleet.SkipJobsUnknown, "job manager not read this pass")
		return
	}
	if drainedByPerson(n) {
		p.skip(i, fleet.SkipDrainedByPerson, "drained without rota's marker")
		return
	}
	reason, detail := p.drainBlock(i)
	if reason == "" {
		p.act(i, fleet.PowerOff, fleet.ReasonDrained, "drained and empty")
		s.pool.powered--
		p.budget.poweredOff()
		return
	}
	if p.pol.Drain.TimedOut(n.Since, p.now) {
		p.resume(i, fleet.ReasonDrainTimeout, p.say(func() string { // the resume says why
			return fmt.Sprintf("draining since %s, timeout %s (%s: %s)",
				n.Since.UTC().Format(time.RFC3339), time.Duration(p.pol.Drain.Timeout), reason, detail)
		}))
		return
	}
	p.skip(i, reason, detail)
}

// drainBlock says why Draining server i may not be powered off yet ("" when it may): not
// empty, or the budget spent.
func (p *pass) drainBlock(i int) (fleet.Reason, string) {
	if reason, detail := p.emptyCheck(i); reason != "" {
		return reason, detail
	}
	return p.powerOffCaps()
}

// emptyCheck says why Draining server i may not be powered off yet ("" when it may). The job
// manager must show it drained and empty; with no job manager (adapter none) the telemetry must
// show it idle. Either way the telemetry must be present and fresh and no GPU process may run
// (safety invariants 1 and 2). Waiting work that fits it has resumed it already (placeDemand).
func (p *pass) emptyCheck(i int) (fleet.Reason, string) {
	s := &p.servers[i]
	n := s.node
	if !powerKnown(n) {
		return fleet.SkipPowerUnknown, p.say(func() string { return "bmc says " + string(n.Power) })
	}
	if reason, detail := fleet.PowerOffBlock(n.Jobs, !p.noJobManager); reason != "" {
		return reason, detail
	}
	switch {
	case !p.telemetryFresh(n):
		return fleet.SkipNoTelemetry, p.say(func() string { return p.telemetryDetail(n) })
	case p.noJobManager && !p.underThresholds(n), n.Telemetry.GPUProcesses > 0:
		return fleet.SkipBusy, p.say(func() string { return busyDetail(n) })
	}
	return "", ""
}

// costOrder sorts servers the way scale-down takes them: servers whose power-off saves money
// first (a pool with saves_when_off: false is paid for anyway, so its servers go last), the
// most expensive first, then the fewest cycles today, then by name.
func (p *pass) costOrder(idx []int) {
	// Sorted as keys read once from each server, compared one after the other: not read
	// from the servers and their nodes at each comparison.
	keys := p.mem.costKeys[:0]
	for _, i := range idx {
		s := &p.servers[i]
		keys = append(keys, costKey{keep: !s.pool.saves, cost: s.pool.cost, cycles: s.node.CyclesToday, name: p.mem.names[i], i: i})
	}
	slices.SortFunc(keys, func(a, b costKey) int {
		if a.keep != b.keep {
			return cmp.Compare(boolInt(a.keep), boolInt(b.keep))
		}
		if c := cmp.Compare(b.cost, a.cost); c != 0 {
			return c
		}
		if a.cycles != b.cycles {
			return cmp.Compare(a.cycles, b.cycles)
		}
		return cmp.Compare(a.name, b.name)
	})
	for k := range keys {
		idx[k] = keys[k].i
	}
	p.mem.costKeys = keys
}

// costKey is what costOrder orders server i by: whether its pool is paid for when off, the
// pool's cost, the server's cycles today and its place by name (see rankNames).
type costKey struct {
	keep            bool
	cost            float64
	cycles, name, i int
}
