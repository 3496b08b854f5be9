package kubernetes_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/internal/kubelab"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/fleet"
)

// testDeviceClaimsWake: every server is off. A pod asks for two GPUs through dynamic resource
// allocation (a ResourceClaimTemplate of device class gpu.nvidia.com, no nvidia.com/gpu
// request), another for an FPGA (a ResourceClaim of class fpga.example.com, whose driver's
// ResourceSlice is on cpu02's Node). No DRA driver runs, so the scheduler marks both
// unschedulable. The GPU pod is GPU work (two GPUs: its home pool the GPU servers'), the FPGA
// pod asks for cpu02 alone: rota powers on one GPU server and cpu02, never cpu01. Read by CPU
// and memory alone, the GPU pod woke a CPU server it could never run on, and waited for ever.
func testDeviceClaimsWake(t *testing.T, e *env) {
	ctx := context.Background()
	e.cpuServersOff(t)
	for _, n := range []string{"gpu01", "gpu02"} {
		e.offNode(t, kubelab.NodeSpec{Name: n, CPUs: 96, Memory: "1Ti", Taints: gpuTaint()})
	}
	e.deviceClass(t, "gpu.nvidia.com")
	e.deviceClass(t, "fpga.example.com")
	e.resourceSlice(t, "fpga.example.com", "cpu02")
	gpus := resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpus",
		Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 2}}}}
	tmpl := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "two-gpus", Namespace: e.ns},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: gpus}}}
	if _, err := e.admin.ResourceV1().ResourceClaimTemplates(e.ns).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fpga := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "shared-fpga", Namespace: e.ns},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "fpga",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "fpga.example.com"}}}}}}
	if _, err := e.admin.ResourceV1().ResourceClaims(e.ns).Create(ctx, fpga, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	train := e.pod("train", 4, 0)
	template, claim := "two-gpus", "shared-fpga"
	train.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: &template}}
	train.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpus"}}
	train.Spec.Tolerations = gpuToleration()
	e.create(t, train)
	e.claimFromTemplate(t, "train", "gpus", gpus)
	accel := e.pod("accel", 1, 0)
	accel.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "fpga", ResourceClaimName: &claim}}
	accel.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "fpga"}}
	e.create(t, accel)
	e.waitDemand(t, 2)
	d, err := e.m.Demand(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(d, func(a, b fleet.Demand) int { return a.Shape.GPUs - b.Shape.GPUs })
	if len(d) != 2 || d[0].Shape.GPUs != 0 || d[0].Needs.Nodes != "cpu02" || d[1].Shape.GPUs != 2 || d[1].Needs.Nodes != "" {
		t.Fatalf("demand %+v, want the FPGA pod on cpu02 alone and the training pod as two GPUs", d)
	}
	r := startRota(t, e.cfg, e.m, map[string]bmc.State{"cpu01": bmc.StateOff, "cpu02": bmc.StateOff, "gpu01": bmc.StateOff, "gpu02": bmc.StateOff})
	e.boot(t, r)
	testutil.Eventually(t, 2*time.Minute, "a GPU server and cpu02 powered on", func() error {
		if on := poweredOn(r); len(on) < 2 {
			return fmt.Errorf("powered on %v", on)
		}
		return nil
	})
	time.Sleep(3 * time.Second) // a pass or two more: nothing else is woken
	r.stop()
	if on := poweredOn(r); len(on) != 2 || !strings.Contains(strings.Join(on, ","), "cpu02") || !strings.Contains(strings.Join(on, ","), "gpu0") {
		t.Errorf("powered on %v, want one GPU server and cpu02 (commands %v)", on, r.sent())
	}
}

// testDeviceClaimsHold: gpu01 is on and every one of its eight GPUs is held through dynamic
// resource allocation by running pods: six by train's claim, two by a claim that left and right
// share (no nvidia.com/gpu request, no such resource on the Node). The other servers are off.
// gpu01's allocation counts the eight GPUs, the shared two once; a pod waiting for two GPUs
// then makes rota power on gpu02. Before, gpu01 read as holding none: the planner placed the
// waiting pod on its free-looking GPUs, woke nothing, and the pod waited as long as train ran.
func testDeviceClaimsHold(t *testing.T, e *env) {
	ctx := context.Background()
	e.cpuServersOff(t)
	e.offNode(t, kubelab.NodeSpec{Name: "gpu02", CPUs: 96, Memory: "1Ti", Taints: gpuTaint()})
	e.node(t, kubelab.NodeSpec{Name: "gpu01", CPUs: 96, Memory: "1Ti", Taints: gpuTaint()}, true)
	e.deviceClass(t, "gpu.nvidia.com")
	tolerate := gpuToleration()
	withClaim := func(name, claim string, node string) *corev1.Pod {
		p := e.pod(name, 4, 0)
		p.Spec.NodeName, p.Spec.Tolerations = node, tolerate
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimName: &claim}}
		p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpus"}}
		return p
	}
	for claim, count := range map[string]int64{"train-gpus": 6, "shared-gpus": 2, "next-gpus": 2} {
		e.gpuClaim(t, claim, count)
	}
	running := map[string]*corev1.Pod{"train": withClaim("train", "train-gpus", "gpu01"),
		"left": withClaim("left", "shared-gpus", "gpu01"), "right": withClaim("right", "shared-gpus", "gpu01")}
	for _, p := range running {
		e.create(t, p)
	}
	e.kubelet(t, 3, time.Minute)
	e.allocate(t, "train-gpus", "gpu01", 0, 6, "train")
	e.allocate(t, "shared-gpus", "gpu01", 6, 2, "left", "right")
	views, err := e.m.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v := views["gpu01"]; v.GPUs != 8 || v.Jobs != 3 {
		t.Errorf("gpu01 holds %d GPUs, %d jobs; want its 8 GPUs (train's 6, the shared 2 once) and 3 jobs", v.GPUs, v.Jobs)
	}
	e.create(t, withClaim("next", "next-gpus", ""))
	e.waitDemand(t, 1)
	r := startRota(t, e.cfg, e.m, map[string]bmc.State{"cpu01": bmc.StateOff, "cpu02": bmc.StateOff, "gpu01": bmc.StateOn, "gpu02": bmc.StateOff})
	e.boot(t, r)
	testutil.Eventually(t, 2*time.Minute, "gpu02 powered on", func() error {
		if on := poweredOn(r); !slices.Contains(on, "gpu02") {
			return fmt.Errorf("powered on %v", on)
		}
		return nil
	})
	r.stop()
	if on := poweredOn(r); len(on) != 1 {
		t.Errorf("powered on %v, want gpu02 alone (commands %v)", on, r.sent())
	}
}

// gpuClaim makes the ResourceClaim name of count GPUs (device class gpu.nvidia.com).
func (e *env) gpuClaim(t *testing.T, name string, count int64) {
	t.Helper()
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpus",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count}}}}}}
	if _, err := e.admin.ResourceV1().ResourceClaims(e.ns).Create(context.Background(), c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.admin.ResourceV1().ResourceClaims(e.ns).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// allocate does what the scheduler does for claim once it picks node: count devices of
// node's pool (gpu-<first> onwards) allocated to its request "gpus", and the claim reserved
// for pods.
func (e *env) allocate(t *testing.T, claim, node string, first, count int, pods ...string) {
	t.Helper()
	ctx := context.Background()
	c, err := e.admin.ResourceV1().ResourceClaims(e.ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alloc := &resourcev1.AllocationResult{NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}
	for i := first; i < first+count; i++ {
		alloc.Devices.Results = append(alloc.Devices.Results, resourcev1.DeviceRequestAllocationResult{
			Request: "gpus", Driver: "gpu.nvidia.com", Pool: node, Device: fmt.Sprintf("gpu-%d", i)})
	}
	c.Status.Allocation = alloc
	for _, name := range pods {
		p, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: name, UID: p.UID})
	}
	if _, err := e.admin.ResourceV1().ResourceClaims(e.ns).UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// poweredOn are the servers rota powered on, in order.
func poweredOn(r *rota) []string {
	var on []string
	for _, c := range r.sent() {
		if s, ok := strings.CutPrefix(c, "on "); ok {
			on = append(on, s)
		}
	}
	return on
}

// deviceClass makes a DeviceClass named as its driver, selecting that driver's devices as
// the DRA drivers' classes do; it goes at the subtest's end.
func (e *env) deviceClass(t *testing.T, driver string) {
	t.Helper()
	dc := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: driver},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "` + driver + `"`}}}}}
	if _, err := e.admin.ResourceV1().DeviceClasses().Create(context.Background(), dc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.admin.ResourceV1().DeviceClasses().Delete(context.Background(), driver, metav1.DeleteOptions{})
	})
}

// resourceSlice publishes one device of driver on node, as the driver's kubelet plugin would.
func (e *env) resourceSlice(t *testing.T, driver, node string) {
	t.Helper()
	name := node + "-" + driver
	rs := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.ResourceSliceSpec{Driver: driver, NodeName: &node,
			Pool:    resourcev1.ResourcePool{Name: node, ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: "dev0"}}}}
	if _, err := e.admin.ResourceV1().ResourceSlices().Create(context.Background(), rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.admin.ResourceV1().ResourceSlices().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// claimFromTemplate does what the resource claim controller (not run here) does for pod's
// claim name: a ResourceClaim owned by the pod, named in its status.resourceClaimStatuses.
func (e *env) claimFromTemplate(t *testing.T, pod, name string, devices resourcev1.DeviceClaim) {
	t.Helper()
	ctx := context.Background()
	p, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: pod + "-" + name + "-made", Namespace: e.ns,
		Annotations:     map[string]string{"resource.kubernetes.io/pod-claim-name": name},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod, UID: p.UID, Controller: &yes, BlockOwnerDeletion: &yes}}},
		Spec: resourcev1.ResourceClaimSpec{Devices: devices}}
	if _, err := e.admin.ResourceV1().ResourceClaims(e.ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.admin.ResourceV1().ResourceClaims(e.ns).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
	})
	made := claim.Name
	p.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: name, ResourceClaimName: &made}}
	if _, err := e.admin.CoreV1().Pods(e.ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
