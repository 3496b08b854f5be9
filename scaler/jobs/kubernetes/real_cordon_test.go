package kubernetes_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rotahq/rota/internal/kubelab"
	"github.com/rotahq/rota/scaler/jobs"
	"github.com/rotahq/rota/scaler/jobs/kubernetes/kubeview"
)

// testCordonTakenOver: rota drains cpu01; a person runs `kubectl uncordon cpu01` (rota's
// annotation stays on the Node), and later `kubectl cordon cpu01` for maintenance. The Node
// then reads exactly like rota's drain but for the owner of spec.unschedulable, which the API
// server records as kubectl's: the cordon is the person's. rota neither counts it as its own
// drain, nor evicts from the Node, nor moves its pods, nor drains it, and Resume lifts only
// rota's annotation, never the person's cordon (jobs.ErrNotOurs). Between the two, the stale
// annotation is ignored, and rota's next drain replaces it and makes the cordon rota's again.
// A write that sets the cordon rota already set changes no owner (the API server records a
// field's owner when its value changes): such a cordon is rota's still, and cannot be told
// apart (kubectl cordon itself sends nothing for a Node already cordoned).
func testCordonTakenOver(t *testing.T, e *env) {
	ctx := context.Background()
	e.node(t, kubelab.NodeSpec{Name: "cpu01", CPUs: 8}, true)
	e.node(t, kubelab.NodeSpec{Name: "cpu02", CPUs: 8}, true)
	if err := e.m.Drain(ctx, "cpu01", "idle"); err != nil {
		t.Fatal(err)
	}
	e.kubectlCordon(t, "cpu01", false)
	e.wantView(t, "cpu01", false, false)

	// Work lands on cpu01 (cpu02 is cordoned), then the person cordons cpu01.
	e.cordon(t, "cpu02", true)
	e.deployment(t, "web", 1, nil, podSpec(1, 0))
	e.kubelet(t, 1, time.Minute)
	e.cordon(t, "cpu02", false)
	e.kubectlCordon(t, "cpu01", true)
	n := e.getNode(t, "cpu01")
	if !n.Spec.Unschedulable || n.Annotations[kubeview.DrainAnnotation] != "rota: idle" {
		t.Fatalf("the sequence did not leave rota's annotation on a cordoned Node: %+v %v", n.Spec, n.Annotations)
	}
	e.wantView(t, "cpu01", true, false)
	if err := e.m.ContinueDrain(ctx, "cpu01"); err != nil {
		t.Fatal(err)
	}
	pods := e.podsOn(t, "cpu01")
	if len(pods) != 1 {
		t.Fatalf("cpu01 holds %v", pods)
	}
	if _, err := e.m.Move(ctx, "cpu01", []string{e.ns + "/" + pods[0]}, nil); !errors.Is(err, jobs.ErrCannotMove) {
		t.Errorf("a move off a Node a person cordoned: %v", err)
	}
	if err := e.m.Drain(ctx, "cpu01", "idle"); !errors.Is(err, jobs.ErrNotOurs) {
		t.Errorf("draining a Node a person cordoned over rota's annotation: %v", err)
	}
	if got := e.podsOn(t, "cpu01"); !slices.Equal(got, pods) {
		t.Errorf("cpu01 held %v, now %v: a pod was evicted from a person's cordon", pods, got)
	}
	if err := e.m.Resume(ctx, "cpu01"); !errors.Is(err, jobs.ErrNotOurs) {
		t.Errorf("resuming a Node a person cordoned over rota's annotation: %v", err)
	}
	n = e.getNode(t, "cpu01")
	if !n.Spec.Unschedulable || n.Annotations[kubeview.DrainAnnotation] != "" {
		t.Errorf("after Resume: unschedulable %v (want the person's cordon), annotations %v (want rota's gone)", n.Spec.Unschedulable, n.Annotations)
	}

	// A stale annotation is replaced by rota's next drain, whose cordon is rota's again.
	if err := e.m.Drain(ctx, "cpu02", "idle"); err != nil {
		t.Fatal(err)
	}
	e.kubectlCordon(t, "cpu02", false)
	if err := e.m.Drain(ctx, "cpu02", "again"); err != nil {
		t.Fatal(err)
	}
	e.wantView(t, "cpu02", true, true)
	// Setting the cordon rota set changes no owner: still rota's.
	if _, err := e.admin.CoreV1().Nodes().Patch(ctx, "cpu02", types.StrategicMergePatchType, []byte(`{"spec":{"unschedulable":true}}`),
		metav1.PatchOptions{FieldManager: "kubectl-patch"}); err != nil {
		t.Fatal(err)
	}
	e.wantView(t, "cpu02", true, true)
	if err := e.m.Resume(ctx, "cpu02"); err != nil {
		t.Fatal(err)
	}
	if n := e.getNode(t, "cpu02"); n.Spec.Unschedulable || n.Annotations[kubeview.DrainAnnotation] != "" {
		t.Errorf("rota's own cordon after Resume: %+v %v", n.Spec, n.Annotations)
	}
}

// kubectlCordon cordons (or uncordons) a Node as `kubectl cordon` does: a strategic merge
// patch of spec.unschedulable by field manager kubectl-cordon.
func (e *env) kubectlCordon(t *testing.T, name string, on bool) {
	t.Helper()
	patch := `{"spec":{"unschedulable":null}}`
	if on {
		patch = `{"spec":{"unschedulable":true}}`
	}
	if _, err := e.admin.CoreV1().Nodes().Patch(context.Background(), name, types.StrategicMergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: "kubectl-cordon"}); err != nil {
		t.Fatal(err)
	}
}

// wantView fails the test unless the adapter reads server's Node as cordoned (closed) and as
// drained by rota (ours) as given.
func (e *env) wantView(t *testing.T, server string, closed, ours bool) {
	t.Helper()
	views, err := e.m.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v := views[server]
	n := e.getNode(t, server)
	if n.Spec.Unschedulable != closed || v.DrainedByRota != ours {
		t.Errorf("%s: cordoned %v, read as %+v; want cordoned %v, drained by rota %v", server, n.Spec.Unschedulable, v, closed, ours)
	}
}
