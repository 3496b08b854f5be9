package loop

import (
	"cmp"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/fleet"
)

// gate re-checks the planner's actions against the safety invariants and turns any that breaks
// one into a skip. The planner already keeps these rules; the gate is the second lock on the
// door, so a planner bug cannot power off a pinned server, an allocated one, or scale down
// blind.
func gate(snap fleet.Snapshot, dec fleet.Decision, held map[string]string) fleet.Decision {
	nodes := make(map[string]*fleet.Node, len(snap.Nodes))
	for i := range snap.Nodes {
		nodes[snap.Nodes[i].Name] = &snap.Nodes[i]
	}
	kept := dec.Actions[:0:0]
	for _, a := range dec.Actions {
		reason, detail := blocked(snap, nodes[a.Node], a, held[a.Node])
		if reason == "" {
			kept = append(kept, a)
			continue
		}
		dec.Skips = append(dec.Skips, fleet.Skip{Node: a.Node, Pool: a.Pool, Reason: reason, Detail: detail})
	}
	dec.Actions = kept
	return dec
}

// blocked says why action a on node n may not run this pass ("" when it may); held is why the
// pass holds the node, if it does.
func blocked(snap fleet.Snapshot, n *fleet.Node, a fleet.Action, held string) (fleet.Reason, string) {
	scaleDown := a.Kind == fleet.Drain || a.Kind == fleet.PowerOff
	switch {
	case n == nil:
		return fleet.SkipUnknownNode, "not in the inventory"
	case snap.Paused:
		return fleet.SkipPaused, "scaler paused by operator"
	case n.Pinned:
		return fleet.SkipPinned, "pinned by operator"
	case n.Maintenance:
		return fleet.SkipMaintenance, "in maintenance"
	case n.Power == bmc.StateUnknown && a.Kind != fleet.Resume:
		return fleet.SkipPowerUnknown, "bmc state unknown"
	case scaleDown && !snap.Telemetry:
		return fleet.SkipNoTelemetry, "telemetry not read this pass"
	case scaleDown && !snap.JobsKnown:
		return fleet.SkipJobsUnknown, "job manager not read this pass"
	case (a.Kind == fleet.Drain || oneStep(n, a)) && a.Reason == fleet.ReasonIdle && !n.Telemetry.Present:
		// Idle means measured idle: a server without whole, fresh data (for every GPU its
		// pool declares) is never drained for idleness, whatever the planner thought.
		return fleet.SkipNoTelemetry, cmp.Or(n.Telemetry.Missing, "no whole, fresh telemetry for the server")
	case held != "":
		return fleet.SkipInFlight, held
	case oneStep(n, a):
		// An On server powered off in one step is drained by the executor on the way: it
		// must be known and empty now, and drained by rota it will be (a drain someone
		// else holds it under stays theirs).
		v := n.Jobs
		if !v.Drained {
			v.Drained, v.DrainedByRota = true, true
		}
		return fleet.PowerOffBlock(v, !snap.NoJobManager)
	case a.Kind == fleet.PowerOff:
		// Invariant 1, by the planner's own rule; the executor asks it once more right before
		// the command.
		return fleet.PowerOffBlock(n.Jobs, !snap.NoJobManager)
	}
	return "", ""
}

// oneStep reports whether a is a power-off of an On server (drained on the way).
func oneStep(n *fleet.Node, a fleet.Action) bool {
	return a.Kind == fleet.PowerOff && n.State == fleet.StateOn
}

// withSkips moves the actions the executor did not start to the skips.
func withSkips(dec fleet.Decision, notStarted []fleet.Skip) fleet.Decision {
	if len(notStarted) == 0 {
		return dec
	}
	skipped := map[string]bool{}
	for _, s := range notStarted {
		skipped[s.Node] = true
	}
	kept := dec.Actions[:0:0]
	for _, a := range dec.Actions {
		if !skipped[a.Node] {
			kept = append(kept, a)
		}
	}
	dec.Actions = kept
	dec.Skips = append(dec.Skips, notStarted...)
	return dec
}
