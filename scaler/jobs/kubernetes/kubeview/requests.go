package kubeview

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rotahq/rota/internal/errtext"
)

// The resources rota reads.
const (
	cpu    = "cpu"
	memory = "memory"
)

// GPUResources are the extended resources that each count one whole GPU: NVIDIA's, AMD's and
// Intel's device plugins (the i915 and xe drivers). A MIG slice (nvidia.com/mig-1g.5gb) or a
// shared GPU (nvidia.com/gpu.shared) is not a whole GPU: it counts none (see extended).
var GPUResources = []string{GPUResource, "amd.com/gpu", "gpu.intel.com/i915", "gpu.intel.com/xe"}

// modelled reports whether rota models resource r: cpu, memory and nvidia.com/gpu are read,
// ephemeral-storage and huge pages every server has. A pod that asks for any other resource
// (Pod.Extended) runs only on the Nodes that offer it.
func modelled(r string) bool {
	return r == cpu || r == memory || r == GPUResource || r == "ephemeral-storage" || strings.HasPrefix(r, "hugepages-")
}

// Bounds on one pod's requests: beyond them a request is taken as unreadable, not as a shape.
const (
	maxMilliCPU = 1 << 40
	maxMemory   = 1 << 60
	maxGPUs     = 1 << 20
	// maxQuantity is the longest quantity read, and maxExponent the largest decimal exponent
	// ("1e3") in one: real requests are a few characters long.
	maxQuantity = 40
	maxExponent = 30
)

// exponent is a quantity's decimal exponent ("e-3", "E12"; not the suffix "Ei" or "E").
var exponent = regexp.MustCompile(`[eE]([+-]?[0-9]+)$`)

// requests is what the scheduler reserves for a pod, as Kubernetes computes it: the larger of
// its containers together (with the sidecars, init containers that keep running) and of its
// largest init container (with the sidecars started before it), plus the pod's overhead. A
// container that gives limits and no requests asks its limits (the API server's default). CPU
// and memory set for the whole pod (spec.resources) replace the containers' own.
func requests(spec podSpec) (Requests, error) {
	var out Requests
	var err error
	if out.MilliCPU, err = request(spec, cpu); err != nil {
		return Requests{}, err
	}
	if out.Memory, err = request(spec, memory); err != nil {
		return Requests{}, err
	}
	for _, r := range GPUResources {
		n, err := request(spec, r)
		if err != nil {
			return Requests{}, err
		}
		if out.GPUs += n; out.GPUs > maxGPUs {
			return Requests{}, fmt.Errorf("GPU requests add up past %d", maxGPUs)
		}
	}
	return out, nil
}

// extended are the resources rota does not model that a container of the pod requests (or
// limits, the request's default), sorted. A quantity that is zero asks nothing; one that
// cannot be read counts as asked (the scheduler holds the pod to it).
func extended(spec podSpec) []string {
	var out []string
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		for _, q := range []quantities{c.Resources.Requests, c.Resources.Limits} {
			for r, v := range q {
				if !modelled(r) && !zero(v) && !slices.Contains(out, r) {
					out = append(out, r)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// zero reports whether quantity s is readable and zero.
func zero(s string) bool {
	if len(s) > maxQuantity {
		return false
	}
	if m := exponent.FindStringSubmatch(s); m != nil {
		if e, err := strconv.Atoi(m[1]); err != nil || e > maxExponent || e < -maxExponent {
			return false
		}
	}
	q, err := resource.ParseQuantity(s)
	return err == nil && q.IsZero()
}

func request(spec podSpec, r string) (int64, error) {
	var sidecars, initMax int64
	add := func(a, b int64) (int64, error) {
		if a+b > limit(r) {
			return 0, fmt.Errorf("%s requests add up past %d", r, limit(r))
		}
		return a + b, nil
	}
	for i, c := range spec.InitContainers {
		v, err := containerRequest(c.Resources, r)
		if err != nil {
			return 0, fmt.Errorf("spec.initContainers[%d] (%s): %w", i, errtext.Quote(c.Name), err)
		}
		if c.RestartPolicy == "Always" {
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
	sum := sidecars
	for i, c := range spec.Containers {
		v, err := containerRequest(c.Resources, r)
		if err != nil {
			return 0, fmt.Errorf("spec.containers[%d] (%s): %w", i, errtext.Quote(c.Name), err)
		}
		if sum, err = add(sum, v); err != nil {
			return 0, err
		}
	}
	total := max(sum, initMax)
	if (r == cpu || r == memory) && spec.Resources != nil {
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

func containerRequest(res resources, r string) (int64, error) {
	q, ok := res.Requests[r]
	if !ok {
		if q, ok = res.Limits[r]; !ok {
			return 0, nil
		}
	}
	return quantity(q, r)
}

// limit is the bound of a request of r, in the unit quantity returns.
func limit(r string) int64 {
	switch r {
	case cpu:
		return maxMilliCPU
	case memory:
		return maxMemory
	}
	return maxGPUs
}

// quantity reads one request: CPU in thousandths of a core, memory in bytes, GPUs whole. It
// refuses what is too long or too far out of range before the library parses it.
func quantity(s string, r string) (int64, error) {
	if len(s) > maxQuantity {
		return 0, fmt.Errorf("%s request %s is too long", r, errtext.Quote(s))
	}
	if m := exponent.FindStringSubmatch(s); m != nil {
		if e, err := strconv.Atoi(m[1]); err != nil || e > maxExponent || e < -maxExponent {
			return 0, fmt.Errorf("%s request %s is out of range", r, s)
		}
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("%s request %s: %w", r, errtext.Quote(s), err)
	}
	if q.Sign() < 0 {
		return 0, fmt.Errorf("%s request %s is negative", r, s)
	}
	bound := float64(limit(r))
	if r == cpu {
		bound /= 1000 // q counts cores
	}
	if q.AsApproximateFloat64() > bound {
		return 0, fmt.Errorf("%s request %s is out of range", r, s)
	}
	if r == cpu {
		return q.MilliValue(), nil
	}
	if slices.Contains(GPUResources, r) && q.MilliValue()%1000 != 0 {
		return 0, fmt.Errorf("%s request %s is not a whole number", r, s)
	}
	return q.Value(), nil
}
