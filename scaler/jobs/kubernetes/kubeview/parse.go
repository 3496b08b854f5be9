package kubeview

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/rotahq/rota/internal/errtext"
)

// The parser reads only what rota uses of a Node or a pod, into structures of its own:
// quantities stay strings until quantity has checked them (the library's own parse of a
// quantity such as "1e-99999999" takes minutes), and a field rota does not read cannot fail a
// read.

// list is a list answer: its kind, the token for the next page, and the items, each read on
// its own so that a bad one is named.
type list struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Continue string `json:"continue"`
	} `json:"metadata"`
	Items *[]json.RawMessage `json:"items"`
}

type objectMeta struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace"`
	UID               string            `json:"uid"`
	ResourceVersion   string            `json:"resourceVersion"`
	Labels            map[string]string `json:"labels"`
	Annotations       map[string]string `json:"annotations"`
	OwnerReferences   []ownerReference  `json:"ownerReferences"`
	CreationTimestamp time.Time         `json:"creationTimestamp"`
	DeletionTimestamp *time.Time        `json:"deletionTimestamp"`
}

type ownerReference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
	Controller *bool  `json:"controller"`
}

type nodeObject struct {
	Metadata struct {
		objectMeta
		ManagedFields []managedFields `json:"managedFields"`
	} `json:"metadata"`
	Spec struct {
		Unschedulable bool    `json:"unschedulable"`
		Taints        []Taint `json:"taints"`
	} `json:"spec"`
	Status struct {
		Conditions  []condition `json:"conditions"`
		Allocatable quantities  `json:"allocatable"`
	} `json:"status"`
}

// managedFields is one entry of metadata.managedFields: a field manager and the fields it
// owns; rota reads whether they hold spec.unschedulable.
type managedFields struct {
	Manager  string `json:"manager"`
	FieldsV1 struct {
		Spec map[string]json.RawMessage `json:"f:spec"`
	} `json:"fieldsV1"`
}

type condition struct {
	Type   string `json:"type"`
	Status string `json:"status"`
	Reason string `json:"reason"`
}

// quantities are a resource list, each quantity as the API server wrote it.
type quantities map[string]string

type resources struct {
	Requests quantities `json:"requests"`
	Limits   quantities `json:"limits"`
}

type container struct {
	Name          string    `json:"name"`
	RestartPolicy string    `json:"restartPolicy"`
	Resources     resources `json:"resources"`
}

type volume struct {
	Name     string    `json:"name"`
	EmptyDir *struct{} `json:"emptyDir"`
	// PersistentVolumeClaim names the claim the volume mounts.
	PersistentVolumeClaim *struct {
		ClaimName string `json:"claimName"`
	} `json:"persistentVolumeClaim"`
}

type podSpec struct {
	NodeName     string            `json:"nodeName"`
	NodeSelector map[string]string `json:"nodeSelector"`
	Affinity     *struct {
		NodeAffinity *struct {
			Required *NodeSelector `json:"requiredDuringSchedulingIgnoredDuringExecution"`
		} `json:"nodeAffinity"`
		PodAntiAffinity *struct {
			Required []podAffinityTerm `json:"requiredDuringSchedulingIgnoredDuringExecution"`
		} `json:"podAntiAffinity"`
	} `json:"affinity"`
	TopologySpreadConstraints []topologySpreadConstraint `json:"topologySpreadConstraints"`
	Tolerations               []Toleration               `json:"tolerations"`
	Containers                []container                `json:"containers"`
	InitContainers            []container                `json:"initContainers"`
	Overhead                  quantities                 `json:"overhead"`
	Resources                 *resources                 `json:"resources"`
	ActiveDeadlineSeconds     *int64                     `json:"activeDeadlineSeconds"`
	Volumes                   []volume                   `json:"volumes"`
	ResourceClaims            []struct {
		Name                      string `json:"name"`
		ResourceClaimName         string `json:"resourceClaimName"`
		ResourceClaimTemplateName string `json:"resourceClaimTemplateName"`
	} `json:"resourceClaims"`
}

type podObject struct {
	Metadata objectMeta `json:"metadata"`
	Spec     podSpec    `json:"spec"`
	Status   struct {
		Phase      string      `json:"phase"`
		Conditions []condition `json:"conditions"`
		StartTime  *time.Time  `json:"startTime"`
		// ResourceClaimStatuses name the claim made for the pod from each template.
		ResourceClaimStatuses []struct {
			Name              string `json:"name"`
			ResourceClaimName string `json:"resourceClaimName"`
		} `json:"resourceClaimStatuses"`
	} `json:"status"`
}

func readList(data []byte, kind string) ([]json.RawMessage, string, error) {
	var l list
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, "", fmt.Errorf("%w: %s: %s", ErrBadAnswer, kind, errtext.Of(err))
	}
	if l.Kind != kind {
		return nil, "", fmt.Errorf("%w: asked for a %s, got kind %s", ErrBadAnswer, kind, errtext.Quote(l.Kind))
	}
	if l.Items == nil {
		return nil, "", fmt.Errorf("%w: %s without items", ErrBadAnswer, kind)
	}
	return *l.Items, l.Metadata.Continue, nil
}

// name says which item of a list failed: its namespace/name when that much reads.
func name(item json.RawMessage, i int) string {
	var o struct {
		Metadata struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"metadata"`
	}
	if json.Unmarshal(item, &o) != nil || o.Metadata.Name == "" {
		return fmt.Sprintf("item %d", i)
	}
	if o.Metadata.Namespace == "" {
		return errtext.Cut(o.Metadata.Name, errtext.Max)
	}
	return errtext.Cut(o.Metadata.Namespace+"/"+o.Metadata.Name, errtext.Max)
}

// ParseNodeList reads one page of a NodeList answer: its nodes and the token for the next page
// ("" on the last). One node that does not read fails the page.
func ParseNodeList(data []byte) ([]Node, string, error) {
	return parseList(data, "NodeList", "node", ParseNode)
}

// parseList reads one page of a list of kind, each item with parse; the first item that does
// not read fails the page, named (what: its kind in the error).
func parseList[T any](data []byte, kind, what string, parse func([]byte) (T, error)) ([]T, string, error) {
	items, cont, err := readList(data, kind)
	if err != nil {
		return nil, "", err
	}
	out := make([]T, 0, len(items))
	for i, item := range items {
		v, err := parse(item)
		if err != nil {
			return nil, "", fmt.Errorf("%s %s: %w", what, name(item, i), err)
		}
		out = append(out, v)
	}
	return out, cont, nil
}

// ParseNode reads one Node object.
func ParseNode(data []byte) (Node, error) {
	var o nodeObject
	if err := json.Unmarshal(data, &o); err != nil {
		return Node{}, fmt.Errorf("%w: %s", ErrBadAnswer, errtext.Of(err))
	}
	if o.Metadata.Name == "" {
		return Node{}, fmt.Errorf("%w: node without metadata.name", ErrBadAnswer)
	}
	n := Node{
		Name: o.Metadata.Name, ResourceVersion: o.Metadata.ResourceVersion, Labels: o.Metadata.Labels,
		Taints: o.Spec.Taints, Unschedulable: o.Spec.Unschedulable, DrainReason: o.Metadata.Annotations[DrainAnnotation],
	}
	for _, mf := range o.Metadata.ManagedFields {
		if _, ok := mf.FieldsV1.Spec["f:unschedulable"]; ok && !slices.Contains(n.CordonOwners, mf.Manager) {
			n.CordonOwners = append(n.CordonOwners, mf.Manager)
		}
	}
	for r, q := range o.Status.Allocatable {
		if !zero(q) {
			n.Allocatable = append(n.Allocatable, r)
		}
	}
	slices.Sort(n.Allocatable)
	for _, c := range o.Status.Conditions {
		if c.Type == "Ready" {
			n.Ready = c.Status == "True"
		}
	}
	return n, nil
}

// ParsePodList reads one page of a PodList answer, as ParseNodeList.
func ParsePodList(data []byte) ([]Pod, string, error) {
	return parseList(data, "PodList", "pod", ParsePod)
}

// ParsePod reads one Pod object, its requests included: a request that does not parse, is
// negative, out of range or (for GPUs) not whole fails it.
func ParsePod(data []byte) (Pod, error) {
	var o podObject
	if err := json.Unmarshal(data, &o); err != nil {
		return Pod{}, fmt.Errorf("%w: %s", ErrBadAnswer, errtext.Of(err))
	}
	md, spec := o.Metadata, o.Spec
	if md.Name == "" || md.Namespace == "" {
		return Pod{}, fmt.Errorf("%w: pod without metadata.name or metadata.namespace", ErrBadAnswer)
	}
	if len(spec.Containers) == 0 {
		return Pod{}, fmt.Errorf("%w: pod without spec.containers", ErrBadAnswer)
	}
	req, err := requests(spec)
	if err != nil {
		return Pod{}, fmt.Errorf("%w: %s", ErrBadAnswer, errtext.Of(err))
	}
	p := Pod{
		Namespace: md.Namespace, Name: md.Name, UID: md.UID, Labels: md.Labels,
		NodeName: spec.NodeName, Phase: o.Status.Phase, Deleting: md.DeletionTimestamp != nil,
		Mirror:       md.Annotations[mirrorAnnotation] != "",
		DoNotDisrupt: md.Annotations[DoNotDisrupt] == "true" || md.Annotations[KarpenterDoNotDisrupt] == "true",
		Requests:     req, Extended: extended(spec), Created: md.CreationTimestamp,
		Placement: Placement{Selector: spec.NodeSelector, Tolerations: spec.Tolerations},
	}
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			p.Claims = append(p.Claims, v.PersistentVolumeClaim.ClaimName)
		}
		if v.EmptyDir != nil {
			p.EmptyDirs = append(p.EmptyDirs, v.Name)
		}
	}
	for _, c := range spec.ResourceClaims {
		dc := DeviceClaim{Name: c.Name, Claim: c.ResourceClaimName, Template: c.ResourceClaimTemplateName}
		for _, st := range o.Status.ResourceClaimStatuses {
			if dc.Claim == "" && st.Name == c.Name {
				dc.Claim = st.ResourceClaimName
			}
		}
		p.ResourceClaims = append(p.ResourceClaims, dc)
	}
	if ref := controllerOf(md.OwnerReferences); ref != nil {
		p.Controller = ref.Kind
		if ref.Kind == "Job" && ref.APIVersion == "batch/v1" {
			p.JobName, p.JobUID = ref.Name, ref.UID
		}
	}
	if n, err := strconv.ParseInt(md.Annotations[indexFailureAnnotation], 10, 64); err == nil && n >= 0 {
		p.IndexFailures = &n
	}
	if o.Status.StartTime != nil {
		p.Started = *o.Status.StartTime
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && *d > 0 {
		p.Deadline = time.Duration(min(*d, int64(maxDeadline/time.Second))) * time.Second
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil {
		p.Placement.Affinity = a.NodeAffinity.Required
	}
	if a := spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		p.AntiAffinity = antiAffinity(a.PodAntiAffinity.Required, md.Namespace, md.Labels)
	}
	p.Spread = spread(spec.TopologySpreadConstraints, md.Labels)
	for _, c := range o.Status.Conditions {
		if c.Type == "PodScheduled" && c.Status == "False" && c.Reason == "Unschedulable" {
			p.Unschedulable = true
		}
	}
	return p, nil
}

// controllerOf is the owner reference that controls the pod (nil: a bare pod).
func controllerOf(refs []ownerReference) *ownerReference {
	for i := range refs {
		if refs[i].Controller != nil && *refs[i].Controller {
			return &refs[i]
		}
	}
	return nil
}

// maxDeadline bounds activeDeadlineSeconds so that it fits a time.Duration.
const maxDeadline = 100 * 365 * 24 * time.Hour

// ParseClaimVolume reads a PersistentVolumeClaim: the PersistentVolume it is bound to (""
// while it is bound to none).
func ParseClaimVolume(data []byte) (string, error) {
	var o struct {
		Kind string `json:"kind"`
		Spec struct {
			VolumeName string `json:"volumeName"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(data, &o); err != nil {
		return "", fmt.Errorf("%w: %s", ErrBadAnswer, errtext.Of(err))
	}
	if o.Kind != "PersistentVolumeClaim" {
		return "", fmt.Errorf("%w: asked for a PersistentVolumeClaim, got kind %s", ErrBadAnswer, errtext.Quote(o.Kind))
	}
	return o.Spec.VolumeName, nil
}

// ParseVolumeAffinity reads a PersistentVolume: the Nodes it can be used from, its required
// node affinity (a local volume names its Node); nil when it names none (any Node).
func ParseVolumeAffinity(data []byte) (*NodeSelector, error) {
	var o struct {
		Kind string `json:"kind"`
		Spec struct {
			NodeAffinity *struct {
				Required *NodeSelector `json:"required"`
			} `json:"nodeAffinity"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrBadAnswer, errtext.Of(err))
	}
	if o.Kind != "PersistentVolume" {
		return nil, fmt.Errorf("%w: asked for a PersistentVolume, got kind %s", ErrBadAnswer, errtext.Quote(o.Kind))
	}
	if o.Spec.NodeAffinity == nil {
		return nil, nil
	}
	return o.Spec.NodeAffinity.Required, nil
}
