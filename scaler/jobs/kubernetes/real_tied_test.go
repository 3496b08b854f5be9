package kubernetes_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/internal/kubelab"
	"github.com/rotahq/rota/internal/testutil"
)

// testLocalVolume: a Deployment's pod whose PersistentVolumeClaim is bound to a local
// PersistentVolume of cpu01 (node affinity: cpu01 alone) could start nowhere else, so rota
// neither offers it to the planner as requeueable, nor evicts it in a drain, nor moves it: its
// server keeps it, and is never left empty for a power-off with the pod's replacement waiting
// for it.
func testLocalVolume(t *testing.T, e *env) {
	e.twoServers(t)
	e.localVolume(t, "data", "cpu01")
	spec := podSpec(1, 0)
	spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	e.keepsItsPod(t, spec)
}

// testEmptyDir: a Deployment's pod with an emptyDir volume loses that volume's data when it is
// evicted, so, as kubectl drain refuses it without --delete-emptydir-data, rota neither offers
// it to the planner as requeueable (saying why), nor evicts it in a drain, nor moves it: its
// server keeps it (keepsItsPod). With jobs.kubernetes.delete_emptydir_data, the pod is
// requeueable, and the drain evicts it: its ReplicaSet starts it again on cpu02.
func testEmptyDir(t *testing.T, e *env) {
	ctx := context.Background()
	e.node(t, kubelab.NodeSpec{Name: "cpu01", CPUs: 8}, true)
	spec := podSpec(1, 0)
	spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	e.keepsItsPod(t, spec)
	views, err := e.m.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if run := views["cpu01"].Running; len(run) != 1 || !strings.Contains(run[0].Held, "emptyDir volume scratch") {
		t.Errorf("cpu01 runs %+v, want its pod held for its emptyDir volume", run)
	}

	cfg := fleetConfig(t, e.kubeconfig)
	cfg.Jobs.Kubernetes.DeleteEmptyDirData = true
	m := e.manager(t, cfg)
	if views, err = m.Nodes(ctx); err != nil {
		t.Fatal(err)
	}
	if run := views["cpu01"].Running; len(run) != 1 || !run[0].Requeueable {
		t.Errorf("with delete_emptydir_data, cpu01 runs %+v, want its pod requeueable", run)
	}
	e.node(t, kubelab.NodeSpec{Name: "cpu02", CPUs: 8}, true)
	testutil.Eventually(t, time.Minute, "the pod evicted from cpu01 runs on cpu02", func() error {
		if _, err := kubelab.RunBound(ctx, e.admin, time.Now()); err != nil {
			return err
		}
		if err := m.ContinueDrain(ctx, "cpu01"); err != nil {
			return err
		}
		if on := e.podsOn(t, "cpu01"); len(on) > 0 {
			return fmt.Errorf("cpu01 holds %v", on)
		}
		if on := e.podsOn(t, "cpu02"); len(on) != 1 {
			return fmt.Errorf("cpu02 holds %v", on)
		}
		return e.wantPods(1, corev1.PodRunning)
	})
}

// testLocalVolumeWakesItsServer: both servers are off, and a pod waits whose claim is bound to
// a local volume of cpu02 (node affinity: cpu02 alone). Its demand names cpu02 alone, and rota
// powers on cpu02 and not cpu01, which any other pod of its shape would take first; the
// scheduler places the pod there.
func testLocalVolumeWakesItsServer(t *testing.T, e *env) {
	ctx := context.Background()
	for _, n := range []string{"cpu01", "cpu02"} {
		e.offNode(t, kubelab.NodeSpec{Name: n, CPUs: 8, Labels: map[string]string{"kubernetes.io/hostname": n}})
	}
	e.localVolume(t, "data", "cpu02")
	db := e.pod("db-0", 1, 0)
	db.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	e.create(t, db)
	e.waitDemand(t, 1)
	d, err := e.m.Demand(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != 1 || d[0].Needs.Nodes != "cpu02" {
		t.Fatalf("demand %+v, want the pod of the local volume on cpu02 alone", d)
	}
	e.wakesOnly(t, []string{"cpu01", "cpu02"}, "cpu02", "db-0")
}

// wakesOnly starts rota with the servers off, plays the kubelets until the one waiting pod
// runs, and checks that rota powered on server alone and that the pod runs there.
func (e *env) wakesOnly(t *testing.T, off []string, server, pod string) {
	t.Helper()
	states := map[string]bmc.State{}
	for _, s := range off {
		states[s] = bmc.StateOff
	}
	r := startRota(t, e.cfg, e.m, states)
	e.boot(t, r)
	e.kubelet(t, 1, 2*time.Minute)
	r.stop()
	if sent := r.sent(); !slices.Equal(sent, []string{"on " + server}) {
		t.Errorf("commands %v, want only %s powered on", sent, server)
	}
	if on := e.podsOn(t, server); !slices.Equal(on, []string{pod}) {
		t.Errorf("%s holds %v, want %s", server, on, pod)
	}
}

// testDeviceClaim: a Deployment's pod that claims its devices through dynamic resource
// allocation (spec.resourceClaims; here bound to cpu01 by name, as an allocation binds it to
// the Node whose devices it got) is kept on its server like one with a local volume: rota
// reads no ResourceSlice, so it cannot tell where else the devices are.
func testDeviceClaim(t *testing.T, e *env) {
	e.twoServers(t)
	spec := podSpec(1, 0)
	spec.NodeName = "cpu01"
	template := "one-device"
	spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "device", ResourceClaimTemplateName: &template}}
	spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "device"}}
	e.keepsItsPod(t, spec)
}

// twoServers makes the Ready Nodes cpu01 and cpu02, 8 CPUs each.
func (e *env) twoServers(t *testing.T) {
	for _, n := range []string{"cpu01", "cpu02"} {
		e.node(t, kubelab.NodeSpec{Name: n, CPUs: 8, Labels: map[string]string{"kubernetes.io/hostname": n}}, true)
	}
}

// keepsItsPod runs one pod of a Deployment with spec, which must land on cpu01 and be tied
// to it: rota offers it as not requeueable, its drain and a move leave it running there, and
// cpu01 stays undrained with one job.
func (e *env) keepsItsPod(t *testing.T, spec corev1.PodSpec) {
	t.Helper()
	ctx := context.Background()
	e.deployment(t, "db", 1, nil, spec)
	e.kubelet(t, 1, time.Minute)
	pods := e.podsOn(t, "cpu01")
	if len(pods) != 1 {
		t.Fatalf("cpu01 holds %v, want the tied pod", pods)
	}
	views, err := e.m.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if run := views["cpu01"].Running; len(run) != 1 || run[0].Requeueable {
		t.Errorf("cpu01 runs %+v, want its pod not requeueable", run)
	}
	if err := e.m.Drain(ctx, "cpu01", "move"); err != nil {
		t.Fatal(err)
	}
	if err := e.m.ContinueDrain(ctx, "cpu01"); err != nil {
		t.Fatal(err)
	}
	moved, err := e.m.Move(ctx, "cpu01", []string{e.ns + "/" + pods[0]}, []string{"cpu01"})
	if err != nil || moved != 0 {
		t.Errorf("moving the tied pod: %d moved, %v", moved, err)
	}
	time.Sleep(time.Second) // an eviction would have ended the pod by now (no grace period)
	if got := e.podsOn(t, "cpu01"); !slices.Equal(got, pods) {
		t.Errorf("cpu01 held %v, now %v", pods, got)
	}
	if err := e.wantPods(1, corev1.PodRunning); err != nil {
		t.Error(err)
	}
	views, err = e.m.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v := views["cpu01"]; v.Drained || v.Jobs != 1 {
		t.Errorf("cpu01 keeps its pod, yet: %+v", v)
	}
}

// localVolume makes a PersistentVolumeClaim named claim in the namespace, bound to a local
// PersistentVolume on node (required node affinity on kubernetes.io/hostname). No volume
// controller runs here: the test binds the two as it would.
func (e *env) localVolume(t *testing.T, claim, node string) {
	t.Helper()
	ctx := context.Background()
	class := "local"
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}
	rwo := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-" + claim},
		Spec: corev1.PersistentVolumeSpec{
			Capacity: size, AccessModes: rwo, StorageClassName: class,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disk1"}},
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: e.ns, Name: claim},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}},
		},
	}
	pv, err := e.admin.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.admin.CoreV1().PersistentVolumeClaims(e.ns).Delete(context.Background(), claim, metav1.DeleteOptions{})
		_ = e.admin.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: e.ns, Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: rwo, StorageClassName: &class, VolumeName: pv.Name,
			Resources: corev1.VolumeResourceRequirements{Requests: size}},
	}
	if pvc, err = e.admin.CoreV1().PersistentVolumeClaims(e.ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: rwo, Capacity: size}
	if _, err := e.admin.CoreV1().PersistentVolumeClaims(e.ns).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pv.Status.Phase = corev1.VolumeBound
	if _, err := e.admin.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// testExtendedResources: every server is off. A pod that asks for an AMD GPU (amd.com/gpu,
// offered by gpu01's Node alone) is GPU work that only gpu01 can take: rota powers gpu01 on,
// and no CPU server nor the NVIDIA server gpu02; the scheduler places it there. Running, it
// holds one of gpu01's GPUs and is not requeueable (never moved). A pod that asks for a MIG
// slice no Node offers is no demand.
func testExtendedResources(t *testing.T, e *env) {
	ctx := context.Background()
	e.cpuServersOff(t)
	e.offNode(t, kubelab.NodeSpec{Name: "gpu01", CPUs: 96, Memory: "1Ti", Taints: gpuTaint()})
	e.offer(t, "gpu01", "amd.com/gpu", 8)
	e.offNode(t, kubelab.NodeSpec{Name: "gpu02", CPUs: 96, Memory: "1Ti", GPUs: 8, Taints: gpuTaint()})
	tolerate := gpuToleration()
	amd := e.pod("train-amd", 4, 0)
	one := resource.MustParse("1")
	amd.Spec.Containers[0].Resources.Requests["amd.com/gpu"] = one
	amd.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"amd.com/gpu": one}
	amd.Spec.Tolerations = tolerate
	e.create(t, amd)
	mig := e.pod("tune-mig", 1, 0)
	mig.Spec.Containers[0].Resources.Requests["nvidia.com/mig-1g.5gb"] = one
	mig.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/mig-1g.5gb": one}
	mig.Spec.Tolerations = tolerate
	e.create(t, mig)
	e.waitDemand(t, 1)
	d, err := e.m.Demand(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != 1 || d[0].Shape.GPUs != 1 || d[0].Needs.Nodes != "gpu01" {
		t.Fatalf("demand %+v, want the AMD pod as one GPU on gpu01 alone", d)
	}

	e.wakesOnly(t, []string{"cpu01", "cpu02", "gpu01", "gpu02"}, "gpu01", "train-amd")
	views, err := e.m.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v := views["gpu01"]; v.GPUs != 1 || len(v.Running) != 1 || v.Running[0].Requeueable || !strings.HasSuffix(v.Running[0].ID, "/train-amd") {
		t.Errorf("gpu01 %+v, want its AMD pod holding one GPU, not requeueable", v)
	}
}

// offer makes node's status offer count of resource r, as a device plugin's kubelet reports.
func (e *env) offer(t *testing.T, node string, r corev1.ResourceName, count int64) {
	t.Helper()
	n := e.getNode(t, node)
	q := *resource.NewQuantity(count, resource.DecimalSI)
	n.Status.Capacity[r], n.Status.Allocatable[r] = q, q
	if _, err := e.admin.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
