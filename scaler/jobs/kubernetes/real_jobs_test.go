package kubernetes_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rotahq/rota/internal/kubelab"
	"github.com/rotahq/rota/internal/testutil"
)

// testJobRetries: an evicted pod of a Job counts as one of the Job's failures, and a Job fails
// once they pass its backoffLimit. So of three Jobs' pods on cpu01, a Job with backoffLimit 0
// keeps its pod (rota offers it as not requeueable, a move leaves it, and the Job does not
// fail), while a Job with retries left and one whose pod failure policy ignores disruptions
// are requeueable and moved.
func testJobRetries(t *testing.T, e *env) {
	ctx := context.Background()
	e.node(t, kubelab.NodeSpec{Name: "cpu01", CPUs: 8}, true)
	ignore := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}}}}
	e.job(t, "once", 0, nil)
	e.job(t, "retries", 2, nil)
	e.job(t, "ignores", 0, ignore)
	e.kubelet(t, 3, time.Minute)
	e.node(t, kubelab.NodeSpec{Name: "cpu02", CPUs: 8}, true)
	pods := map[string]string{} // by Job
	for _, name := range e.podsOn(t, "cpu01") {
		p, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods[p.Labels["batch.kubernetes.io/job-name"]] = e.ns + "/" + name
	}
	if len(pods) != 3 {
		t.Fatalf("cpu01 holds the pods of %v, want one of each Job", pods)
	}

	views, err := e.m.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	requeueable := map[string]bool{}
	for _, j := range views["cpu01"].Running {
		requeueable[j.ID] = j.Requeueable
	}
	for job, want := range map[string]bool{"once": false, "retries": true, "ignores": true} {
		if got, ok := requeueable[pods[job]]; !ok || got != want {
			t.Errorf("the pod of Job %s: requeueable %v (listed %v), want %v", job, got, ok, want)
		}
	}

	if err := e.m.Drain(ctx, "cpu01", "move"); err != nil {
		t.Fatal(err)
	}
	moved, err := e.m.Move(ctx, "cpu01", []string{pods["once"], pods["retries"], pods["ignores"]}, []string{"cpu01"})
	if err != nil || moved != 2 {
		t.Errorf("moving the three pods: %d moved, %v; want the two whose Jobs restart them", moved, err)
	}
	once, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, pods["once"][len(e.ns)+1:], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if once.DeletionTimestamp != nil {
		t.Errorf("the pod of Job once (backoffLimit 0) was evicted")
		testutil.Eventually(t, time.Minute, "Job once failed by the eviction", func() error { return e.jobFailed("once") })
	}
	if err := e.jobFailed("retries"); err == nil {
		t.Error("Job retries failed, yet had two retries left")
	}
}

// job runs a Job of one pod (one core, never restarted in place) with backoffLimit and pod
// failure policy policy.
func (e *env) job(t *testing.T, name string, backoffLimit int32, policy *batchv1.PodFailurePolicy) {
	t.Helper()
	spec := podSpec(1, 0)
	spec.RestartPolicy = corev1.RestartPolicyNever
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: batchv1.JobSpec{BackoffLimit: &backoffLimit, PodFailurePolicy: policy, Template: corev1.PodTemplateSpec{Spec: spec}}}
	if _, err := e.admin.BatchV1().Jobs(e.ns).Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// jobFailed is nil once the Job controller has failed Job name, and an error saying its
// conditions until then.
func (e *env) jobFailed(name string) error {
	j, err := e.admin.BatchV1().Jobs(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if slices.ContainsFunc(j.Status.Conditions, func(c batchv1.JobCondition) bool {
		return c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue
	}) {
		return nil
	}
	return fmt.Errorf("Job %s has not failed: %+v", name, j.Status.Conditions)
}
