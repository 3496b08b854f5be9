package kubernetes_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rotahq/rota/internal/kubelab"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/jobs"
	"github.com/rotahq/rota/scaler/jobs/kubernetes/kubeview"
)

// testDrainWaitsOnBudget: a drain of a server holding both pods of a Deployment whose
// PodDisruptionBudget wants both available evicts neither (the disruption controller allows
// no disruption), and goes on, one pod at a time, once a third replica runs elsewhere. At no
// step do fewer than two of the Deployment's pods run: rota evicts through the Eviction API,
// and the budget decides.
func testDrainWaitsOnBudget(t *testing.T, e *env) {
	ctx := context.Background()
	e.node(t, kubelab.NodeSpec{Name: "cpu01", CPUs: 8}, true)
	e.deployment(t, "web", 2, nil, podSpec(1, 0))
	e.kubelet(t, 2, time.Minute)
	e.minAvailable(t, "web", 2)
	e.waitBudget(t, "web", 2, 0)
	e.node(t, kubelab.NodeSpec{Name: "cpu02", CPUs: 8}, true)

	if err := e.m.Drain(ctx, "cpu01", "idle"); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := e.m.ContinueDrain(ctx, "cpu01"); err != nil {
			t.Fatal(err)
		}
		e.atLeastRunning(t, "web", 2)
		time.Sleep(200 * time.Millisecond)
	}
	if on := e.podsOn(t, "cpu01"); len(on) != 2 {
		t.Fatalf("the budget allows no disruption, yet cpu01 holds %v", on)
	}
	views, err := e.m.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v := views["cpu01"]; v.Drained || v.Jobs != 2 || !v.DrainedByRota {
		t.Errorf("cpu01 while the budget holds: %+v", v)
	}

	// A third replica, on cpu02 (cpu01 is cordoned), lets the budget allow one disruption.
	scaleTo(t, e.admin, e.ns, "web", 3)
	testutil.Eventually(t, 2*time.Minute, "cpu01 emptied within the budget", func() error {
		if _, err := kubelab.RunBound(ctx, e.admin, time.Now()); err != nil {
			return err
		}
		e.atLeastRunning(t, "web", 2)
		if err := e.m.ContinueDrain(ctx, "cpu01"); err != nil {
			return err
		}
		if on := e.podsOn(t, "cpu01"); len(on) > 0 {
			return fmt.Errorf("cpu01 holds %v", on)
		}
		return nil
	})
	views, err = e.m.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v := views["cpu01"]; !v.Drained || v.Jobs != 0 {
		t.Errorf("cpu01 once emptied: %+v", v)
	}
}

// minAvailable makes the PodDisruptionBudget name, which wants n of the pods labelled app=name
// available.
func (e *env) minAvailable(t *testing.T, name string, n int32) {
	t.Helper()
	want := intstr.FromInt32(n)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &want, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}}
	if _, err := e.admin.PolicyV1().PodDisruptionBudgets(e.ns).Create(context.Background(), pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitBudget waits until the disruption controller has counted the budget's pods.
func (e *env) waitBudget(t *testing.T, name string, healthy, allowed int32) {
	t.Helper()
	testutil.Eventually(t, time.Minute, "budget "+name+" observed", func() error {
		p, err := e.admin.PolicyV1().PodDisruptionBudgets(e.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.ObservedGeneration != p.Generation || p.Status.CurrentHealthy != healthy || p.Status.DisruptionsAllowed != allowed {
			return fmt.Errorf("status %+v", p.Status)
		}
		return nil
	})
}

// atLeastRunning fails the test when fewer than want pods labelled app=name run ready.
func (e *env) atLeastRunning(t *testing.T, name string, want int) {
	t.Helper()
	l, err := e.admin.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + name, FieldSelector: "status.phase=Running"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			n++
		}
	}
	if n < want {
		t.Fatalf("only %d pods of %s run; the budget wants %d", n, name, want)
	}
}

// testDoNotDisrupt: a drain evicts a Deployment's pod but neither the pod annotated with
// rota's do-not-disrupt nor the one with Karpenter's, nor a bare pod; the server
// keeps them, so it never shows drained and empty, and is never powered off.
func testDoNotDisrupt(t *testing.T, e *env) {
	ctx := context.Background()
	e.node(t, kubelab.NodeSpec{Name: "cpu01", CPUs: 16}, true)
	e.deployment(t, "keep", 1, map[string]string{kubeview.DoNotDisrupt: "true"}, podSpec(1, 0))
	e.deployment(t, "karpenter", 1, map[string]string{kubeview.KarpenterDoNotDisrupt: "true"}, podSpec(1, 0))
	e.deployment(t, "free", 1, nil, podSpec(1, 0))
	e.create(t, e.pod("bare", 1, 0))
	e.kubelet(t, 4, time.Minute)
	e.node(t, kubelab.NodeSpec{Name: "cpu02", CPUs: 16}, true)

	if err := e.m.Drain(ctx, "cpu01", "idle"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, "the free pod leaves cpu01", func() error {
		if _, err := kubelab.RunBound(ctx, e.admin, time.Now()); err != nil {
			return err
		}
		if err := e.m.ContinueDrain(ctx, "cpu01"); err != nil {
			return err
		}
		if on := e.podsOn(t, "cpu01"); len(on) != 3 {
			return fmt.Errorf("cpu01 holds %v", on)
		}
		return e.wantPods(4, corev1.PodRunning)
	})
	on := e.podsOn(t, "cpu01")
	if !slices.Contains(on, "bare") || len(e.podsOn(t, "cpu02")) != 1 {
		t.Errorf("cpu01 holds %v, cpu02 %v", on, e.podsOn(t, "cpu02"))
	}
	for _, app := range []string{"keep", "karpenter"} {
		l, err := e.admin.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil || len(l.Items) != 1 || l.Items[0].Spec.NodeName != "cpu01" {
			t.Errorf("%s: %v %v", app, l, err)
		}
	}
	views, err := e.m.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v := views["cpu01"]; v.Drained || v.Jobs != 3 {
		t.Errorf("cpu01 keeps its pods, yet: %+v", v)
	}
}

// testPoweredOffTaint: a Node rota powered off carries its taint, so a new pod waits (and is
// demand) although the Node's cordon was lifted by hand; Resume removes the taint and the
// cordon, and the scheduler places the pod. A Node a person cordoned is never drained nor
// resumed by rota.
func testPoweredOffTaint(t *testing.T, e *env) {
	ctx := context.Background()
	e.node(t, kubelab.NodeSpec{Name: "cpu01", CPUs: 8}, true)
	if err := e.m.Drain(ctx, "cpu01", "idle"); err != nil {
		t.Fatal(err)
	}
	if err := e.m.PoweredOff(ctx, "cpu01"); err != nil {
		t.Fatal(err)
	}
	if err := e.m.PoweredOff(ctx, "cpu01"); err != nil {
		t.Fatal(err)
	}
	n := e.getNode(t, "cpu01")
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != kubeview.PoweredOffTaint || n.Spec.Taints[0].Effect != corev1.TaintEffectNoSchedule {
		t.Fatalf("taints after PoweredOff (twice): %v", n.Spec.Taints)
	}
	// Someone lifts the cordon by hand: the taint alone keeps pods away.
	n.Spec.Unschedulable = false
	if _, err := e.admin.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.create(t, e.pod("web", 1, 0))
	e.waitDemand(t, 1)
	views, err := e.m.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v := views["cpu01"]; !v.Drained || !v.DrainedByRota {
		t.Errorf("cpu01 tainted by rota: %+v", v)
	}
	if err := e.m.Resume(ctx, "cpu01"); err != nil {
		t.Fatal(err)
	}
	n = e.getNode(t, "cpu01")
	if n.Spec.Unschedulable || len(n.Spec.Taints) != 0 || n.Annotations[kubeview.DrainAnnotation] != "" {
		t.Errorf("after Resume: unschedulable %v, taints %v, annotations %v", n.Spec.Unschedulable, n.Spec.Taints, n.Annotations)
	}
	e.kubelet(t, 1, time.Minute)

	e.node(t, kubelab.NodeSpec{Name: "cpu02", CPUs: 8, Cordoned: true}, true)
	if err := e.m.Drain(ctx, "cpu02", "idle"); !errors.Is(err, jobs.ErrNotOurs) {
		t.Errorf("draining a Node a person cordoned: %v", err)
	}
	if err := e.m.Resume(ctx, "cpu02"); !errors.Is(err, jobs.ErrNotOurs) {
		t.Errorf("resuming a Node a person cordoned: %v", err)
	}
	if n := e.getNode(t, "cpu02"); !n.Spec.Unschedulable || n.Annotations[kubeview.DrainAnnotation] != "" {
		t.Errorf("a person's cordon changed: %+v %v", n.Spec, n.Annotations)
	}
}

// testEvictionErrors: two PodDisruptionBudgets select the pod of Deployment aaa, so the API
// server refuses its eviction (500: more than one budget); the pod of zzz, listed after it, is
// evicted all the same, as kubectl drain goes on past a pod it cannot evict. The drain holds;
// ContinueDrain says which pod failed, and why.
func testEvictionErrors(t *testing.T, e *env) {
	ctx := context.Background()
	e.node(t, kubelab.NodeSpec{Name: "cpu01", CPUs: 8}, true)
	e.deployment(t, "aaa", 1, nil, podSpec(1, 0))
	e.deployment(t, "zzz", 1, nil, podSpec(1, 0))
	e.kubelet(t, 2, time.Minute)
	one := intstr.FromInt32(1)
	for _, name := range []string{"b1", "b2"} {
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
			Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "aaa"}}}}
		if _, err := e.admin.PolicyV1().PodDisruptionBudgets(e.ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.waitBudget(t, name, 1, 1)
	}
	if err := e.m.Drain(ctx, "cpu01", "idle"); err != nil {
		t.Fatal(err)
	}
	err := e.m.ContinueDrain(ctx, "cpu01")
	if err == nil || !strings.Contains(err.Error(), "evicting "+e.ns+"/aaa-") || !strings.Contains(err.Error(), "PodDisruptionBudget") {
		t.Errorf("ContinueDrain: %v, want the failure of aaa's pod", err)
	}
	on := e.podsOn(t, "cpu01")
	if len(on) != 1 || !strings.HasPrefix(on[0], "aaa-") {
		t.Errorf("cpu01 holds %v, want aaa's pod alone (zzz's evicted)", on)
	}
}
