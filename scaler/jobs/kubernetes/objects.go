package kubernetes

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	GPUResource corev1.ResourceName = "nvidia.com/gpu"
	// mirrorAnnotation marks a static pod's mirror (the kubelet runs it; the API cannot evict it).
	mirrorAnnotation = "kubernetes.io/config.mirror"
)

// Node is a Kubernetes Node as rota reads it.
type Node struct {
	Name            string
	ResourceVersion string
	Labels          map[string]string
	Taints          []corev1.Taint
	// Unschedulable is the cordon; DrainReason rota's annotation ("" when rota did not cordon).
	Unschedulable bool
	DrainReason   string
	// Ready is the node's Ready condition (the kubelet reports in).
	Ready bool
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
	Phase    corev1.PodPhase
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
func (p Pod) Terminal() bool {
	return p.Phase == corev1.PodSucceeded || p.Phase == corev1.PodFailed
}

// Placement is what a pod asks of the Node it runs on: the scheduler's hard constraints.
type Placement struct {
	Selector map[string]string
	// Affinity is the required node affinity (nil: none).
	Affinity    *corev1.NodeSelector
	Tolerations []corev1.Toleration
}

// list is a list answer: its kind, the token for the next page, and the items, each read on
// its own so that a bad one is named.
type list struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Continue string `json:"continue"`
	} `json:"metadata"`
	Items *[]json.RawMessage `json:"items"`
}

// meta is just enough of an object to name it in an error.
type meta struct {
	Metadata struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"metadata"`
}

func readList(data []byte, kind string) ([]json.RawMessage, string, error) {
	var l list
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, "", fmt.Errorf("%w: %s: %v", ErrBadAnswer, kind, err)
	}
	if l.Kind != kind {
		return nil, "", fmt.Errorf("%w: asked for a %s, got kind %q", ErrBadAnswer, kind, l.Kind)
	}
	if l.Items == nil {
		return nil, "", fmt.Errorf("%w: %s without items", ErrBadAnswer, kind)
	}
	return *l.Items, l.Metadata.Continue, nil
}

// name says which item of a list failed: its namespace/name when that much reads.
func name(item json.RawMessage, i int) string {
	var m meta
	if json.Unmarshal(item, &m) != nil || m.Metadata.Name == "" {
		return fmt.Sprintf("item %d", i)
	}
	if m.Metadata.Namespace == "" {
		return m.Metadata.Name
	}
	return m.Metadata.Namespace + "/" + m.Metadata.Name
}

// ParseNodeList reads one page of a NodeList answer: its nodes and the token for the next page
// ("" on the last). One node that does not read fails the page.
func ParseNodeList(data []byte) ([]Node, string, error) {
	items, cont, err := readList(data, "NodeList")
	if err != nil {
		return nil, "", err
	}
	nodes := make([]Node, 0, len(items))
	for i, item := range items {
		n, err := ParseNode(item)
		if err != nil {
			return nil, "", fmt.Errorf("node %s: %w", name(item, i), err)
		}
		nodes = append(nodes, n)
	}
	return nodes, cont, nil
}

// ParseNode reads one Node object.
func ParseNode(data []byte) (Node, error) {
	var o corev1.Node
	if err := json.Unmarshal(data, &o); err != nil {
		return Node{}, fmt.Errorf("%w: %v", ErrBadAnswer, err)
	}
	if o.Name == "" {
		return Node{}, fmt.Errorf("%w: node without metadata.name", ErrBadAnswer)
	}
	n := Node{
		Name: o.Name, ResourceVersion: o.ResourceVersion, Labels: o.Labels, Taints: o.Spec.Taints,
		Unschedulable: o.Spec.Unschedulable, DrainReason: o.Annotations[DrainAnnotation],
	}
	for _, c := range o.Status.Conditions {
		if c.Type == corev1.NodeReady {
			n.Ready = c.Status == corev1.ConditionTrue
		}
	}
	return n, nil
}

// ParsePodList reads one page of a PodList answer, as ParseNodeList.
func ParsePodList(data []byte) ([]Pod, string, error) {
	items, cont, err := readList(data, "PodList")
	if err != nil {
		return nil, "", err
	}
	pods := make([]Pod, 0, len(items))
	for i, item := range items {
		p, err := ParsePod(item)
		if err != nil {
			return nil, "", fmt.Errorf("pod %s: %w", name(item, i), err)
		}
		pods = append(pods, p)
	}
	return pods, cont, nil
}

// ParsePod reads one Pod object, its requests included: a request that is negative, out of
// range or (for GPUs) not whole fails it.
func ParsePod(data []byte) (Pod, error) {
	var o corev1.Pod
	if err := json.Unmarshal(data, &o); err != nil {
		return Pod{}, fmt.Errorf("%w: %v", ErrBadAnswer, err)
	}
	if o.Name == "" || o.Namespace == "" {
		return Pod{}, fmt.Errorf("%w: pod without metadata.name or metadata.namespace", ErrBadAnswer)
	}
	if len(o.Spec.Containers) == 0 {
		return Pod{}, fmt.Errorf("%w: pod without spec.containers", ErrBadAnswer)
	}
	req, err := requests(o.Spec)
	if err != nil {
		return Pod{}, fmt.Errorf("%w: %v", ErrBadAnswer, err)
	}
	p := Pod{
		Namespace: o.Namespace, Name: o.Name, UID: string(o.UID),
		NodeName: o.Spec.NodeName, Phase: o.Status.Phase, Deleting: o.DeletionTimestamp != nil,
		Mirror:       o.Annotations[mirrorAnnotation] != "",
		DoNotDisrupt: o.Annotations[DoNotDisrupt] == "true" || o.Annotations[KarpenterDoNotDisrupt] == "true",
		Requests:     req, Created: o.CreationTimestamp.Time,
		Placement: Placement{Selector: o.Spec.NodeSelector, Tolerations: o.Spec.Tolerations},
	}
	if ref := controllerOf(o.OwnerReferences); ref != nil {
		p.Controller = ref.Kind
	}
	if o.Status.StartTime != nil {
		p.Started = o.Status.StartTime.Time
	}
	if d := o.Spec.ActiveDeadlineSeconds; d != nil && *d > 0 {
		p.Deadline = time.Duration(min(*d, int64(maxDeadline/time.Second))) * time.Second
	}
	if a := o.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		p.Placement.Affinity = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	for _, c := range o.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			p.Unschedulable = true
		}
	}
	return p, nil
}

// controllerOf is the owner reference that controls the pod (nil: a bare pod).
func controllerOf(refs []metav1.OwnerReference) *metav1.OwnerReference {
	for i := range refs {
		if refs[i].Controller != nil && *refs[i].Controller {
			return &refs[i]
		}
	}
	return nil
}

// maxDeadline bounds activeDeadlineSeconds so that it fits a time.Duration.
const maxDeadline = 100 * 365 * 24 * time.Hour

// Bounds on one pod's requests: beyond them a request is taken as unreadable, not as a shape.
const (
	maxMilliCPU = 1 << 40
	maxMemory   = 1 << 60
	maxGPUs     = 1 << 20
)

// requests is what the scheduler reserves for a pod, as Kubernetes computes it: the larger of
// its containers together (with the sidecars, init containers that keep running) and of its
// largest init container (with the sidecars started before it), plus the pod's overhead. A
// container that gives limits and no requests asks its limits (the API server's default). CPU
// and memory set for the whole pod (spec.resources) replace the containers' own.
func requests(spec corev1.PodSpec) (Requests, error) {
	var out Requests
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, GPUResource} {
		v, err := request(spec, r)
		if err != nil {
			return Requests{}, err
		}
		switch r {
		case corev1.ResourceCPU:
			out.MilliCPU = v
		case corev1.ResourceMemory:
			out.Memory = v
		default:
			out.GPUs = v
		}
	}
	return out, nil
}

func request(spec corev1.PodSpec, r corev1.ResourceName) (int64, error) {
	var sum, sidecars, initMax int64
	add := func(a, b int64) (int64, error) {
		if a+b > limit(r) {
			return 0, fmt.Errorf("%s requests add up past %d", r, limit(r))
		}
		return a + b, nil
	}
	for i, c := range spec.InitContainers {
		v, err := containerRequest(c.Resources, r)
		if err != nil {
			return 0, fmt.Errorf("spec.initContainers[%d] (%s): %w", i, c.Name, err)
		}
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			if sidecars, err = add(sidecars, v); err != nil {
				return 0, err
			}
			continue
		}
		during, err := add(sidecars, v)
		if err != nil {
			return 0, err
		}
		initMax = max(initMax, during)
	}
	sum = sidecars
	for i, c := range spec.Containers {
		v, err := containerRequest(c.Resources, r)
		if err != nil {
			return 0, fmt.Errorf("spec.containers[%d] (%s): %w", i, c.Name, err)
		}
		if sum, err = add(sum, v); err != nil {
			return 0, err
		}
	}
	total := max(sum, initMax)
	if r != GPUResource && spec.Resources != nil {
		if q, ok := spec.Resources.Requests[r]; ok {
			v, err := quantity(q, r)
			if err != nil {
				return 0, fmt.Errorf("spec.resources: %w", err)
			}
			total = v
		}
	}
	if q, ok := spec.Overhead[r]; ok {
		v, err := quantity(q, r)
		if err != nil {
			return 0, fmt.Errorf("spec.overhead: %w", err)
		}
		return add(total, v)
	}
	return total, nil
}

func containerRequest(res corev1.ResourceRequirements, r corev1.ResourceName) (int64, error) {
	q, ok := res.Requests[r]
	if !ok {
		if q, ok = res.Limits[r]; !ok {
			return 0, nil
		}
	}
	return quantity(q, r)
}

func limit(r corev1.ResourceName) int64 {
	switch r {
	case corev1.ResourceCPU:
		return maxMilliCPU
	case corev1.ResourceMemory:
		return maxMemory
	}
	return maxGPUs
}

// quantity reads one request: CPU in thousandths of a core, memory in bytes, GPUs whole.
func quantity(q resource.Quantity, r corev1.ResourceName) (int64, error) {
	if q.Sign() < 0 {
		return 0, fmt.Errorf("%s request %s is negative", r, q.String())
	}
	bound := limit(r)
	if r == corev1.ResourceCPU {
		bound /= 1000 // q counts cores
	}
	if q.CmpInt64(bound) > 0 {
		return 0, fmt.Errorf("%s request %s is out of range", r, q.String())
	}
	switch r {
	case corev1.ResourceCPU:
		return q.MilliValue(), nil
	case GPUResource:
		if q.MilliValue()%1000 != 0 {
			return 0, fmt.Errorf("%s request %s is not a whole number", r, q.String())
		}
	}
	return q.Value(), nil
}
