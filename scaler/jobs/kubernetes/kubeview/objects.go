package kubeview

import (
	"errors"
	"time"
)

// ErrBadAnswer is wrapped by every parse error: the API server answered something this package
// cannot read. A read with one such object fails whole (no action on a partial view).
var ErrBadAnswer = errors.New("unexpected kubernetes api answer")

// Keys rota sets on Nodes and reads on pods. rota has no domain of its own, so its keys sit
// under its GitHub organisation's (rotahq.github.io), as Kubernetes asks of every project.
const (
	// DrainAnnotation is on every Node rota cordoned: jobs.Marker and the drain's reason. A
	// cordon without it was made by a person, and rota never undoes it.
	DrainAnnotation = "rotahq.github.io/drain"
	// PoweredOffTaint (effect NoSchedule) is on every Node rota powered off, so nothing is
	// placed on it; rota removes it once the node is ready again.
	PoweredOffTaint = "rotahq.github.io/powered-off"
	// DoNotDisrupt on a pod ("true") keeps it where it runs: no drain evicts it, no move takes
	// it, so its server stays on. KarpenterDoNotDisrupt is honoured the same way.
	DoNotDisrupt          = "rotahq.github.io/do-not-disrupt"
	KarpenterDoNotDisrupt = "karpenter.sh/do-not-disrupt"
	// GPUResource is the extended resource GPUs are requested as.
	GPUResource = "nvidia.com/gpu"
	// mirrorAnnotation marks a static pod's mirror (the kubelet runs it; the API cannot evict it).
	mirrorAnnotation = "kubernetes.io/config.mirror"
)

// Words of the Kubernetes API this package reads (k8s.io/api/core/v1 spells them the same;
// this package links no Kubernetes library but the quantity parser, so that its fuzz targets
// stay small).
const (
	NoSchedule       = "NoSchedule"
	PreferNoSchedule = "PreferNoSchedule"
	NoExecute        = "NoExecute"

	podPending   = "Pending"
	podSucceeded = "Succeeded"
	podFailed    = "Failed"
)

// Node is a Kubernetes Node as rota reads it.
type Node struct {
	Name            string
	ResourceVersion string
	Labels          map[string]string
	Taints          []Taint
	// Unschedulable is the cordon; DrainReason rota's annotation ("" when rota did not cordon).
	Unschedulable bool
	DrainReason   string
	// Ready is the node's Ready condition (the kubelet reports in).
	Ready bool
}

// Taint is one of a Node's taints, as the API writes it (a patch writes the list back whole).
type Taint struct {
	Key       string     `json:"key"`
	Value     string     `json:"value,omitempty"`
	Effect    string     `json:"effect"`
	TimeAdded *time.Time `json:"timeAdded,omitempty"`
}

// PoweredOff reports whether the node carries rota's powered-off taint.
func (n Node) PoweredOff() bool {
	for _, t := range n.Taints {
		if t.Key == PoweredOffTaint {
			return true
		}
	}
	return false
}

// Requests are what a pod asks of its server: CPU in thousandths of a core, memory in bytes,
// whole GPUs.
type Requests struct {
	MilliCPU int64
	Memory   int64
	GPUs     int64
}

// Pod is a pod as rota reads it.
type Pod struct {
	Namespace, Name, UID string
	// NodeName is the Node it is bound to ("" while pending).
	NodeName string
	Phase    string
	// Deleting: a deletion is under way (the pod still runs until its grace period ends).
	Deleting bool
	// Controller is the kind of the pod's controlling owner ("" for a bare pod).
	Controller string
	// Mirror: a static pod's mirror. DoNotDisrupt: either do-not-disrupt annotation is "true".
	Mirror       bool
	DoNotDisrupt bool
	// Unschedulable: the scheduler found no node for it (condition PodScheduled, reason
	// Unschedulable).
	Unschedulable bool
	Requests      Requests
	Created       time.Time
	Started       time.Time
	// Deadline is spec.activeDeadlineSeconds (0: none).
	Deadline  time.Duration
	Placement Placement
}

// ID is how rota names the pod: namespace/name.
func (p Pod) ID() string { return p.Namespace + "/" + p.Name }

// Terminal reports whether the pod has finished (it holds nothing on its node).
func (p Pod) Terminal() bool { return p.Phase == podSucceeded || p.Phase == podFailed }

// Placement is what a pod asks of the Node it runs on: the scheduler's hard constraints.
type Placement struct {
	Selector map[string]string
	// Affinity is the required node affinity (nil: none).
	Affinity    *NodeSelector
	Tolerations []Toleration
}

// NodeSelector is a required node affinity: its terms are ORed.
type NodeSelector struct {
	Terms []SelectorTerm `json:"nodeSelectorTerms"`
}

// SelectorTerm is one term: its requirements are ANDed.
type SelectorTerm struct {
	MatchExpressions []Requirement `json:"matchExpressions"`
	MatchFields      []Requirement `json:"matchFields"`
}

// Requirement is one requirement on a label (or, in MatchFields, on metadata.name).
type Requirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values"`
}

// Toleration is one of a pod's tolerations.
type Toleration struct {
	Key      string `json:"key"`
	Operator string `json:"operator"`
	Value    string `json:"value"`
	Effect   string `json:"effect"`
}
