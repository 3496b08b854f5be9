package kubelab

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
)

// The kubelet's part, played through the status subresources only: a Node's capacity and
// Ready condition, a bound pod's phase and readiness. Nothing here binds a pod or changes a
// spec; the scheduler and rota do that through the API like anyone else.

// NodeSpec is a Node as its kubelet registers it.
type NodeSpec struct {
	Name   string
	CPUs   int
	Memory string // a quantity: "64Gi"
	GPUs   int
	Labels map[string]string
	Taints []corev1.Taint
	// Cordoned nodes are created unschedulable, with Annotations (rota's drain mark, say).
	Cordoned    bool
	Annotations map[string]string
}

// RegisterNode creates the Node and writes its status: capacity and allocatable (cpu, memory,
// nvidia.com/gpu, 110 pods), and the Ready condition.
func RegisterNode(ctx context.Context, c k8s.Interface, n NodeSpec, ready bool, now time.Time) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, Annotations: n.Annotations},
		Spec:       corev1.NodeSpec{Taints: n.Taints, Unschedulable: n.Cordoned},
	}
	created, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("registering node %s: %w", n.Name, err)
	}
	mem := n.Memory
	if mem == "" {
		mem = "8Gi"
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(strconv.Itoa(n.CPUs)),
		corev1.ResourceMemory: resource.MustParse(mem),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	if n.GPUs > 0 {
		capacity["nvidia.com/gpu"] = resource.MustParse(strconv.Itoa(n.GPUs))
	}
	created.Status = corev1.NodeStatus{Capacity: capacity, Allocatable: capacity, Conditions: []corev1.NodeCondition{readyCondition(ready, now)}}
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing the status of node %s: %w", n.Name, err)
	}
	return nil
}

func readyCondition(ready bool, now time.Time) corev1.NodeCondition {
	c := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
		LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}
	if ready {
		c.Status, c.Reason = corev1.ConditionTrue, "KubeletReady"
	}
	return c
}

// SetReady writes the Node's Ready condition: true once its server is up and its kubelet
// reports, false while the server is off.
func SetReady(ctx context.Context, c k8s.Interface, name string, ready bool, now time.Time) error {
	n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	conds := []corev1.NodeCondition{readyCondition(ready, now)}
	for _, cd := range n.Status.Conditions {
		if cd.Type != corev1.NodeReady {
			conds = append(conds, cd)
		}
	}
	n.Status.Conditions = conds
	_, err = c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	return err
}

// SetPodPhase writes a bound pod's phase as its kubelet would: Running (started now, every
// container ready) or Succeeded and Failed (finished, not ready).
func SetPodPhase(ctx context.Context, c k8s.Interface, namespace, name string, phase corev1.PodPhase, now time.Time) error {
	p, err := c.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if p.Spec.NodeName == "" {
		return fmt.Errorf("pod %s/%s is not bound to a node", namespace, name)
	}
	ready := corev1.ConditionFalse
	if phase == corev1.PodRunning {
		ready = corev1.ConditionTrue
	}
	t := metav1.NewTime(now)
	p.Status.Phase = phase
	if p.Status.StartTime == nil {
		p.Status.StartTime = &t
	}
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: t},
		{Type: corev1.ContainersReady, Status: ready, LastTransitionTime: t},
		{Type: corev1.PodReady, Status: ready, LastTransitionTime: t},
	}
	_, err = c.CoreV1().Pods(namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}

// RunBound starts, as the kubelets would, every pending pod the scheduler bound to a Node that
// is Ready; it returns how many it started.
func RunBound(ctx context.Context, c k8s.Interface, now time.Time) (int, error) {
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	ready := map[string]bool{}
	for _, n := range nodes.Items {
		for _, cd := range n.Status.Conditions {
			if cd.Type == corev1.NodeReady && cd.Status == corev1.ConditionTrue {
				ready[n.Name] = true
			}
		}
	}
	pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Pending"})
	if err != nil {
		return 0, err
	}
	started := 0
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || !ready[p.Spec.NodeName] || p.DeletionTimestamp != nil {
			continue
		}
		if err := SetPodPhase(ctx, c, p.Namespace, p.Name, corev1.PodRunning, now); err != nil {
			return started, err
		}
		started++
	}
	return started, nil
}
