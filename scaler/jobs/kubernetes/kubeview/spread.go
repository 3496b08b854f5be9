package kubeview

import (
	"maps"
	"slices"
)

// Topology spread, as rota reads it for a waiting pod: a constraint whose whenUnsatisfiable is
// DoNotSchedule lets the scheduler place the pod only where its topology domain (the value of
// the Node's topologyKey label: the Node itself for kubernetes.io/hostname, its zone for a
// zone key) would then hold at most maxSkew more of the pods the constraint selects than the
// domain that holds the fewest. Such a pod (a replica spread over servers) cannot take the free
// room of a server that already runs its share, so it asks only for the Nodes where it keeps
// the skew (Placement.Apart). The domains are those of every Node read, off ones included:
// the scheduler counts them so too, as a Node that is off keeps its labels. A ScheduleAnyway
// constraint only weighs the scheduler's score: it keeps the pod off nothing, and is not read.

// SpreadConstraint is one topology spread constraint of a pod, whenUnsatisfiable
// DoNotSchedule, as the scheduler applies it.
type SpreadConstraint struct {
	MaxSkew     int32
	TopologyKey string
	// Selector selects the pods counted, in the pod's namespace, matchLabelKeys joined with
	// the pod's own values (nil: none, as in Kubernetes).
	Selector *LabelSelector
	// Self: Selector selects the pod itself, which then counts in the domain it starts in.
	Self bool
	// MinDomains: with fewer domains than this, the fewest count as none (minDomains; 0: 1).
	MinDomains int32
	// AllNodes: every Node counts (nodeAffinityPolicy Ignore), not only those the pod's node
	// selector and required node affinity match (Honor, the default). HonorTaints: only Nodes
	// whose taints the pod tolerates count (nodeTaintsPolicy Honor; the default Ignore counts
	// every Node), those that go when a server wakes left out as in Placement.Fits.
	AllNodes, HonorTaints bool
}

type topologySpreadConstraint struct {
	MaxSkew            int32          `json:"maxSkew"`
	TopologyKey        string         `json:"topologyKey"`
	WhenUnsatisfiable  string         `json:"whenUnsatisfiable"`
	LabelSelector      *LabelSelector `json:"labelSelector"`
	MinDomains         *int32         `json:"minDomains"`
	NodeAffinityPolicy string         `json:"nodeAffinityPolicy"`
	NodeTaintsPolicy   string         `json:"nodeTaintsPolicy"`
	MatchLabelKeys     []string       `json:"matchLabelKeys"`
}

// spread are the DoNotSchedule constraints of a pod with labels, as the scheduler applies
// them. A maxSkew below 1 (the API server admits none) counts as 1.
func spread(constraints []topologySpreadConstraint, labels map[string]string) []SpreadConstraint {
	var out []SpreadConstraint
	for _, c := range constraints {
		if c.WhenUnsatisfiable != "DoNotSchedule" {
			continue
		}
		sc := SpreadConstraint{MaxSkew: max(c.MaxSkew, 1), TopologyKey: c.TopologyKey,
			Selector:    withLabelKeys(c.LabelSelector, c.MatchLabelKeys, nil, labels),
			AllNodes:    c.NodeAffinityPolicy == "Ignore",
			HonorTaints: c.NodeTaintsPolicy == "Honor"}
		if c.MinDomains != nil {
			sc.MinDomains = *c.MinDomains
		}
		sc.Self = sc.Selector != nil && sc.Selector.matches(labels)
		out = append(out, sc)
	}
	return out
}

// counts reports whether Node n counts for constraint c of a pod with placement pl.
func (c SpreadConstraint) counts(n Node, pl Placement) bool {
	if _, ok := n.Labels[c.TopologyKey]; !ok {
		return false
	}
	return (c.AllNodes || pl.selects(n)) && (!c.HonorTaints || pl.toleratesTaints(n))
}

// apart are the Nodes constraint c keeps a pod of namespace ns and placement pl off: those
// without its topology key, and those of a domain where the pod would put the count of the
// pods of held that c selects (the pod included, when it selects itself) more than maxSkew
// above that of the domain that holds the fewest.
func (c SpreadConstraint) apart(ns string, pl Placement, held []Pod, nodes []Node, byName map[string]*Node) []string {
	count := map[string]int{} // pods selected, by domain
	for _, n := range nodes {
		if c.counts(n, pl) {
			count[n.Labels[c.TopologyKey]] += 0
		}
	}
	for _, h := range held {
		n, ok := byName[h.NodeName]
		if !ok || h.Terminal() || h.Deleting || h.Namespace != ns || c.Selector == nil ||
			!c.Selector.matches(h.Labels) || !c.counts(*n, pl) {
			continue
		}
		count[n.Labels[c.TopologyKey]]++
	}
	fewest := 0
	if len(count) > 0 && len(count) >= int(c.MinDomains) {
		fewest = slices.Min(slices.Collect(maps.Values(count)))
	}
	self := 0
	if c.Self {
		self = 1
	}
	var out []string
	for _, n := range nodes {
		v, ok := n.Labels[c.TopologyKey]
		if !ok || count[v]+self-fewest > int(c.MaxSkew) {
			out = append(out, n.Name)
		}
	}
	return out
}
