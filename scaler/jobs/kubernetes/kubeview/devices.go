package kubeview

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

	"github.com/rotahq/rota/internal/errtext"
)

// Dynamic resource allocation (resource.k8s.io/v1), as rota reads it for a waiting pod: the
// device requests of its claims (a ResourceClaim, or the ResourceClaimTemplate one is made
// from), which of them are GPUs (jobs.kubernetes.gpu_device_classes), and for the other device
// classes which Nodes offer their driver's devices (ResourceSlices, and the driver a
// DeviceClass's selectors name).

// DeviceClaim is one entry of a pod's spec.resourceClaims.
type DeviceClaim struct {
	// Name is the pod's own name for the claim.
	Name string
	// Claim is the ResourceClaim it uses: named by the pod, or made for it from Template (as
	// status.resourceClaimStatuses names it); "" while none was made yet.
	Claim string
	// Template is the ResourceClaimTemplate the claim is made from ("" when the pod names one).
	Template string
}

// DeviceRequest is one request of a claim: Count devices of device class Class.
// allocationMode All (every matching device of the Node) counts as one: rota cannot tell
// how many devices a server has before it runs.
type DeviceRequest struct {
	Class string
	Count int64
}

// maxDeviceRequests bounds the requests read from one claim (the API allows 32).
const maxDeviceRequests = 128

type deviceRequest struct {
	Name           string           `json:"name"`
	Exactly        *deviceSubject   `json:"exactly"`
	FirstAvailable []*deviceSubject `json:"firstAvailable"`
}

type deviceSubject struct {
	Name            string `json:"name"` // of an alternative (firstAvailable)
	DeviceClassName string `json:"deviceClassName"`
	AllocationMode  string `json:"allocationMode"`
	Count           *int64 `json:"count"`
}

type claimSpec struct {
	Devices struct {
		Requests []deviceRequest `json:"requests"`
	} `json:"devices"`
}

// ParseResourceClaim reads a ResourceClaim: its device requests.
func ParseResourceClaim(data []byte) ([]DeviceRequest, error) {
	var o struct {
		Kind string    `json:"kind"`
		Spec claimSpec `json:"spec"`
	}
	if err := unmarshalKind(data, &o, &o.Kind, "ResourceClaim"); err != nil {
		return nil, err
	}
	return o.Spec.requests()
}

// ParseResourceClaimTemplate reads a ResourceClaimTemplate: the device requests of the claim
// made from it.
func ParseResourceClaimTemplate(data []byte) ([]DeviceRequest, error) {
	var o struct {
		Kind string `json:"kind"`
		Spec struct {
			Spec claimSpec `json:"spec"`
		} `json:"spec"`
	}
	if err := unmarshalKind(data, &o, &o.Kind, "ResourceClaimTemplate"); err != nil {
		return nil, err
	}
	return o.Spec.Spec.requests()
}

// unmarshalKind reads data into o and wants *kind to be want.
func unmarshalKind(data []byte, o any, kind *string, want string) error {
	if err := json.Unmarshal(data, o); err != nil {
		return fmt.Errorf("%w: %s", ErrBadAnswer, errtext.Of(err))
	}
	if *kind != want {
		return fmt.Errorf("%w: asked for a %s, got kind %s", ErrBadAnswer, want, errtext.Quote(*kind))
	}
	return nil
}

// requests are the claim's device requests. A request with alternatives (firstAvailable)
// counts as its first, the one the scheduler tries first. A count that is not positive, past
// maxGPUs, or a request that names no device class fails the read.
func (c claimSpec) requests() ([]DeviceRequest, error) {
	rs := c.Devices.Requests
	if len(rs) > maxDeviceRequests {
		return nil, fmt.Errorf("%w: %d device requests, more than %d", ErrBadAnswer, len(rs), maxDeviceRequests)
	}
	out := make([]DeviceRequest, 0, len(rs))
	for i, r := range rs {
		s := r.Exactly
		if s == nil && len(r.FirstAvailable) > 0 {
			s = r.FirstAvailable[0]
		}
		if s == nil || s.DeviceClassName == "" {
			return nil, fmt.Errorf("%w: device request %d (%s) names no device class", ErrBadAnswer, i, errtext.Quote(r.Name))
		}
		n := int64(1)
		if s.AllocationMode != "All" && s.Count != nil {
			n = *s.Count
		}
		if n <= 0 || n > maxGPUs {
			return nil, fmt.Errorf("%w: device request %d (%s) counts %d devices", ErrBadAnswer, i, errtext.Quote(r.Name), n)
		}
		out = append(out, DeviceRequest{Class: s.DeviceClassName, Count: n})
	}
	return out, nil
}

// AddDevices puts the device requests of pod p's claims into what it asks: those of a class
// of gpuClasses are whole GPUs of its shape (Requests.GPUs), and every other class joins
// Placement.Devices (the pod starts only where a Node offers it). GPUs past maxGPUs fail.
func (p *Pod) AddDevices(reqs []DeviceRequest, gpuClasses []string) error {
	for _, r := range reqs {
		if !slices.Contains(gpuClasses, r.Class) {
			if !slices.Contains(p.Placement.Devices, r.Class) {
				p.Placement.Devices = append(p.Placement.Devices, r.Class)
				slices.Sort(p.Placement.Devices)
			}
			continue
		}
		if p.Requests.GPUs+r.Count > maxGPUs {
			return fmt.Errorf("pod %s: GPU requests add up past %d", p.ID(), maxGPUs)
		}
		p.Requests.GPUs += r.Count
	}
	return nil
}

// ResourceSlice is one ResourceSlice as rota reads it: which driver's devices it offers (a
// slice with none offers nothing), and on which Nodes: the Node it names, every Node (allNodes,
// or each device naming its own: perDeviceNodeSelection, taken as every Node), or those its
// node selector matches.
type ResourceSlice struct {
	Driver   string
	NodeName string
	AllNodes bool
	Selector *NodeSelector
	Devices  int
}

// ParseResourceSliceList reads one page of a ResourceSliceList answer, as ParseNodeList.
func ParseResourceSliceList(data []byte) ([]ResourceSlice, string, error) {
	return parseList(data, "ResourceSliceList", "resourceslice", parseResourceSlice)
}

func parseResourceSlice(data []byte) (ResourceSlice, error) {
	var o struct {
		Spec struct {
			Driver                 string            `json:"driver"`
			NodeName               string            `json:"nodeName"`
			AllNodes               bool              `json:"allNodes"`
			PerDeviceNodeSelection bool              `json:"perDeviceNodeSelection"`
			NodeSelector           *NodeSelector     `json:"nodeSelector"`
			Devices                []json.RawMessage `json:"devices"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(data, &o); err != nil {
		return ResourceSlice{}, fmt.Errorf("%w: %s", ErrBadAnswer, errtext.Of(err))
	}
	s := o.Spec
	if s.Driver == "" {
		return ResourceSlice{}, fmt.Errorf("%w: resourceslice without spec.driver", ErrBadAnswer)
	}
	return ResourceSlice{Driver: s.Driver, NodeName: s.NodeName, AllNodes: s.AllNodes || s.PerDeviceNodeSelection,
		Selector: s.NodeSelector, Devices: len(s.Devices)}, nil
}

// offers reports whether slice s offers devices on node n.
func (s ResourceSlice) offers(n Node) bool {
	switch {
	case s.Devices == 0:
		return false
	case s.AllNodes:
		return true
	case s.NodeName != "":
		return s.NodeName == n.Name
	case s.Selector != nil:
		return s.Selector.matches(n)
	}
	return false
}

// driverSelector is the driver a DeviceClass's CEL selector names: device.driver == "...".
var driverSelector = regexp.MustCompile(`device\.driver\s*==\s*["']([^"']+)["']`)

// ParseDeviceClassDriver reads a DeviceClass: the driver its selectors name
// (device.driver == "gpu.example.com"), "" when none does. rota does not evaluate CEL: the
// rest of a selector (attributes, capacity) is not weighed.
func ParseDeviceClassDriver(data []byte) (string, error) {
	var o struct {
		Kind string `json:"kind"`
		Spec struct {
			Selectors []struct {
				CEL *struct {
					Expression string `json:"expression"`
				} `json:"cel"`
			} `json:"selectors"`
		} `json:"spec"`
	}
	if err := unmarshalKind(data, &o, &o.Kind, "DeviceClass"); err != nil {
		return "", err
	}
	for _, s := range o.Spec.Selectors {
		if s.CEL == nil {
			continue
		}
		if m := driverSelector.FindStringSubmatch(s.CEL.Expression); m != nil {
			return m[1], nil
		}
	}
	return "", nil
}

// OfferDevices fills each Node's Devices: the device classes of drivers (class to driver; ""
// for a class whose driver rota could not read) that a slice offers on it. A class of unknown
// driver is offered by every Node any slice offers devices on.
func OfferDevices(nodes []Node, offered []ResourceSlice, drivers map[string]string) {
	for i := range nodes {
		n := &nodes[i]
		n.Devices = nil
		for class, driver := range drivers {
			if slices.ContainsFunc(offered, func(s ResourceSlice) bool {
				return (driver == "" || s.Driver == driver) && s.offers(*n)
			}) {
				n.Devices = append(n.Devices, class)
			}
		}
		slices.Sort(n.Devices)
	}
}
