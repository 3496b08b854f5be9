package kubeview

import (
	"errors"
	"slices"
	"time"
)

// ErrBadAnswer is wrapped by every parse error: the API server answered something this package
// cannot read. A read with one such object fails whole (no action on a partial view).
var ErrBadAnswer = errors.New("unexpected kubernetes api answer")

// Keys rota sets on Nodes and reads on pods. rota has no domain of its own, so its keys sit
// under its GitHub organisation's (rotahq.github.io), as Kubernetes asks of every project.
const (
	// DrainAnnotation is on every Node rota cordoned: jobs.Marker and the drain's reason. A
	// cordon without it, or one rota's field manager does not own (Node.CordonedByRota), was
	// made by someone else, and rota never undoes it.
	DrainAnnotation = "rotahq.github.io/drain"
	// FieldManager is the field manager of every write rota makes: the API server records it
	// in the Node's managedFields as the owner of the fields rota set, so a cordon that
	// someone else set since (kubectl cordon: "kubectl-cordon") is told from rota's.
	FieldManager = "rota"
	// PoweredOffTaint (effect NoSchedule) is on every Node rota powered off, so nothing is
	// placed on it; rota removes it once the node is ready again.
	PoweredOffTaint = "rotahq.github.io/powered-off"
	// DoNotDisrupt on a pod ("true") keeps it where it runs: no drain evicts it, no move takes
	// it, so its server stays on. KarpenterDoNotDisrupt is honoured the same way.
	DoNotDisrupt          = "rotahq.github.io/do-not-disrupt"
	KarpenterDoNotDisrupt = "karpenter.sh/do-not-disrupt"
	// GPUResource is the extended resource NVIDIA GPUs are requested as; GPUResources lists
	// every resource counted as whole GPUs.
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
	podRunning   = "Running"
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
	// CordonOwners are the field managers that own spec.unschedulable (its managedFields).
	CordonOwners []string
	// Allocatable are the resources the Node's status offers (a quantity above zero), as its
	// kubelet last reported them (a Node that is off keeps its last report).
	Allocatable []string
	// Ready is the node's Ready condition (the kubelet reports in).
	Ready bool
	// Devices are the device classes whose devices its ResourceSlices offer (see
	// Node.OfferDevices), sorted; filled only when a waiting pod asks for such a class.
	Devices []string
}

// CordonedByRota reports whether the Node's cordon is rota's: cordoned, rota's annotation on
// it, and rota's field manager the only owner of spec.unschedulable. Why the owner too: rota's
// annotation outlives a `kubectl uncordon`, and a later `kubectl cordon` by a person would
// look exactly like rota's drain; the API server then records kubectl as the field's owner.
// A cordon whose owner cannot be read (managedFields removed) is not rota's: rota would rather
// leave its own cordon in place than lift a person's.
func (n Node) CordonedByRota() bool {
	return n.Unschedulable && n.DrainReason != "" && len(n.CordonOwners) > 0 &&
		!slices.ContainsFunc(n.CordonOwners, func(m string) bool { return m != FieldManager })
}

// CordonedByPerson reports whether the Node is cordoned, and not by rota (see CordonedByRota):
// rota never drains, resumes nor moves pods off such a Node, and never lifts that cordon.
func (n Node) CordonedByPerson() bool { return n.Unschedulable && !n.CordonedByRota() }

// StaleDrain reports whether rota's annotation describes a cordon that is no longer rota's
// (lifted, or taken over, by someone else). The annotation is then ignored, and the next
// Drain or Resume of the Node replaces or removes it (a read writes nothing).
func (n Node) StaleDrain() bool { return n.DrainReason != "" && !n.CordonedByRota() }

// Offers reports whether the Node's status offers every resource of rs.
func (n Node) Offers(rs []string) bool {
	for _, r := range rs {
		if !slices.Contains(n.Allocatable, r) {
			return false
		}
	}
	return true
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
// whole GPUs (of every resource of GPUResources together).
type Requests struct {
	MilliCPU int64
	Memory   int64
	GPUs     int64
}

// Pod is a pod as rota reads it.
type Pod struct {
	Namespace, Name, UID string
	Labels               map[string]string
	// NodeName is the Node it is bound to ("" while pending).
	NodeName string
	Phase    string
	// Deleting: a deletion is under way (the pod still runs until its grace period ends).
	Deleting bool
	// Controller is the kind of the pod's controlling owner ("" for a bare pod); JobName and
	// JobUID that owner's name and UID when it is a batch/v1 Job.
	Controller      string
	JobName, JobUID string
	// JobOutlives: its Job lives on, and starts it again, when a move evicts it (see MarkJobs);
	// false until the Job is read, so a Job's pod is never moved before. IndexFailures are the
	// failures of its index so far, in a Job with backoffLimitPerIndex (nil: not said).
	JobOutlives   bool
	IndexFailures *int64
	// Mirror: a static pod's mirror. DoNotDisrupt: either do-not-disrupt annotation is "true".
	Mirror       bool
	DoNotDisrupt bool
	// Unschedulable: the scheduler found no node for it (condition PodScheduled, reason
	// Unschedulable).
	Unschedulable bool
	Requests      Requests
	// Claims are the PersistentVolumeClaims its volumes mount: such a pod may be tied to its
	// Node by its volume (a local PersistentVolume), which rota does not read.
	Claims []string
	// ResourceClaims are the devices it claims through dynamic resource allocation
	// (spec.resourceClaims): an allocated claim may hold it to its Node's devices, so such a
	// pod is tied like one with a volume claim; of a running pod's, only the GPUs they hold
	// are read (View.Claimed). A waiting pod's claims are read (Pod.AddDevices) for its shape
	// and where it can run.
	ResourceClaims []DeviceClaim
	// EmptyDirs are its emptyDir volumes: their data is lost with the pod, so, as kubectl
	// drain without --delete-emptydir-data, neither a drain nor a move evicts it unless
	// jobs.kubernetes.delete_emptydir_data allows it (see Pod.losesData).
	EmptyDirs []string
	// Budget, when a PodDisruptionBudget keeps the pod from eviction now, says which (see
	// MarkBudgets): a move of it is refused, naming it. Set only by a whole read (Manager.Read).
	Budget string
	// Extended are the resources it requests that rota does not model (every one but cpu,
	// memory, ephemeral-storage, hugepages-* and nvidia.com/gpu), sorted: amd.com/gpu,
	// gpu.intel.com/i915, nvidia.com/mig-1g.5gb, a NIC's virtual functions ...
	Extended []string
	Created  time.Time
	Started  time.Time
	// Deadline is spec.activeDeadlineSeconds (0: none).
	Deadline  time.Duration
	Placement Placement
	// AntiAffinity are its required pod anti-affinity terms, Spread its topology spread
	// constraints that the scheduler must not break (see PlaceApart).
	AntiAffinity []PodTerm
	Spread       []SpreadConstraint
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
	// Volumes are the required node affinities of the PersistentVolumes its claims are bound
	// to (a local volume's names its Node): the pod can start only where each one matches.
	// Filled for waiting pods (Manager.Demand), which the pod object alone does not tell.
	Volumes []NodeSelector `json:",omitempty"`
	// Devices are the device classes rota does not count as GPUs that its resource claims ask
	// for, sorted: the pod can start only on a Node that offers each (Node.Devices). Filled
	// for waiting pods, as Volumes.
	Devices []string `json:",omitempty"`
	// Apart are the Nodes its required pod anti-affinity or topology spread keeps it off,
	// sorted (see PlaceApart). Filled for waiting pods, as Volumes.
	Apart []string `json:",omitempty"`
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
