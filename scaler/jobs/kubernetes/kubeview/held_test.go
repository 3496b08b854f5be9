package kubeview

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// allocatedJSON is a ResourceClaim ml/name whose spec makes requests and whose allocation
// gives results (JSON; results "" leaves the claim unallocated).
func allocatedJSON(name, requests, results string) string {
	status := `{}`
	if results != "" {
		status = `{"allocation":{"devices":{"results":[` + results + `]}}}`
	}
	return `{"metadata":{"name":"` + name + `","namespace":"ml"},"spec":{"devices":{"requests":[` + requests + `]}},"status":` + status + `}`
}

func claimList(items ...string) []byte {
	return []byte(`{"kind":"ResourceClaimList","metadata":{},"items":[` + strings.Join(items, ",") + `]}`)
}

// gpuResult is the allocation of device dev of pool gpu01 to request.
func gpuResult(request, dev string) string {
	return `{"request":"` + request + `","driver":"gpu.nvidia.com","pool":"gpu01","device":"` + dev + `"}`
}

const twoGPUs = `{"name":"gpus","exactly":{"deviceClassName":"gpu.nvidia.com","count":2}}`

// TestParseAllocatedClaims: each device allocated to a claim is read with the class of the
// request it was allocated for (a subrequest of firstAvailable by its own class) and named
// driver/pool/device; a device given for admin access takes nothing, and an unallocated claim
// holds none. Garbage fails, wrapping ErrBadAnswer.
func TestParseAllocatedClaims(t *testing.T) {
	alternatives := `{"name":"any","firstAvailable":[{"name":"big","deviceClassName":"gpu.nvidia.com"},{"name":"small","deviceClassName":"mig.nvidia.com"}]}`
	got, cont, err := ParseResourceClaimList(claimList(
		allocatedJSON("train", twoGPUs, gpuResult("gpus", "gpu-0")+","+gpuResult("gpus", "gpu-1")),
		allocatedJSON("slice", alternatives, gpuResult("any/small", "mig-3")),
		allocatedJSON("watch", twoGPUs, `{"request":"gpus","driver":"gpu.nvidia.com","pool":"gpu01","device":"gpu-0","adminAccess":true}`),
		allocatedJSON("later", twoGPUs, ""),
	))
	want := []AllocatedClaim{
		{Namespace: "ml", Name: "train", Devices: []HeldDevice{{"gpu.nvidia.com", "gpu.nvidia.com/gpu01/gpu-0"}, {"gpu.nvidia.com", "gpu.nvidia.com/gpu01/gpu-1"}}},
		{Namespace: "ml", Name: "slice", Devices: []HeldDevice{{"mig.nvidia.com", "gpu.nvidia.com/gpu01/mig-3"}}},
		{Namespace: "ml", Name: "watch"},
		{Namespace: "ml", Name: "later"},
	}
	if err != nil || cont != "" || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v (%v, continue %q), want %+v", got, err, cont, want)
	}
	if gpus := ClaimedGPUs(got, []string{"gpu.nvidia.com"}); !reflect.DeepEqual(gpus, map[string][]string{
		"ml/train": {"gpu.nvidia.com/gpu01/gpu-0", "gpu.nvidia.com/gpu01/gpu-1"}}) {
		t.Errorf("claimed GPUs %v, want train's two (a MIG slice is no whole GPU)", gpus)
	}
	many := strings.TrimSuffix(strings.Repeat(gpuResult("gpus", "g")+",", maxDeviceRequests+1), ",")
	for name, item := range map[string]string{
		"not an object":    `[]`,
		"no name":          `{"metadata":{"namespace":"ml"}}`,
		"no namespace":     `{"metadata":{"name":"c"}}`,
		"unknown request":  allocatedJSON("c", twoGPUs, gpuResult("other", "gpu-0")),
		"unknown sub":      allocatedJSON("c", alternatives, gpuResult("any/huge", "gpu-0")),
		"sub of exactly":   allocatedJSON("c", twoGPUs, gpuResult("gpus/x", "gpu-0")),
		"no class":         allocatedJSON("c", `{"name":"gpus"}`, gpuResult("gpus", "gpu-0")),
		"no device":        allocatedJSON("c", twoGPUs, `{"request":"gpus","driver":"gpu.nvidia.com","pool":"gpu01"}`),
		"too many devices": allocatedJSON("c", twoGPUs, many),
		"results not list": `{"metadata":{"name":"c","namespace":"ml"},"status":{"allocation":{"devices":{"results":7}}}}`,
	} {
		if _, _, err := ParseResourceClaimList(claimList(item)); !errors.Is(err, ErrBadAnswer) {
			t.Errorf("%s: %v, want ErrBadAnswer", name, err)
		}
	}
}

// runningDRAPod is a pod of namespace ml running on node with one CPU and the given resource
// claims (spec.resourceClaims, and status.resourceClaimStatuses for those made from templates).
func runningDRAPod(t *testing.T, name, node, claims, statuses string) Pod {
	t.Helper()
	p, err := ParsePod([]byte(`{"metadata":{"name":"` + name + `","namespace":"ml"},
		"spec":{"nodeName":"` + node + `","resourceClaims":[` + claims + `],"containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]},
		"status":{"phase":"Running","resourceClaimStatuses":[` + statuses + `]}}`))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunningDevicePodsHoldGPUs: the GPUs a running pod holds through its allocated claims
// count in its server's allocation and in its job, each device once on the server though two
// pods share its claim, beside the GPUs a pod requests as nvidia.com/gpu; a claim of another
// class, one not made yet, or one not allocated holds none. Without them gpu01 read as holding
// no GPU while every one of its four was taken: the planner placed waiting GPU work on them
// and woke no server, and that work waited as long as these pods ran.
func TestRunningDevicePodsHoldGPUs(t *testing.T) {
	train := runningDRAPod(t, "train", "gpu01", `{"name":"gpus","resourceClaimTemplateName":"two-gpus"}`, `{"name":"gpus","resourceClaimName":"train-gpus-x7k"}`)
	left := runningDRAPod(t, "left", "gpu01", `{"name":"g","resourceClaimName":"shared"}`, ``)
	right := runningDRAPod(t, "right", "gpu01", `{"name":"g","resourceClaimName":"shared"},{"name":"again","resourceClaimName":"shared"}`, ``)
	plain := runningDRAPod(t, "plain", "gpu01", ``, ``)
	plain.Requests.GPUs = 1
	fpga := runningDRAPod(t, "fpga", "gpu02", `{"name":"f","resourceClaimName":"fpga"}`, ``)
	unmade := runningDRAPod(t, "unmade", "gpu02", `{"name":"gpus","resourceClaimTemplateName":"two-gpus"}`, ``)
	waiting := draPod(t, "waiting", `{"name":"g","resourceClaimName":"queued"}`, ``)
	pods := []Pod{train, left, right, plain, fpga, unmade, waiting}
	if !ClaimsDevices(pods) || ClaimsDevices([]Pod{plain, waiting}) {
		t.Error("ClaimsDevices: want true only with a running pod that claims devices")
	}
	claims, _, err := ParseResourceClaimList(claimList(
		allocatedJSON("train-gpus-x7k", twoGPUs, gpuResult("gpus", "gpu-0")+","+gpuResult("gpus", "gpu-1")),
		allocatedJSON("shared", `{"name":"g","exactly":{"deviceClassName":"gpu.nvidia.com"}}`, gpuResult("g", "gpu-2")),
		allocatedJSON("fpga", `{"name":"f","exactly":{"deviceClassName":"fpga.example.com"}}`, `{"request":"f","driver":"fpga.example.com","pool":"gpu02","device":"f0"}`),
		allocatedJSON("queued", twoGPUs, gpuResult("gpus", "gpu-3")),
	))
	if err != nil {
		t.Fatal(err)
	}
	v := View{Nodes: []Node{{Name: "gpu01", Ready: true}, {Name: "gpu02", Ready: true}}, Pods: pods,
		Claimed: ClaimedGPUs(claims, []string{"gpu.nvidia.com"})}
	views, err := v.JobsViews(Scope{})
	if err != nil {
		t.Fatal(err)
	}
	if got := views["gpu01"]; got.GPUs != 4 || got.Jobs != 4 {
		t.Errorf("gpu01 holds %d GPUs, %d jobs; want 4 (2 of train's claim, 1 shared, 1 requested), 4 jobs", got.GPUs, got.Jobs)
	}
	jobGPUs := map[string]int{}
	for _, j := range views["gpu01"].Running {
		jobGPUs[j.ID] = j.GPUs
	}
	if want := map[string]int{"ml/train": 2, "ml/left": 1, "ml/right": 1, "ml/plain": 1}; !reflect.DeepEqual(jobGPUs, want) {
		t.Errorf("jobs' GPUs %v, want %v", jobGPUs, want)
	}
	if got := views["gpu02"]; got.GPUs != 0 || got.Jobs != 2 {
		t.Errorf("gpu02 holds %d GPUs, %d jobs; want none (an FPGA, a claim not made), 2 jobs", got.GPUs, got.Jobs)
	}
}
