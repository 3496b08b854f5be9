package kubernetes_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/internal/kubelab"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs"
	"github.com/rotahq/rota/scaler/jobs/kubernetes"
	"github.com/rotahq/rota/scaler/jobs/kubernetes/kubeview"
)

// testSelectorWake: a GPU pod whose node selector names the A100 server wakes that server
// only, although the H100 server (first by name, same price) could hold its shape.
func testSelectorWake(t *testing.T, e *env) {
	e.offNode(t, kubelab.NodeSpec{Name: "gpu01", CPUs: 96, GPUs: 8, Labels: map[string]string{"accelerator": "h100"}})
	e.offNode(t, kubelab.NodeSpec{Name: "gpu02", CPUs: 96, GPUs: 8, Labels: map[string]string{"accelerator": "a100"}})
	p := e.pod("tune", 4, 1)
	p.Spec.NodeSelector = map[string]string{"accelerator": "a100"}
	e.create(t, p)
	e.waitDemand(t, 1)
	r := startRota(t, e.cfg, e.m, map[string]bmc.State{"cpu01": bmc.StateOff, "cpu02": bmc.StateOff, "gpu01": bmc.StateOff, "gpu02": bmc.StateOff})
	e.boot(t, r)
	e.kubelet(t, 1, 2*time.Minute)
	if sent := r.sent(); !slices.Equal(sent, []string{"on gpu02"}) {
		t.Errorf("commands %v, want only the A100 server powered on", sent)
	}
	if on := e.podsOn(t, "gpu02"); len(on) != 1 {
		t.Errorf("gpu02 holds %v", on)
	}
}

// testAntiAffinityWake: a Deployment whose replicas must not share a server (required pod
// anti-affinity on kubernetes.io/hostname) wakes another server for its second replica
// (secondReplicaWakesCPU02).
func testAntiAffinityWake(t *testing.T, e *env) {
	spec := podSpec(2, 0)
	spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "kafka"}}, TopologyKey: "kubernetes.io/hostname"}}}}
	e.secondReplicaWakesCPU02(t, "kafka", spec)
}

// testTopologySpreadWake: a Deployment whose replicas are spread by a required topology spread
// constraint (maxSkew 1 on kubernetes.io/hostname, DoNotSchedule) wakes another server for
// its second replica (secondReplicaWakesCPU02); a ScheduleAnyway constraint on a zone only
// weighs the scheduler's score, and keeps it off nothing.
func testTopologySpreadWake(t *testing.T, e *env) {
	spec := podSpec(2, 0)
	web := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{
		{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: web},
		{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: web},
	}
	e.secondReplicaWakesCPU02(t, "web", spec)
}

// secondReplicaWakesCPU02: a Deployment of two replicas of spec runs one on cpu01, the only
// server on, and the scheduler marks the other unschedulable, as spec keeps it off cpu01.
// cpu01's free room cannot hold it, so rota wakes cpu02 (the GPU servers' taint keeps it off
// them), and it runs there.
func (e *env) secondReplicaWakesCPU02(t *testing.T, name string, spec corev1.PodSpec) {
	t.Helper()
	labels := func(n string) map[string]string {
		return map[string]string{"kubernetes.io/hostname": n, "topology.kubernetes.io/zone": "a"}
	}
	e.node(t, kubelab.NodeSpec{Name: "cpu01", CPUs: 32, Memory: "128Gi", Labels: labels("cpu01")}, true)
	e.offNode(t, kubelab.NodeSpec{Name: "cpu02", CPUs: 32, Memory: "128Gi", Labels: labels("cpu02")})
	for _, n := range []string{"gpu01", "gpu02"} {
		e.offNode(t, kubelab.NodeSpec{Name: n, CPUs: 96, Memory: "1Ti", GPUs: 8, Taints: gpuTaint(), Labels: labels(n)})
	}
	e.deployment(t, name, 2, nil, spec)
	e.kubelet(t, 1, time.Minute)
	e.waitDemand(t, 1)
	r := startRota(t, e.cfg, e.m, map[string]bmc.State{"cpu01": bmc.StateOn, "cpu02": bmc.StateOff, "gpu01": bmc.StateOff, "gpu02": bmc.StateOff})
	e.boot(t, r)
	e.kubelet(t, 2, 90*time.Second)
	if sent := r.sent(); !slices.Equal(sent, []string{"on cpu02"}) {
		t.Errorf("commands %v, want only cpu02 powered on", sent)
	}
	if on := e.podsOn(t, "cpu02"); len(on) != 1 {
		t.Errorf("cpu02 holds %v", on)
	}
}

// testMoves: with moves on, rota moves a Deployment's pod off a dear GPU server that an idle
// CPU server could hold (cordon, then eviction; the ReplicaSet starts it again and the
// scheduler places it on the CPU server), then powers the GPU server off; a pod annotated
// do-not-disrupt keeps the other GPU server on. Under the adapter: a bare pod is never
// moved, and no pod is moved off a server rota has not cordoned.
func testMoves(t *testing.T, e *env) {
	ctx := context.Background()
	// Each workload lands where it should: the only Node there is when it starts.
	e.node(t, kubelab.NodeSpec{Name: "gpu01", CPUs: 96, GPUs: 8}, true)
	e.deployment(t, "light", 1, nil, prefersCPU())
	e.kubelet(t, 1, time.Minute)
	e.cordon(t, "gpu01", true)
	e.node(t, kubelab.NodeSpec{Name: "gpu02", CPUs: 96, GPUs: 8}, true)
	e.deployment(t, "keep", 1, map[string]string{kubeview.DoNotDisrupt: "true"}, podSpec(1, 0))
	e.kubelet(t, 2, time.Minute)
	e.cordon(t, "gpu01", false)
	e.node(t, kubelab.NodeSpec{Name: "cpu01", CPUs: 32, Labels: map[string]string{"pool": "cpu"}}, true)
	e.offNode(t, kubelab.NodeSpec{Name: "cpu02", CPUs: 32})

	// The adapter's own rules first.
	if _, err := e.m.Move(ctx, "gpu01", []string{e.ns + "/light"}, []string{"gpu01"}); !errors.Is(err, jobs.ErrCannotMove) {
		t.Errorf("a move off a server rota has not cordoned: %v", err)
	}
	if _, err := e.m.Move(ctx, "gpu02", []string{"no-namespace"}, nil); err == nil || !strings.Contains(err.Error(), "not a namespace/name") {
		t.Errorf("a bad pod id: %v", err)
	}

	cfg := e.movesOn(t, nil)
	r := startRota(t, cfg, e.manager(t, cfg), map[string]bmc.State{"cpu01": bmc.StateOn, "cpu02": bmc.StateOff, "gpu01": bmc.StateOn, "gpu02": bmc.StateOn})
	e.waitMovedOff(t, r, "gpu01 emptied by a move and powered off")
	if on := e.podsOn(t, "cpu01"); len(on) != 1 || !strings.HasPrefix(on[0], "light-") {
		t.Errorf("cpu01 holds %v, want the moved pod", on)
	}
	x, err := r.loop.Explain(ctx, "gpu02")
	if err != nil {
		t.Fatal(err)
	}
	if x.Skip == nil || x.Skip.Reason != fleet.SkipDoNotDisrupt {
		t.Errorf("gpu02's verdict %+v %+v, want skipped as do-not-disrupt", x.Action, x.Skip)
	}
	if slices.ContainsFunc(r.sent(), func(c string) bool { return strings.HasSuffix(c, " gpu02") }) {
		t.Errorf("gpu02 touched: %v", r.sent())
	}
	if on := e.podsOn(t, "gpu02"); len(on) != 1 {
		t.Errorf("gpu02 holds %v, want its do-not-disrupt pod", on)
	}

	// A move the planner did not make: a bare pod stays.
	bare := e.pod("bare", 1, 0)
	bare.Spec.NodeName = "gpu02"
	e.create(t, bare)
	e.kubelet(t, 3, time.Minute)
	r.stop()
	if err := e.m.Drain(ctx, "gpu02", "test"); err != nil {
		t.Fatal(err)
	}
	moved, err := e.m.Move(ctx, "gpu02", []string{e.ns + "/bare"}, []string{"gpu02"})
	if err != nil || moved != 0 {
		t.Errorf("moving a bare pod: %d moved, %v", moved, err)
	}
	if !slices.Contains(e.podsOn(t, "gpu02"), "bare") {
		t.Error("the bare pod was evicted")
	}
}

// prefersCPU is a one-core pod that the scheduler places on a Node labelled pool=cpu when one
// has room (preferred node affinity): where a move sends it.
func prefersCPU() corev1.PodSpec {
	spec := podSpec(1, 0)
	spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
		{Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"cpu"}}}}}}}}
	return spec
}

// testMovesWaitForTheBudget: the one pod of Deployment web runs on the dear gpu01, and the
// idle cpu01 has room for it, but web's PodDisruptionBudget (minAvailable 1) allows no
// disruption. The Eviction API would refuse the move's eviction (429) at every pass until
// policy.drain.timeout (5 s here) undid its drain, and the next pass would plan the same move:
// gpu01 cordoned (closed to new pods) most of the time, for nothing. rota reads the budgets:
// the pod is not requeueable while its budget holds, the planner plans no move and its skip
// names the budget, and gpu01 is never cordoned. Once a second replica runs, the budget
// allows one disruption: the pod is moved to cpu01 and gpu01 powers off.
func testMovesWaitForTheBudget(t *testing.T, e *env) {
	ctx := context.Background()
	e.node(t, kubelab.NodeSpec{Name: "gpu01", CPUs: 96, GPUs: 8}, true)
	e.deployment(t, "web", 1, nil, prefersCPU())
	e.kubelet(t, 1, time.Minute)
	e.minAvailable(t, "web", 1)
	e.waitBudget(t, "web", 1, 0)
	e.node(t, kubelab.NodeSpec{Name: "cpu01", CPUs: 32, Labels: map[string]string{"pool": "cpu"}}, true)
	e.offNode(t, kubelab.NodeSpec{Name: "cpu02", CPUs: 32})
	e.offNode(t, kubelab.NodeSpec{Name: "gpu02", CPUs: 96, GPUs: 8})

	cfg := e.movesOn(t, func(c *config.Config) { c.Policy.Drain.Timeout = model.Duration(5 * time.Second) })
	budgetsReadWithMovesOnly(t, e, cfg)
	r := startRota(t, cfg, e.manager(t, cfg), map[string]bmc.State{"cpu01": bmc.StateOn, "cpu02": bmc.StateOff, "gpu01": bmc.StateOn, "gpu02": bmc.StateOff})
	// Fifteen seconds of passes: three drain timeouts' worth.
	samples, cordoned, cordons, was := 0, 0, 0, false
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		is := e.getNode(t, "gpu01").Spec.Unschedulable
		samples++
		if is {
			cordoned++
			if !was {
				cordons++
			}
		}
		was = is
	}
	if cordoned > 0 {
		t.Errorf("gpu01 cordoned %d times, in %d of %d samples over 15 s, though its pod's budget allows no disruption", cordons, cordoned, samples)
	}
	e.atLeastRunning(t, "web", 1)
	x, err := r.loop.Explain(ctx, "gpu01")
	if err != nil {
		t.Fatal(err)
	}
	if want := "PodDisruptionBudget " + e.ns + "/web allows no disruption now"; x.Skip == nil || x.Skip.Reason != fleet.SkipNotRequeueable || !strings.Contains(x.Skip.Detail, want) {
		t.Errorf("gpu01's verdict %+v %+v, want skipped as not requeueable: %s", x.Action, x.Skip, want)
	}

	scaleTo(t, e.admin, e.ns, "web", 2)
	e.waitMovedOff(t, r, "gpu01 emptied by a move once the budget allows it, and powered off")
	if on := e.podsOn(t, "cpu01"); len(on) != 2 {
		t.Errorf("cpu01 holds %v, want both replicas", on)
	}
}

// budgetsReadWithMovesOnly: only a move needs the budgets, so rota lists them only with
// policy.moves on. Under a role of every permission but that one (a deployment upgraded
// without re-applying deploy/kubernetes/rbac.yaml), a fleet with moves off reads as before
// (it failed every read, and powered nothing off, for a right it never needed); with moves on
// the read fails and names the role. movesOn is the fleet's config with moves on.
func budgetsReadWithMovesOnly(t *testing.T, e *env, movesOn *config.Config) {
	t.Helper()
	ctx := context.Background()
	const name = "rota-no-budgets"
	var rules []rbacv1.PolicyRule
	for _, r := range kubernetes.Permissions() {
		if !slices.Contains(r.Resources, "poddisruptionbudgets") {
			rules = append(rules, r)
		}
	}
	rbac := e.admin.RbacV1()
	if _, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := e.admin.CoreV1().ServiceAccounts(e.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + e.ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: e.ns}}}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = rbac.ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	kubeconfig := e.c.Kubeconfig(t, e.c.Token(t, e.ns, name))
	off := fleetConfig(t, kubeconfig)
	on := *movesOn
	on.Jobs.Kubernetes.Kubeconfig = kubeconfig
	testutil.Eventually(t, 30*time.Second, "the binding in force", func() error {
		_, err := e.manager(t, off).Nodes(ctx)
		return err
	})
	if _, err := e.manager(t, &on).Nodes(ctx); err == nil || !strings.Contains(err.Error(), "rbac.yaml") {
		t.Errorf("moves on, no right to list the budgets: %v, want the read refused naming the role", err)
	}
}

// movesOn is the test fleet's config with moves on and cpu01 held on by its pool's floor (the
// destination of the pods moved); edit, if not nil, changes it before it is validated.
func (e *env) movesOn(t *testing.T, edit func(*config.Config)) *config.Config {
	t.Helper()
	cfg := fleetConfig(t, e.kubeconfig)
	cfg.Pools[0].Min = 1
	cfg.Policy.Moves.Enabled = true
	if edit != nil {
		edit(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// waitMovedOff plays the kubelets until rota has powered gpu01 off (its pods moved: what).
func (e *env) waitMovedOff(t *testing.T, r *rota, what string) {
	t.Helper()
	testutil.Eventually(t, 2*time.Minute, what, func() error {
		if _, err := kubelab.RunBound(context.Background(), e.admin, time.Now()); err != nil {
			return err
		}
		if !slices.ContainsFunc(r.sent(), func(c string) bool { return strings.HasPrefix(c, "off") && strings.HasSuffix(c, " gpu01") }) {
			return fmt.Errorf("commands %v", r.sent())
		}
		return nil
	})
}

// cordon cordons (or uncordons) a Node as a person does with kubectl.
func (e *env) cordon(t *testing.T, name string, on bool) {
	t.Helper()
	n := e.getNode(t, name)
	n.Spec.Unschedulable = on
	if _, err := e.admin.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// testBoundPodWakesItsServer: a pod created with spec.nodeName naming cpu02, which is off, is
// bound at once (the scheduler never sees it) and waits, Pending, for cpu02's kubelet: it can
// run there alone, so rota wakes cpu02, not cpu01's free room nor another server, and the pod
// runs. A DaemonSet's pod bound to gpu01, off too, wakes nothing: one runs on every Node.
func testBoundPodWakesItsServer(t *testing.T, e *env) {
	e.node(t, kubelab.NodeSpec{Name: "cpu01", CPUs: 32, Memory: "128Gi"}, true)
	e.offNode(t, kubelab.NodeSpec{Name: "cpu02", CPUs: 32, Memory: "128Gi"})
	for _, n := range []string{"gpu01", "gpu02"} {
		e.offNode(t, kubelab.NodeSpec{Name: n, CPUs: 96, Memory: "1Ti", GPUs: 8, Taints: gpuTaint()})
	}
	pinned := e.pod("pinned", 2, 0)
	pinned.Spec.NodeName = "cpu02"
	e.create(t, pinned)
	ds := e.agentDaemonSet(t)
	agent := e.pod("agent-gpu01", 1, 0)
	agent.Spec.NodeName = "gpu01"
	agent.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptr(true)}}
	e.create(t, agent)
	r := startRota(t, e.cfg, e.m, map[string]bmc.State{"cpu01": bmc.StateOn, "cpu02": bmc.StateOff, "gpu01": bmc.StateOff, "gpu02": bmc.StateOff})
	e.boot(t, r)
	e.kubelet(t, 1, 90*time.Second)
	time.Sleep(3 * time.Second) // a few more passes: nothing else wakes
	if sent := r.sent(); !slices.Equal(sent, []string{"on cpu02"}) {
		t.Errorf("commands %v, want only cpu02 powered on", sent)
	}
	if on := e.podsOn(t, "cpu02"); !slices.Equal(on, []string{"pinned"}) {
		t.Errorf("cpu02 holds %v", on)
	}
}
