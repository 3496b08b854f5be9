package kubeview

import (
	"slices"
	"strconv"
)

// powerTaints are the taints a Node carries because it is off, cordoned or not yet up: rota
// lifts each by powering the server on and resuming it, so a pod need not tolerate them to
// count as able to run there. A cloud controller manager that reads the servers' power (a
// bare-metal provider's) taints the Node of one that is off with its shutdown taint, and
// lifts it once the server runs.
var powerTaints = []string{
	PoweredOffTaint,
	"node.kubernetes.io/unschedulable",
	"node.kubernetes.io/not-ready",
	"node.kubernetes.io/unreachable",
	"node.cloudprovider.kubernetes.io/shutdown",
}

// Fits reports whether a pod with placement pl could be scheduled on node n once rota powered
// it on and resumed it: the node selector, the required node affinity and that of each volume
// bound to its claims match the node, the node offers every device class of pl.Devices, its
// pod anti-affinity and topology spread do not keep it off the node (pl.Apart), and the pod tolerates every
// NoSchedule and NoExecute taint but those of powerTaints. Resources
// are not weighed here (the planner matches shapes to pools). A requirement rota cannot read
// (an operator newer than this code) counts as met: rota would rather wake a server the pod
// then cannot use than leave it waiting for ever; the scheduler still holds the pod to it.
func (pl Placement) Fits(n Node) bool {
	if slices.Contains(pl.Apart, n.Name) || !pl.selects(n) {
		return false
	}
	for _, v := range pl.Volumes {
		if !v.matches(n) {
			return false
		}
	}
	for _, d := range pl.Devices {
		if !slices.Contains(n.Devices, d) {
			return false
		}
	}
	return pl.toleratesTaints(n)
}

// selects reports whether the node selector and the required node affinity of pl match node n.
func (pl Placement) selects(n Node) bool {
	for k, v := range pl.Selector {
		if got, ok := n.Labels[k]; !ok || got != v {
			return false
		}
	}
	return pl.Affinity == nil || pl.Affinity.matches(n)
}

// toleratesTaints reports whether pl tolerates every NoSchedule and NoExecute taint of node n
// but those of powerTaints (they go when rota wakes the server).
func (pl Placement) toleratesTaints(n Node) bool {
	for _, t := range n.Taints {
		if t.Effect == PreferNoSchedule || slices.Contains(powerTaints, t.Key) {
			continue
		}
		if !slices.ContainsFunc(pl.Tolerations, func(tol Toleration) bool { return tolerates(tol, t) }) {
			return false
		}
	}
	return true
}

// matches: one of the selector's terms matches node n.
func (s NodeSelector) matches(n Node) bool {
	return slices.ContainsFunc(s.Terms, func(t SelectorTerm) bool { return termMatches(t, n) })
}

// termMatches: every expression of a term holds (a term with none matches no node, as in
// Kubernetes).
func termMatches(t SelectorTerm, n Node) bool {
	if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
		return false
	}
	for _, r := range t.MatchExpressions {
		v, ok := n.Labels[r.Key]
		if !requirementHolds(r, v, ok) {
			return false
		}
	}
	for _, r := range t.MatchFields {
		// metadata.name is the only field Kubernetes allows here.
		if r.Key == "metadata.name" && !requirementHolds(r, n.Name, true) {
			return false
		}
	}
	return true
}

func requirementHolds(r Requirement, v string, ok bool) bool {
	switch r.Operator {
	case "In":
		return ok && slices.Contains(r.Values, v)
	case "NotIn":
		return !ok || !slices.Contains(r.Values, v)
	case "Exists":
		return ok
	case "DoesNotExist":
		return !ok
	case "Gt", "Lt":
		if len(r.Values) != 1 {
			return true // unreadable: met
		}
		want, err1 := strconv.ParseInt(r.Values[0], 10, 64)
		have, err2 := strconv.ParseInt(v, 10, 64)
		switch {
		case err1 != nil:
			return true
		case !ok || err2 != nil:
			return false
		case r.Operator == "Gt":
			return have > want
		default:
			return have < want
		}
	}
	return true
}

// tolerates reports whether toleration tol tolerates taint t (Kubernetes' rule: an empty key
// with Exists tolerates everything; an empty effect tolerates every effect).
func tolerates(tol Toleration, t Taint) bool {
	if tol.Effect != "" && tol.Effect != t.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != t.Key {
		return false
	}
	switch tol.Operator {
	case "Exists":
		return true
	case "Equal", "":
		return tol.Value == t.Value
	}
	return true // an operator newer than this code: met
}
