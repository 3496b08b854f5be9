package kubernetes_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	logtest "github.com/sirupsen/logrus/hooks/test"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/kubelab"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/jobs/kubernetes"
	"github.com/rotahq/rota/scaler/jobs/kubernetes/kubeview"
)

var record = flag.Bool("record", false, "write the real API server's answers to testdata/ as the parser's fixtures")

// TestRealCluster runs the adapter against a real control plane (etcd, kube-apiserver with
// RBAC, kube-scheduler, kube-controller-manager with the ReplicaSet, Deployment, Job and
// disruption controllers), as rota's own service account bound to the ClusterRole of
// deploy/kubernetes/rbac.yaml. There is no kubelet: the test plays its part only through the
// status subresources (a Node's capacity and Ready condition, a bound pod's phase), as
// kubelab says. One control plane serves every subtest; each makes its own namespace and
// Nodes and removes them.
func TestRealCluster(t *testing.T) {
	c := kubelab.Start(t)
	kubeconfig := deployRota(t, c)
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, env *env)
	}{
		{"Role", testRole},
		{"UnknownServersAndCredentials", testUnknown},
		{"ANodeRegisteredDuringTheBootIsAwaited", testNodeRegistersAfterBoot},
		{"GPUPodsWakeAGPUServerAndNoCPUServer", testGPUWake},
		{"NodeSelectorWakesOnlyMatchingServers", testSelectorWake},
		{"PodAntiAffinityWakesAnotherServer", testAntiAffinityWake},
		{"TopologySpreadWakesAnotherServer", testTopologySpreadWake},
		{"APodBoundToAnOffServerWakesIt", testBoundPodWakesItsServer},
		{"MovesEvictWhatIsRecreated", testMoves},
		{"DrainWaitsOnAPodDisruptionBudget", testDrainWaitsOnBudget},
		{"MovesWaitForABudgetThatAllowsNoDisruption", testMovesWaitForTheBudget},
		{"DoNotDisruptKeepsItsNode", testDoNotDisrupt},
		{"PoweredOffTaintAndResume", testPoweredOffTaint},
		{"APIServerDownMeansNoScaleDown", testAPIServerDown},
		{"BadAnswersChangeNothing", testBadAnswers},
		{"InClusterServiceAccount", testInCluster},
		{"APersonsCordonOverRotasAnnotationStays", testCordonTakenOver},
		{"NodeLocalVolumesKeepTheirPods", testLocalVolume},
		{"EmptyDirDataKeepsItsPod", testEmptyDir},
		{"DeviceClaimsKeepTheirPods", testDeviceClaim},
		{"DeviceClaimsWakeServersWithTheirDevices", testDeviceClaimsWake},
		{"DeviceClaimsOfRunningPodsHoldTheirGPUs", testDeviceClaimsHold},
		{"ALocalVolumeWakesItsServer", testLocalVolumeWakesItsServer},
		{"ExtendedResourcesWakeOnlyTheNodesOfferingThem", testExtendedResources},
		{"OneFailedEvictionDoesNotStopTheOthers", testEvictionErrors},
		{"JobsWithoutRetriesKeepTheirPods", testJobRetries},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newEnv(t, c, kubeconfig)) })
	}
	if *record {
		t.Run("Record", func(t *testing.T) { recordFixtures(t, newEnv(t, c, kubeconfig)) })
	}
}

// deployRota applies deploy/kubernetes (rota's namespace, service account, ClusterRole and
// binding, its Deployment and volume claim, and the ConfigMap made from config/rota.yml as
// deployment.yaml says) and returns a kubeconfig holding a token of rota's service account.
func deployRota(t *testing.T, c *kubelab.Cluster) string {
	t.Helper()
	dir := filepath.Join(testutil.RepoRoot(t), "deploy", "kubernetes")
	ctx := context.Background()
	for _, f := range []string{"rbac.yaml", "deployment.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kubelab.Apply(ctx, c.Conf.Admin(), b); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	conf, err := os.ReadFile(filepath.Join(dir, "config", "rota.yml"))
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rota-config", Namespace: "rota"}, Data: map[string]string{"rota.yml": string(conf)}}
	if _, err := c.Admin.CoreV1().ConfigMaps("rota").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No kubelet runs rota's pod here; at no replicas its Deployment asks for no server.
	scaleTo(t, c.Admin, "rota", "rota", 0)
	testutil.Eventually(t, time.Minute, "rota's pod gone", func() error {
		l, err := c.Admin.CoreV1().Pods("rota").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(l.Items) > 0 {
			return fmt.Errorf("%d pods", len(l.Items))
		}
		return nil
	})
	return c.Kubeconfig(t, c.Token(t, "rota", "rota"))
}

// scaleTo sets a Deployment's replicas.
func scaleTo(t *testing.T, c *k8s.Clientset, namespace, name string, replicas int) {
	t.Helper()
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	if _, err := c.AppsV1().Deployments(namespace).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// env is one subtest's share of the cluster: a namespace of its own, its Nodes (removed at its
// end, with its pods), and the adapter as rota runs it, under rota's role.
type env struct {
	c          *kubelab.Cluster
	admin      *k8s.Clientset
	kubeconfig string
	ns         string
	cfg        *config.Config
	m          *kubernetes.Manager
}

func newEnv(t *testing.T, c *kubelab.Cluster, kubeconfig string) *env {
	t.Helper()
	e := &env{c: c, admin: c.Admin, kubeconfig: kubeconfig, ns: nsName(t)}
	c.Namespace(t, e.ns)
	t.Cleanup(func() { e.cleanup(t) })
	e.cfg = fleetConfig(t, kubeconfig)
	e.m = e.manager(t, e.cfg)
	return e
}

// manager builds the adapter from cfg, as rota does.
func (e *env) manager(t *testing.T, cfg *config.Config) *kubernetes.Manager {
	t.Helper()
	logger, _ := logtest.NewNullLogger()
	m, err := kubernetes.NewFromConfig(cfg, clock.Real{}, logger.WithField("component", "jobs"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// cleanup removes the subtest's pods (at once: no kubelet would finish a graceful delete),
// workloads and Nodes.
func (e *env) cleanup(t *testing.T) {
	ctx := context.Background()
	zero := int64(0)
	now := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	_ = e.admin.AppsV1().Deployments(e.ns).DeleteCollection(ctx, now, metav1.ListOptions{})
	_ = e.admin.AppsV1().ReplicaSets(e.ns).DeleteCollection(ctx, now, metav1.ListOptions{})
	_ = e.admin.AppsV1().DaemonSets(e.ns).DeleteCollection(ctx, now, metav1.ListOptions{})
	_ = e.admin.BatchV1().Jobs(e.ns).DeleteCollection(ctx, now, metav1.ListOptions{})
	_ = e.admin.PolicyV1().PodDisruptionBudgets(e.ns).DeleteCollection(ctx, now, metav1.ListOptions{})
	_ = e.admin.CoreV1().Pods(e.ns).DeleteCollection(ctx, now, metav1.ListOptions{})
	_ = e.admin.CoreV1().Nodes().DeleteCollection(ctx, now, metav1.ListOptions{LabelSelector: "test=" + e.ns})
}

// node registers a Node of the subtest (labelled test=<namespace>), Ready as given.
func (e *env) node(t *testing.T, n kubelab.NodeSpec, ready bool) {
	t.Helper()
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels["test"] = e.ns
	if err := kubelab.RegisterNode(context.Background(), e.admin, n, ready, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// offNode registers a Node as rota leaves a server it powered off: not Ready, drained by rota
// (its cordon, owned by rota's field manager, and its drain annotation) and marked powered off
// (its taint).
func (e *env) offNode(t *testing.T, n kubelab.NodeSpec) {
	t.Helper()
	e.node(t, n, false)
	ctx := context.Background()
	if err := e.m.Drain(ctx, n.Name, "idle"); err != nil {
		t.Fatal(err)
	}
	if err := e.m.PoweredOff(ctx, n.Name); err != nil {
		t.Fatal(err)
	}
}

// cpuServersOff registers cpu01 and cpu02 (32 CPUs, 128 GiB each) as servers rota powered off.
func (e *env) cpuServersOff(t *testing.T) {
	t.Helper()
	for _, n := range []string{"cpu01", "cpu02"} {
		e.offNode(t, kubelab.NodeSpec{Name: n, CPUs: 32, Memory: "128Gi"})
	}
}

// gpuTaint is the GPU servers' taint: only a pod that tolerates it (gpuToleration) runs there.
func gpuTaint() []corev1.Taint {
	return []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}
}

func gpuToleration() []corev1.Toleration {
	return []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
}

// pod is a pod of the subtest's namespace that asks for cpu cores and gpus; it ends at once
// when deleted (no kubelet would end it otherwise).
func (e *env) pod(name string, cpus, gpus int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec:       podSpec(cpus, gpus),
	}
}

func podSpec(cpus, gpus int) corev1.PodSpec {
	zero := int64(0)
	req := corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(cpus), resource.DecimalSI),
		corev1.ResourceMemory: resource.MustParse("1Gi")}
	if gpus > 0 {
		req[kubeview.GPUResource] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	}
	return corev1.PodSpec{
		TerminationGracePeriodSeconds: &zero,
		Containers: []corev1.Container{{Name: "work", Image: "registry.example.internal/work:1",
			Resources: corev1.ResourceRequirements{Requests: req, Limits: limitsOf(req)}}},
	}
}

// limitsOf: extended resources (GPUs) must have limits equal to their requests.
func limitsOf(req corev1.ResourceList) corev1.ResourceList {
	if q, ok := req[kubeview.GPUResource]; ok {
		return corev1.ResourceList{kubeview.GPUResource: q}
	}
	return nil
}

func (e *env) create(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if _, err := e.admin.CoreV1().Pods(e.ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// deployment creates a Deployment of replicas pods of the given shape, labelled app=name.
func (e *env) deployment(t *testing.T, name string, replicas int32, annotations map[string]string, spec corev1.PodSpec) {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations}, Spec: spec},
		},
	}
	if _, err := e.admin.AppsV1().Deployments(e.ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// kubelet plays every kubelet for a while: each pod bound to a Ready Node starts. It returns
// once want pods of the namespace run, failing the test after timeout.
func (e *env) kubelet(t *testing.T, want int, timeout time.Duration) {
	t.Helper()
	testutil.Eventually(t, timeout, "running pods", func() error {
		if _, err := kubelab.RunBound(context.Background(), e.admin, time.Now()); err != nil {
			return err
		}
		return e.wantPods(want, corev1.PodRunning)
	})
}

// podsOn lists the names of the namespace's pods bound to node (in any phase but finished).
func (e *env) podsOn(t *testing.T, node string) []string {
	t.Helper()
	l, err := e.admin.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range l.Items {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p.Name)
		}
	}
	return out
}

func (e *env) getNode(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n, err := e.admin.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
