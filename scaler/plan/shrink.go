package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/rotahq/rota/scaler/fleet"
)

// shrink is scale-down: every On server not yet decided is checked for idleness; the idle
// ones, most expensive first, are held to the caps, and those the caps let through are powered
// off in this pass (the executor drains each first and checks it is still empty). With no job
// manager (adapter none) they are drained instead, and powered off at a later pass once the
// telemetry still shows them idle.
func (p *pass) shrink() {
	idle := p.mem.idle[:0]
	for _, i := range p.on {
		if p.state[i].done {
			continue
		}
		if reason, detail := p.idleCheck(i); reason != "" {
			p.skip(i, reason, detail)
			continue
		}
		idle = append(idle, i)
	}
	p.mem.idle = idle
	// Only the actions are wanted in a quiet pass: once the fleet's caps refuse one more, the
	// servers left are all refused, unsorted (see capsRefuse).
	if p.quiet && p.capsRefuse(idle) {
		return
	}
	if p.pol.BreakEven.IdlePeriods {
		p.rankIdle()
	}
	p.costOrder(idle)
	for k, i := range idle {
		if p.quiet && p.capsRefuse(idle[k:]) {
			break
		}
		pl, n := p.servers[i].pool, p.servers[i].node
		if p.quiet && pl.refuses(n) {
			p.skip(i, pl.shut, "")
			continue
		}
		reason, detail := p.scaleDownCaps(i)
		if reason != "" {
			if p.quiet {
				pl.shutBy(reason, n, p.pol.BreakEven.IdlePeriods)
			}
			p.skip(i, reason, detail)
			continue
		}
		pl.up--
		pl.offs++
		if p.noJobManager {
			p.act(i, fleet.Drain, fleet.ReasonIdle, p.say(func() string {
				return fmt.Sprintf("cpu max %.0f%%, gpu max %.0f%% over %s; %s",
					100*n.Telemetry.CPUMax, 100*n.Telemetry.GPUMax, time.Duration(p.pol.Idle.Window), detail)
			}))
			p.budget.drained()
			continue
		}
		p.act(i, fleet.PowerOff, fleet.ReasonIdle, detail)
		pl.powered--
		p.budget.offIdle()
	}
}

// shutBy notes that the pool's cap reason refused idle server n in a quiet pass's scale-down:
// a cap of the pool's (cooldown, floor, spares) refuses every idle server of the pool after
// it, and the break-even rule, with history, every one without work cycled as often today
// (the rule's answer for the same level and cycles). Either holds until a server of the pool
// is powered off, and none is once one is refused: the servers come in cost order, the
// pool's together, each of its next ones refused by one of its caps as n was, or by one of
// its own. Only the actions are wanted, so any refusal will do (none is SkipAllocated).
// With the rule on the idle periods on (periods), its verdict reads each server's rank and
// idle time, not only the level and cycles: a break-even refusal then says nothing of the
// next server.
func (pl *pool) shutBy(reason fleet.Reason, n *fleet.Node, periods bool) {
	switch reason {
	case fleet.SkipCooldown, fleet.SkipFloor, fleet.ReasonSpare:
		pl.shut = reason
	case fleet.SkipBreakEven:
		if pl.view.Ready && !periods && (pl.shut == "" || pl.shut == fleet.SkipBreakEven) {
			pl.shut, pl.shutCycles = reason, n.CyclesToday
		}
	}
}

// refuses reports whether the pool's cap refuses idle server n as shutBy noted.
func (pl *pool) refuses(n *fleet.Node) bool {
	switch pl.shut {
	case "":
		return false
	case fleet.SkipBreakEven:
		return !n.Jobs.Allocated() && n.CyclesToday == pl.shutCycles
	}
	return true
}

// capsRefuse reports whether the fleet's caps refuse one more power-off, and then gives each
// of servers their skip: in a pass that wants only the actions, every idle server left is
// refused (by those caps or one checked before them), whatever their order.
func (p *pass) capsRefuse(servers []int) bool {
	reason, _ := p.fleetCaps()
	if reason == "" {
		return false
	}
	for _, i := range servers {
		p.skip(i, reason, "")
	}
	return true
}

// rankIdle ranks the empty On servers of each pool in the job manager's placement order (by
// name, as Slurm places on nodes of equal weight).
func (p *pass) rankIdle() {
	var empty []int
	for _, i := range p.on {
		if s := &p.servers[i]; s.pool != nil && !s.node.Jobs.Allocated() {
			empty = append(empty, i)
		}
	}
	slices.SortFunc(empty, func(a, b int) int { return cmp.Compare(p.servers[a].node.Name, p.servers[b].node.Name) })
	for _, i := range empty {
		pl := p.servers[i].pool
		pl.ranked++
		p.state[i].idleRank = pl.ranked
	}
	for _, i := range empty {
		p.servers[i].pool.ranked = 0
	}
}

// idleCheck says why On server i is not idle ("" when it is). Each check fails closed: what is
// not known is not idle. What it reads of the node, Telemetry aside, was read when the server
// was screened (see idleKey): most On servers, those with work, are refused without their node.
func (p *pass) idleCheck(i int) (fleet.Reason, string) {
	n, k := p.servers[i].node, &p.mem.screens[i].idle
	switch {
	case k.skip == fleet.SkipPowerUnknown:
		// A drain leads to a power-off, which needs a known power state (invariant 3).
		return k.skip, p.say(func() string { return "bmc says " + string(n.Power) })
	case k.retryAfter.After(p.now):
		// A step failed on it (a power-off that did not work, say) and it came back On: no new
		// drain before its backoff ends, or it would cycle drain -> fail -> resume.
		return fleet.SkipBackoff, p.say(func() string { return backoffDetail(n) })
	case k.skip != "":
		return k.skip, p.say(func() string { return p.jobsDetail(n, k.skip) })
	}
	switch {
	case !p.telemetryFresh(n):
		// Missing or stale data never counts as idle (invariant 2).
		return fleet.SkipNoTelemetry, p.say(func() string { return p.telemetryDetail(n) })
	case !p.underThresholds(n) || n.Telemetry.GPUProcesses > 0:
		return fleet.SkipBusy, p.say(func() string { return busyDetail(n) })
	}
	return "", ""
}

// idleKey is what the idle check of an On server reads of its node, Telemetry aside, with the
// snapshot's JobsKnown and NoJobManager: the skip its power or its jobs give it ("" none) and
// the end of its backoff. Kept with the server's screening, it follows the changed nodes.
type idleKey struct {
	skip       fleet.Reason
	retryAfter time.Time
}

// idleKeyOf is On node n's idleKey.
func (p *pass) idleKeyOf(n *fleet.Node) idleKey {
	k := idleKey{retryAfter: n.RetryAfter}
	switch {
	case !powerKnown(n):
		k.skip = fleet.SkipPowerUnknown
	case !p.jobsKnown():
		k.skip = fleet.SkipJobsUnknown
	case p.noJobManager:
		// adapter none: no job manager to ask, idleness rests on telemetry alone.
	case drainedByPerson(n):
		k.skip = fleet.SkipDrainedByPerson
	case !n.Jobs.Known:
		// A server the job manager does not know may run work it cannot see (invariant 1).
		k.skip = fleet.SkipJobsUnknown
	case n.Jobs.Allocated():
		k.skip = fleet.SkipAllocated // the commonest skip of all
	}
	return k
}

// jobsDetail words the skip the jobs of On node n give it (see idleKeyOf): without fmt, which
// costs several times as much.
func (p *pass) jobsDetail(n *fleet.Node, reason fleet.Reason) string {
	switch {
	case reason == fleet.SkipJobsUnknown && !p.jobsKnown():
		return "job manager not read this pass"
	case reason == fleet.SkipJobsUnknown:
		return "job manager does not know the server"
	case reason == fleet.SkipDrainedByPerson:
		return "drained without rota's marker"
	}
	return strconv.Itoa(n.Jobs.Jobs) + " jobs, " + strconv.Itoa(n.Jobs.CPUs) + " cpus, " +
		strconv.Itoa(n.Jobs.GPUs) + " gpus allocated"
}

// telemetryFresh: Prometheus answered this pass, the server's series cover the idle window,
// and its newest sample is still fresh now (the pass may run a while after the read).
func (p *pass) telemetryFresh(n *fleet.Node) bool {
	t := n.Telemetry
	return p.snap.Telemetry && t.Present && fleet.SampleFresh(t.LastSample, p.now, time.Duration(p.pol.Telemetry.MaxAge))
}

func (p *pass) telemetryDetail(n *fleet.Node) string {
	switch {
	case !p.snap.Telemetry:
		return "prometheus not read this pass"
	case !n.Telemetry.Present && n.Telemetry.Missing != "":
		return n.Telemetry.Missing
	case !n.Telemetry.Present:
		return "no series for the whole idle window"
	}
	return "newest sample " + n.Telemetry.LastSample.UTC().Format(time.RFC3339)
}

// underThresholds: CPU and every GPU stayed under the idle thresholds for the whole window.
func (p *pass) underThresholds(n *fleet.Node) bool {
	t, idle := n.Telemetry, p.pol.Idle
	return t.CPUMax < idle.CPUThreshold && t.GPUMax < idle.GPUThreshold
}

func busyDetail(n *fleet.Node) string {
	t := n.Telemetry
	return fmt.Sprintf("cpu max %.0f%%, gpu max %.0f%%, %d gpu processes", 100*t.CPUMax, 100*t.GPUMax, t.GPUProcesses)
}
