package kubeview

import (
	"encoding/json"
	"slices"
)

// Required pod anti-affinity, as rota reads it for a waiting pod: the scheduler keeps the pod
// off every Node whose topology domain (the value of the term's topologyKey label: the Node
// itself for kubernetes.io/hostname, its zone for a zone key) holds a pod the term selects.
// Such a pod (a replica kept off its siblings' servers) cannot take the free room of a server
// that runs one, so it asks only for the servers outside those domains (Placement.Apart).

// PodTerm is one required pod anti-affinity term of a pod, as the scheduler applies it.
type PodTerm struct {
	// Selector selects the pods the pod must be kept apart from (nil: none).
	Selector *LabelSelector
	// Namespaces are where those pods are; AllNamespaces: every namespace (an empty
	// namespaceSelector).
	Namespaces    []string
	AllNamespaces bool
	TopologyKey   string
}

// LabelSelector is a label selector: its matchLabels and matchExpressions, ANDed.
type LabelSelector struct {
	MatchLabels      map[string]string `json:"matchLabels"`
	MatchExpressions []Requirement     `json:"matchExpressions"`
}

// matches: every requirement holds on labels (an empty selector selects every pod).
func (s LabelSelector) matches(labels map[string]string) bool {
	for k, v := range s.MatchLabels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	for _, r := range s.MatchExpressions {
		v, ok := labels[r.Key]
		if !requirementHolds(r, v, ok) {
			return false
		}
	}
	return true
}

type podAffinityTerm struct {
	LabelSelector     *LabelSelector `json:"labelSelector"`
	Namespaces        []string       `json:"namespaces"`
	NamespaceSelector *LabelSelector `json:"namespaceSelector"`
	TopologyKey       string         `json:"topologyKey"`
	MatchLabelKeys    []string       `json:"matchLabelKeys"`
	MismatchLabelKeys []string       `json:"mismatchLabelKeys"`
}

// antiAffinity are the terms of a pod of namespace ns and labels, as the scheduler applies
// them: matchLabelKeys and mismatchLabelKeys join the selector with the pod's own values; no
// namespaces and no namespaceSelector mean the pod's own namespace. A term whose
// namespaceSelector selects by labels is left out: rota does not read namespaces.
func antiAffinity(terms []podAffinityTerm, ns string, labels map[string]string) []PodTerm {
	var out []PodTerm
	for _, t := range terms {
		pt := PodTerm{TopologyKey: t.TopologyKey, Namespaces: t.Namespaces}
		if s := t.NamespaceSelector; s != nil {
			if len(s.MatchLabels) > 0 || len(s.MatchExpressions) > 0 {
				continue
			}
			pt.AllNamespaces = true
		} else if len(t.Namespaces) == 0 {
			pt.Namespaces = []string{ns}
		}
		pt.Selector = withLabelKeys(t.LabelSelector, t.MatchLabelKeys, t.MismatchLabelKeys, labels)
		out = append(out, pt)
	}
	return out
}

// withLabelKeys is selector sel joined, as the scheduler joins them, with a pod's own values
// (labels) of the keys of match (In) and mismatch (NotIn); a key the pod lacks adds nothing.
// A nil selector stays nil (it selects no pod).
func withLabelKeys(sel *LabelSelector, match, mismatch []string, labels map[string]string) *LabelSelector {
	if sel == nil {
		return nil
	}
	out := LabelSelector{MatchLabels: sel.MatchLabels, MatchExpressions: slices.Clone(sel.MatchExpressions)}
	for _, k := range match {
		if v, ok := labels[k]; ok {
			out.MatchExpressions = append(out.MatchExpressions, Requirement{Key: k, Operator: "In", Values: []string{v}})
		}
	}
	for _, k := range mismatch {
		if v, ok := labels[k]; ok {
			out.MatchExpressions = append(out.MatchExpressions, Requirement{Key: k, Operator: "NotIn", Values: []string{v}})
		}
	}
	return &out
}

// KeepsApart reports whether a pod of pods that waits (Waits) has required pod anti-affinity
// or a topology spread constraint that the scheduler must not break: only then are the pods
// that hold their Nodes read for it (PlaceApart).
func KeepsApart(pods []Pod) bool {
	return slices.ContainsFunc(pods, func(p Pod) bool { return p.Waits() && (len(p.AntiAffinity) > 0 || len(p.Spread) > 0) })
}

// PlaceApart puts into the placement of each waiting pod of pods with required pod
// anti-affinity or topology spread the Nodes it cannot start on (Placement.Apart, sorted):
// those whose topology domain holds a pod of held (the pods bound to a Node, finished or not
// yet) that one of its anti-affinity terms selects, and those where one of its spread
// constraints would be broken (SpreadConstraint.apart). Each distinct term or constraint is
// weighed once (a workload's pods share theirs).
func PlaceApart(pods, held []Pod, nodes []Node) {
	byName := make(map[string]*Node, len(nodes))
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	apart := map[string][]string{} // Nodes by term or constraint
	once := func(p *Pod, key any, weigh func() []string) {
		k, _ := json.Marshal(key) // plain data: it cannot fail
		off, ok := apart[string(k)]
		if !ok {
			off = weigh()
			apart[string(k)] = off
		}
		for _, n := range off {
			if !slices.Contains(p.Placement.Apart, n) {
				p.Placement.Apart = append(p.Placement.Apart, n)
			}
		}
	}
	for i := range pods {
		p := &pods[i]
		if !p.Waits() {
			continue
		}
		for _, t := range p.AntiAffinity {
			once(p, t, func() []string { return t.apart(held, nodes, byName) })
		}
		for _, c := range p.Spread {
			// Which Nodes count depends on the pod's namespace and placement too.
			pl := Placement{Selector: p.Placement.Selector, Affinity: p.Placement.Affinity, Tolerations: p.Placement.Tolerations}
			key := struct {
				C         SpreadConstraint
				Namespace string
				Placement Placement
			}{c, p.Namespace, pl}
			once(p, key, func() []string { return c.apart(p.Namespace, pl, held, nodes, byName) })
		}
		slices.Sort(p.Placement.Apart)
	}
}

// apart are the Nodes term t keeps a pod off: those of a topology domain that holds a pod of
// held that t selects.
func (t PodTerm) apart(held []Pod, nodes []Node, byName map[string]*Node) []string {
	domains := map[string]bool{}
	for _, h := range held {
		n, ok := byName[h.NodeName]
		if !ok || h.Terminal() || t.Selector == nil || !t.Selector.matches(h.Labels) ||
			(!t.AllNamespaces && !slices.Contains(t.Namespaces, h.Namespace)) {
			continue
		}
		if v, ok := n.Labels[t.TopologyKey]; ok {
			domains[v] = true
		}
	}
	var out []string
	for _, n := range nodes {
		if v, ok := n.Labels[t.TopologyKey]; ok && domains[v] {
			out = append(out, n.Name)
		}
	}
	return out
}
