package kubeview

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/rotahq/rota/internal/errtext"
)

// Dynamic resource allocation, as rota reads it for a running pod: the devices allocated to
// the ResourceClaims it runs with (status.allocation.devices.results), those of a GPU class
// being GPUs its Node holds. A waiting pod's claims are read in devices.go.

// HeldDevice is one device allocated to a ResourceClaim: the device class of the request it
// was allocated for, and the device (driver/pool/device, which names it in the cluster).
type HeldDevice struct {
	Class  string
	Device string
}

// AllocatedClaim is one ResourceClaim as a running pod's Node holds it: the devices allocated
// to it (none while it is not allocated).
type AllocatedClaim struct {
	Namespace, Name string
	Devices         []HeldDevice
}

type allocationResult struct {
	Request     string `json:"request"`
	Driver      string `json:"driver"`
	Pool        string `json:"pool"`
	Device      string `json:"device"`
	AdminAccess *bool  `json:"adminAccess"`
}

// ParseResourceClaimList reads one page of a ResourceClaimList answer, as ParseNodeList.
func ParseResourceClaimList(data []byte) ([]AllocatedClaim, string, error) {
	return parseList(data, "ResourceClaimList", "resourceclaim", parseAllocatedClaim)
}

func parseAllocatedClaim(data []byte) (AllocatedClaim, error) {
	var o struct {
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
		Spec   claimSpec `json:"spec"`
		Status struct {
			Allocation *struct {
				Devices struct {
					Results []allocationResult `json:"results"`
				} `json:"devices"`
			} `json:"allocation"`
		} `json:"status"`
	}
	if err := json.Unmarshal(data, &o); err != nil {
		return AllocatedClaim{}, fmt.Errorf("%w: %s", ErrBadAnswer, errtext.Of(err))
	}
	if o.Metadata.Name == "" || o.Metadata.Namespace == "" {
		return AllocatedClaim{}, fmt.Errorf("%w: resourceclaim without metadata.name or metadata.namespace", ErrBadAnswer)
	}
	c := AllocatedClaim{Namespace: o.Metadata.Namespace, Name: o.Metadata.Name}
	if o.Status.Allocation == nil {
		return c, nil
	}
	results := o.Status.Allocation.Devices.Results
	if len(results) > maxDeviceRequests {
		return AllocatedClaim{}, fmt.Errorf("%w: %d allocated devices, more than %d", ErrBadAnswer, len(results), maxDeviceRequests)
	}
	for i, r := range results {
		if r.AdminAccess != nil && *r.AdminAccess {
			continue // access for monitoring beside the device's owner: it takes nothing
		}
		if r.Driver == "" || r.Pool == "" || r.Device == "" {
			return AllocatedClaim{}, fmt.Errorf("%w: allocated device %d names no driver, pool or device", ErrBadAnswer, i)
		}
		class, ok := o.Spec.classOf(r.Request)
		if !ok {
			return AllocatedClaim{}, fmt.Errorf("%w: allocated device %d is for request %s, which the claim does not make", ErrBadAnswer, i, errtext.Quote(r.Request))
		}
		c.Devices = append(c.Devices, HeldDevice{Class: class, Device: r.Driver + "/" + r.Pool + "/" + r.Device})
	}
	return c, nil
}

// classOf is the device class of the claim's request named request: "name", or
// "name/subrequest" for one of a request's alternatives (firstAvailable). ok is false when
// the claim makes no such request, or it names no class.
func (c claimSpec) classOf(request string) (class string, ok bool) {
	name, sub, alternative := strings.Cut(request, "/")
	for _, r := range c.Devices.Requests {
		if r.Name != name {
			continue
		}
		s := r.Exactly
		if alternative {
			s = nil
			if i := slices.IndexFunc(r.FirstAvailable, func(s *deviceSubject) bool { return s != nil && s.Name == sub }); i >= 0 {
				s = r.FirstAvailable[i]
			}
		}
		if s == nil || s.DeviceClassName == "" {
			return "", false
		}
		return s.DeviceClassName, true
	}
	return "", false
}

// ClaimedGPUs are the GPUs (devices of a class of gpuClasses) each claim holds, by
// namespace/name; a claim that holds none is left out.
func ClaimedGPUs(claims []AllocatedClaim, gpuClasses []string) map[string][]string {
	out := map[string][]string{}
	for _, c := range claims {
		for _, d := range c.Devices {
			if slices.Contains(gpuClasses, d.Class) {
				key := c.Namespace + "/" + c.Name
				out[key] = append(out[key], d.Device)
			}
		}
	}
	return out
}

// ClaimsDevices reports whether a pod that holds its Node claims devices: only then are the
// ResourceClaims read for the Nodes' allocation (View.Claimed).
func ClaimsDevices(pods []Pod) bool {
	return slices.ContainsFunc(pods, func(p Pod) bool { return p.Holds() && len(p.ResourceClaims) > 0 })
}

// heldGPUs are the GPUs pod p holds through its allocated claims (claimed: View.Claimed),
// each once.
func (p Pod) heldGPUs(claimed map[string][]string) []string {
	var out []string
	for _, c := range p.ResourceClaims {
		if c.Claim == "" {
			continue // none made for it yet: it holds nothing
		}
		for _, g := range claimed[p.Namespace+"/"+c.Claim] {
			if !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	return out
}
