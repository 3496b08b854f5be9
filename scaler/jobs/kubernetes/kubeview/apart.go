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
		if t.LabelSelector != nil {
			sel := LabelSelector{MatchLabels: t.LabelSelector.MatchLabels, MatchExpressions: slices.Clone(t.LabelSelector.MatchExpressions)}
			for _, k := range t.MatchLabelKeys {
				if v, ok := labels[k]; ok {
					sel.MatchExpressions = append(sel.MatchExpressions, Requirement{Key: k, Operator: "In", Values: []string{v}})
				}
			}
			for _, k := range t.MismatchLabelKeys {
				if v, ok := labels[k]; ok {
					sel.MatchExpressions = append(sel.MatchExpressions, Requirement{Key: k, Operator: "NotIn", Values: []string{v}})
				}
			}
			pt.Selector = &sel
		}
		out = append(out, pt)
	}
	return out
}

// KeepsApart reports whether a pod of pods that waits (Waits) has required pod anti-affinity:
// only then are the pods that hold their Nodes read for it (PlaceApart).
func KeepsApart(pods []Pod) bool {
	return slices.ContainsFunc(pods, func(p Pod) bool { return p.Waits() && len(p.AntiAffinity) > 0 })
}

// PlaceApart puts into the placement of each waiting pod of pods with required pod
// anti-affinity the Nodes it cannot start on (Placement.Apart, sorted): those whose
// topology domain holds a pod of held (the pods bound to a Node, finished or not yet) that
// one of its terms selects. Each distinct term is weighed once (a workload's pods share theirs).
func PlaceApart(pods, held []Pod, nodes []Node) {
	byName := make(map[string]*Node, len(nodes))
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	apart := map[string][]string{} // Nodes by term
	for i := range pods {
		p := &pods[i]
		if !p.Waits() {
			continue
		}
		for _, t := range p.AntiAffinity {
			key, _ := json.Marshal(t) // plain data: it cannot fail
			off, ok := apart[string(key)]
			if !ok {
				off = t.apart(held, nodes, byName)
				apart[string(key)] = off
			}
			for _, n := range off {
				if !slices.Contains(p.Placement.Apart, n) {
					p.Placement.Apart = append(p.Placement.Apart, n)
				}
			}
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
