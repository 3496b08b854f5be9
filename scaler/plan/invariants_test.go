package plan

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// reasons is the bounded set a decision may use.
var reasons = map[fleet.Reason]bool{
	fleet.ReasonIdle: true, fleet.ReasonDrained: true, fleet.ReasonBacklog: true, fleet.ReasonFloor: true,
	fleet.ReasonDemandReturn: true, fleet.ReasonDrainTimeout: true, fleet.ReasonRetry: true,
	fleet.SkipPaused: true, fleet.SkipPinned: true, fleet.SkipMaintenance: true, fleet.SkipPowerUnknown: true,
	fleet.SkipInFlight: true, fleet.SkipAllocated: true, fleet.SkipBusy: true, fleet.SkipNoTelemetry: true,
	fleet.SkipJobsUnknown: true, fleet.SkipDrainedByPerson: true, fleet.SkipCeiling: true, // SkipFloor == ReasonFloor
	fleet.SkipCooldown: true, fleet.SkipMinOn: true, fleet.SkipMinOff: true, fleet.SkipCycleCap: true,
	fleet.SkipBudget: true, fleet.SkipConcurrency: true, fleet.SkipQuota: true, fleet.SkipBackoff: true,
	fleet.SkipNoFit: true, fleet.SkipNotNeeded: true, fleet.SkipBelowBacklog: true, fleet.SkipDemandWaits: true,
	fleet.SkipUnknownPool: true, fleet.ReasonRebalance: true, fleet.SkipNotRequeueable: true,
	fleet.SkipDoNotDisrupt: true, fleet.SkipJobTail: true, fleet.SkipMoveBudget: true, fleet.SkipMoveSaving: true, // ReasonQuota is SkipQuota
	fleet.ReasonSpare: true, fleet.SkipBreakEven: true, fleet.SkipDeferred: true,
}

// checkInvariants checks, from the input alone (not from the planner's code), every safety
// invariant of ARCHITECTURE.md that concerns the planner.
func checkInvariants(t testing.TB, snap fleet.Snapshot, cfg *config.Config, now time.Time, d fleet.Decision) {
	t.Helper()
	nodes := map[string]*fleet.Node{}
	for i := range snap.Nodes {
		nodes[snap.Nodes[i].Name] = &snap.Nodes[i]
	}
	seen := map[string]int{}
	for _, a := range d.Actions {
		seen[a.Node]++
		if !reasons[a.Reason] {
			t.Errorf("%s: reason %q not in the bounded set", a.Node, a.Reason)
		}
	}
	for _, s := range d.Skips {
		seen[s.Node]++
		if !reasons[s.Reason] {
			t.Errorf("%s: reason %q not in the bounded set", s.Node, s.Reason)
		}
	}
	for name := range nodes {
		if seen[name] != 1 {
			t.Errorf("%s: %d entries in the decision, want exactly 1", name, seen[name])
		}
	}
	if snap.Paused && len(d.Actions) > 0 {
		t.Errorf("paused, yet %d actions", len(d.Actions))
	}
	for _, a := range d.Actions {
		n := nodes[a.Node]
		if n == nil {
			t.Errorf("action for unknown node %s", a.Node)
			continue
		}
		if msg := actionFault(n, a, snap, cfg, now); msg != "" {
			t.Errorf("%s %s (%s): %s", a.Kind, a.Node, a.Reason, msg)
		}
	}
	checkLimits(t, snap, cfg, now, d, nodes)
}

func known(n *fleet.Node) bool { return n.Power == bmc.StateOn || n.Power == bmc.StateOff }

func fresh(n *fleet.Node, snap fleet.Snapshot, cfg *config.Config, now time.Time) bool {
	return snap.Telemetry && n.Telemetry.Present && !n.Telemetry.LastSample.IsZero() &&
		now.Sub(n.Telemetry.LastSample) < time.Duration(cfg.Policy.Telemetry.MaxAge)
}

// actionFault says what is wrong with one action ("" if nothing).
func actionFault(n *fleet.Node, a fleet.Action, snap fleet.Snapshot, cfg *config.Config, now time.Time) string {
	pol, none := cfg.Policy, snap.NoJobManager
	byPerson := n.Jobs.Drained && !n.Jobs.DrainedByRota
	jobsKnown := none || snap.JobsKnown
	switch {
	case n.Pinned || n.Maintenance:
		return "pinned or in maintenance"
	case a.Pool != n.Pool || cfg.Pool(n.Pool) == nil:
		return "pool mismatch"
	}
	switch a.Kind {
	case fleet.PowerOn:
		switch {
		case !known(n):
			return "power unknown"
		case n.State != fleet.StateOff && n.State != fleet.StateFailed:
			return "not off"
		case n.State == fleet.StateFailed && n.RetryAfter.After(now):
			return "backoff not over"
		case pol.Node.MinOff > 0 && !n.LastOff.IsZero() && now.Sub(n.LastOff) < time.Duration(pol.Node.MinOff):
			return "min_off not over"
		}
	case fleet.Drain, fleet.PowerOff:
		idleTelemetry := n.Telemetry.CPUMax < pol.Idle.CPUThreshold && n.Telemetry.GPUMax < pol.Idle.GPUThreshold
		// A power-off of an On server is a scale-down in one step (the executor drains it on
		// the way): it needs everything a drain needs, and a job manager to drain it with.
		scaleDown := a.Kind == fleet.Drain || n.State == fleet.StateOn
		switch {
		case !known(n):
			return "power unknown"
		case scaleDown && n.RetryAfter.After(now):
			return "backoff not over"
		case !jobsKnown || !none && byPerson:
			// With adapter none there is no job manager, and no drain by a person to see.
			return "job manager unread or drained by a person"
		case !none && (!n.Jobs.Known || n.Jobs.Allocated()):
			return "allocated or unknown allocation"
		case !fresh(n, snap, cfg, now):
			return "telemetry missing or stale"
		case n.Telemetry.GPUProcesses > 0:
			return "gpu processes running"
		case (scaleDown || none) && !idleTelemetry:
			return "telemetry not idle"
		case a.Kind == fleet.PowerOff && n.State == fleet.StateOn && none:
			return "powered off in one step without a job manager to drain it"
		case a.Kind == fleet.PowerOff && n.State != fleet.StateOn && (n.State != fleet.StateDraining || !none && !n.Jobs.Drained):
			return "not drained"
		case a.Kind == fleet.Drain && n.State != fleet.StateOn:
			return "not on"
		case scaleDown && pol.Node.MinOn > 0 && !n.LastOn.IsZero() && now.Sub(n.LastOn) < time.Duration(pol.Node.MinOn):
			return "min_on not over"
		case scaleDown && n.CyclesToday >= pol.Node.MaxCyclesPerDay:
			return "cycle cap reached"
		case scaleDown && cooling(snap.History, n.Pool, cfg, now):
			return "in cooldown"
		}
	case fleet.Resume:
		if n.State != fleet.StateDraining || !none && byPerson || !jobsKnown {
			return "not a drain rota may undo"
		}
	case fleet.Move:
		return moveFault(n, a, snap, cfg, now)
	default:
		return "unknown kind"
	}
	return ""
}

// moveFault checks a move: moves on, the server on, known and read in full, every job
// requeueable, not do-not-disrupt, on this server alone and out of its tail, the plan naming
// them all and excluding the server, within min_on and the cycle cap.
func moveFault(n *fleet.Node, a fleet.Action, snap fleet.Snapshot, cfg *config.Config, now time.Time) string {
	m := cfg.Policy.Moves
	switch {
	case !m.Enabled:
		return "moves are off"
	case !known(n) || n.State != fleet.StateOn || !snap.JobsKnown || !n.Jobs.Known:
		return "not on, or not known"
	case a.Move == nil || len(a.Move.Jobs) != len(n.Jobs.Running) || len(n.Jobs.Running) != n.Jobs.Jobs:
		return "the plan does not name every job"
	case !slices.Contains(a.Move.Exclude, n.Name):
		return "the plan lets the work come back"
	case a.Move.Drain && cfg.Policy.Node.MinOn > 0 && !n.LastOn.IsZero() && now.Sub(n.LastOn) < time.Duration(cfg.Policy.Node.MinOn):
		return "min_on not over"
	case a.Move.Drain && n.CyclesToday >= cfg.Policy.Node.MaxCyclesPerDay:
		return "cycle cap reached"
	}
	for _, j := range n.Jobs.Running {
		if !j.Requeueable || j.DoNotDisrupt || j.Servers > 1 || m.Remaining(j.Started, j.TimeLimit, now) < time.Duration(m.Tail) {
			return "job " + j.ID + " may not move"
		}
	}
	return ""
}

func cooling(h fleet.History, pool string, cfg *config.Config, now time.Time) bool {
	in := func(t time.Time, d time.Duration) bool { return !t.IsZero() && now.Sub(t) < d }
	return in(h.LastScaleDown[pool], time.Duration(cfg.Policy.Cooldown.ScaleDown)) ||
		in(h.LastScaleUp[pool], time.Duration(cfg.Policy.Cooldown.ScaleUp))
}

// floorOf recomputes a pool's floor at now: min, or the highest active share, within Max.
func floorOf(cfg *config.Config, pl *config.Pool, now time.Time) int {
	share := 0.0
	for i := range cfg.Policy.Schedules {
		s := &cfg.Policy.Schedules[i]
		if s.Active(now) && s.AppliesTo(pl.Name) {
			share = math.Max(share, s.MinOnShare)
		}
	}
	f := max(pl.Min, int(math.Ceil(share*float64(len(pl.Nodes))-1e-9)))
	return min(f, *pl.Max)
}

// checkLimits checks floors, ceilings, the disruption budget and the concurrency cap after the
// decision's actions, and that no pool scales down while work woke or resumed servers in it.
func checkLimits(t testing.TB, snap fleet.Snapshot, cfg *config.Config, now time.Time, d fleet.Decision, nodes map[string]*fleet.Node) {
	t.Helper()
	up, powered := map[string]int{}, map[string]int{}
	inFlight, draining, recent := 0, 0, 0
	for _, n := range nodes {
		switch n.State {
		case fleet.StateOn, fleet.StatePoweringOn, fleet.StateBooting:
			up[n.Pool]++
			powered[n.Pool]++
		case fleet.StateDraining:
			powered[n.Pool]++
			draining++
		}
		if n.State.InFlight() {
			inFlight++
		}
	}
	for _, pt := range snap.History.PowerOffs {
		if pt.After(now.Add(-time.Duration(cfg.Policy.Disruption.Window))) {
			recent++
		}
	}
	count := map[fleet.Kind]int{}
	byPool := map[string]map[fleet.Kind]int{}
	spareWakes, downs := map[string]int{}, map[string]int{}
	direct := 0 // power-offs of On servers: a drain and a power-off in one
	for _, a := range d.Actions {
		kind := a.Kind
		if kind == fleet.Move && !a.Move.Drain {
			kind = "move_staying_on" // a quota given back: the server stays in service
		}
		count[kind]++
		if byPool[a.Pool] == nil {
			byPool[a.Pool] = map[fleet.Kind]int{}
		}
		byPool[a.Pool][kind]++
		if a.Kind == fleet.PowerOn && a.Reason == fleet.ReasonSpare {
			spareWakes[a.Pool]++
		}
		if a.Kind == fleet.Drain || a.Kind == fleet.PowerOff && nodes[a.Node].State == fleet.StateOn {
			downs[a.Pool]++
		}
		if kind == fleet.Move {
			downs[a.Pool]++ // a move drains its server
		}
		if a.Kind == fleet.PowerOff && nodes[a.Node].State == fleet.StateOn {
			direct++
		}
	}
	for i := range cfg.Pools {
		pl := &cfg.Pools[i]
		k := byPool[pl.Name]
		upAfter := up[pl.Name] + k[fleet.PowerOn] + k[fleet.Resume] - downs[pl.Name]
		poweredAfter := powered[pl.Name] + k[fleet.PowerOn] - k[fleet.PowerOff]
		if !snap.Paused && d.Desired[pl.Name] != upAfter {
			t.Errorf("pool %s: desired %d, but %d on after the actions", pl.Name, d.Desired[pl.Name], upAfter)
		}
		if k[fleet.PowerOn] > 0 && poweredAfter > *pl.Max {
			t.Errorf("pool %s: %d powered after power-ons, ceiling %d", pl.Name, poweredAfter, *pl.Max)
		}
		if f := floorOf(cfg, pl, now); downs[pl.Name] > 0 && upAfter < f {
			t.Errorf("pool %s: %d on after drains, floor %d", pl.Name, upAfter, f)
		}
		if spareWakes[pl.Name] > 0 && downs[pl.Name] > 0 {
			t.Errorf("pool %s: woke %d spares and scaled %d servers down in one pass", pl.Name, spareWakes[pl.Name], downs[pl.Name])
		}
	}
	// Waking for work never wakes more servers than the work has server-slots (each woken
	// server takes at least one slot), whether it was past the threshold or not.
	slots, woken := 0, 0
	for _, dm := range snap.Demand {
		slots += max(dm.Count, 0) * max(dm.Nodes, 1)
	}
	for _, a := range d.Actions {
		// retry is left out: a failed server is retried for floors too.
		if a.Kind == fleet.PowerOn && a.Reason == fleet.ReasonBacklog {
			woken++
		}
	}
	if woken > slots {
		t.Errorf("%d servers woken for work of %d server-slots", woken, slots)
	}
	// Warm spares never exceed their cap: at most max_share of a pool's servers (rounded
	// down) are kept on or woken as spares; without history, none when the factor is 0, and
	// none are woken.
	spares := map[string]int{}
	for _, sk := range d.Skips {
		if sk.Reason == fleet.ReasonSpare {
			spares[sk.Pool]++
		}
	}
	for i := range cfg.Pools {
		pl := &cfg.Pools[i]
		capN := int(math.Floor(cfg.Policy.Spares.MaxShare*float64(len(pl.Nodes)) + 1e-9))
		ready := snap.Learned[pl.Name].Ready
		if !ready && cfg.Policy.Spares.Factor <= 0 {
			capN = 0
		}
		if n := spares[pl.Name] + spareWakes[pl.Name]; n > capN {
			t.Errorf("pool %s: %d warm spares kept or woken, cap %d", pl.Name, n, capN)
		}
		if !ready && spareWakes[pl.Name] > 0 {
			t.Errorf("pool %s: %d spares woken without history", pl.Name, spareWakes[pl.Name])
		}
	}
	maxOffs := cfg.Policy.Disruption.PowerOffs(len(snap.Nodes))
	if count[fleet.PowerOff] > 0 && recent+count[fleet.PowerOff] > maxOffs {
		t.Errorf("%d recent + %d planned power-offs, budget %d", recent, count[fleet.PowerOff], maxOffs)
	}
	// A move drains its server: it counts as a drain; a power-off of an On server is a drain
	// and a power-off in one.
	drains := count[fleet.Drain] + count[fleet.Move] + direct
	drainingAfter := draining - (count[fleet.PowerOff] - direct) - count[fleet.Resume] + count[fleet.Drain] + count[fleet.Move]
	if drains > 0 && recent+count[fleet.PowerOff]+drainingAfter > maxOffs {
		t.Errorf("scale-downs past the budget: %d recent, %d planned, %d draining, budget %d", recent, count[fleet.PowerOff], drainingAfter, maxOffs)
	}
	inFlightAfter := inFlight + count[fleet.PowerOn] + drains - count[fleet.Resume]
	if maxInFlight := cfg.Policy.Disruption.Concurrent(len(snap.Nodes)); drains > 0 && inFlightAfter > maxInFlight {
		t.Errorf("%d in flight after scale-downs, cap %d", inFlightAfter, maxInFlight)
	}
	recentMoves := 0
	for _, mt := range snap.History.Moves {
		if mt.After(now.Add(-time.Duration(cfg.Policy.Moves.Window))) {
			recentMoves++
		}
	}
	if moves := count[fleet.Move] + count["move_staying_on"]; moves > 0 && recentMoves+moves > cfg.Policy.Moves.MaxMoves {
		t.Errorf("%d recent + %d planned moves, budget %d", recentMoves, moves, cfg.Policy.Moves.MaxMoves)
	}
}
