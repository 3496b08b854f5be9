package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/jobs"
	"github.com/rotahq/rota/scaler/jobs/kubernetes/kubeview"
)

// node reads the Node that runs server.
func (m *Manager) node(ctx context.Context, server string) (kubeview.Node, error) {
	label := m.opts.Mapping.Label
	if label == "" {
		if !config.KubeNodeName(server) {
			return kubeview.Node{}, fmt.Errorf("%w: %s is not a node name", ErrUnknownNode, errtext.Quote(server))
		}
		data, found, err := get(ctx, "reading kubernetes node "+server, m.opts.Client.CoreV1().RESTClient().Get().Resource("nodes").Name(server))
		switch {
		case err != nil:
			return kubeview.Node{}, err
		case !found:
			return kubeview.Node{}, fmt.Errorf("%w: %s", ErrUnknownNode, server)
		}
		n, err := kubeview.ParseNode(data)
		if err != nil {
			return kubeview.Node{}, fmt.Errorf("reading kubernetes node %s: %w", server, err)
		}
		return n, nil
	}
	if !config.KubeLabelValue(server) {
		return kubeview.Node{}, fmt.Errorf("%w: %s is not a value of label %s", ErrUnknownNode, errtext.Quote(server), label)
	}
	nodes, err := m.nodes(ctx, label+"="+server)
	if err != nil {
		return kubeview.Node{}, err
	}
	switch len(nodes) {
	case 0:
		return kubeview.Node{}, fmt.Errorf("%w: none has %s=%s", ErrUnknownNode, label, server)
	case 1:
		return nodes[0], nil
	}
	return kubeview.Node{}, fmt.Errorf("nodes %s and %s both run server %s (label %s)", nodes[0].Name, nodes[1].Name, server, label)
}

// patch applies a JSON merge patch to node n, with the resourceVersion read: if the Node
// changed since, the API server refuses it (409) and nothing is overwritten.
func (m *Manager) patch(ctx context.Context, n kubeview.Node, spec, annotations map[string]any) error {
	meta := map[string]any{"resourceVersion": n.ResourceVersion}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	body := map[string]any{"metadata": meta}
	if spec != nil {
		body["spec"] = spec
	}
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	_, err = m.opts.Client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: kubeview.FieldManager})
	if err != nil {
		return apiError("patching kubernetes node "+n.Name, err)
	}
	return nil
}

// Drain implements jobs.Manager: the Node is cordoned with rota's annotation (jobs.Marker and
// reason), then the pods a drain may take are evicted (see ContinueDrain). A Node cordoned by
// anyone but rota (kubeview.Node.CordonedByRota) is left as it is and jobs.ErrNotOurs
// returned. Draining a Node rota already cordoned only evicts again. A stale annotation (its
// cordon lifted by someone else) is replaced.
func (m *Manager) Drain(ctx context.Context, server, reason string) error {
	n, err := m.node(ctx, server)
	if err != nil {
		return fmt.Errorf("draining %s: %w", server, err)
	}
	switch {
	case n.CordonedByPerson():
		return fmt.Errorf("draining %s: %w (node %s %s)", server, jobs.ErrNotOurs, n.Name, cordonedBy(n))
	case !n.Unschedulable:
		if err := m.patch(ctx, n, map[string]any{"unschedulable": true}, map[string]any{kubeview.DrainAnnotation: kubeview.Reason(reason)}); err != nil {
			return fmt.Errorf("draining %s: %w", server, err)
		}
		m.opts.Log.WithFields(logrus.Fields{"node": server, "reason": reason}).Info("cordoned in kubernetes")
	}
	if _, err := m.evictFrom(ctx, server, n.Name); err != nil {
		// The cordon holds and the drain goes on; the next pass evicts again.
		m.opts.Log.WithField("node", server).WithError(err).Warn("evictions did not finish; the next pass tries again")
	}
	return nil
}

// ContinueDrain implements jobs.DrainContinuer: on a Node rota cordoned, it evicts every pod a
// drain may take, through the Eviction API, so a PodDisruptionBudget decides; a pod the budget
// protects now stays, and the next pass asks again. A drain takes the pods of a ReplicaSet, a
// ReplicationController or a StatefulSet (their controller starts them again elsewhere) that
// carry no do-not-disrupt annotation and keep nothing on the Node (a volume claim, a device
// claim, emptyDir data unless jobs.kubernetes.delete_emptydir_data: see
// kubeview.Pod.Drainable); DaemonSet pods, static pods, bare pods and the pods of a Job (work
// that would lose its run) are left to end on their own, and the drain waits for them. A Node
// rota did not cordon is left alone.
func (m *Manager) ContinueDrain(ctx context.Context, server string) error {
	n, err := m.node(ctx, server)
	if err != nil {
		return fmt.Errorf("evicting from %s: %w", server, err)
	}
	if !n.CordonedByRota() {
		return nil
	}
	_, err = m.evictFrom(ctx, server, n.Name)
	return err
}

// cordonedBy says who cordoned a Node rota did not: for jobs.ErrNotOurs.
func cordonedBy(n kubeview.Node) string {
	switch {
	case n.DrainReason == "":
		return "cordoned without rota's annotation"
	case len(n.CordonOwners) == 0:
		return "cordoned, and no field manager owns the cordon"
	}
	return "cordoned by " + errtext.Quote(strings.Join(n.CordonOwners, ",")) + " since rota's drain, whose annotation it still carries"
}

// evictFrom evicts from Node node what a drain may take; it returns how many pods it evicted.
// A pod whose eviction fails (two PodDisruptionBudgets select it: 500) does not stop the
// others, as with kubectl drain: every failure is returned, joined.
func (m *Manager) evictFrom(ctx context.Context, server, node string) (int, error) {
	pods, err := m.pods(ctx, "spec.nodeName="+node)
	if err != nil {
		return 0, fmt.Errorf("evicting from %s: %w", server, err)
	}
	var evicted, waiting int
	var errs []error
	for _, p := range pods {
		if !p.Drainable(m.opts.EmptyDirData) {
			continue
		}
		ok, err := m.evict(ctx, p)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("evicting %s from %s: %w", p.ID(), server, err))
		case ok:
			evicted++
		default:
			waiting++
		}
	}
	if evicted > 0 || waiting > 0 || len(errs) > 0 {
		m.opts.Log.WithFields(logrus.Fields{"node": server, "evicted": evicted, "held_by_budget": waiting, "failed": len(errs)}).Info("evicted pods in kubernetes")
	}
	return evicted, errors.Join(errs...)
}

// evict asks the Eviction API to evict pod p, the very pod read (its UID): true when it did;
// false, and no error, when a PodDisruptionBudget does not allow it now (429) or the pod is
// gone or replaced already.
func (m *Manager) evict(ctx context.Context, p kubeview.Pod) (bool, error) {
	uid := types.UID(p.UID)
	err := m.opts.Client.CoreV1().Pods(p.Namespace).EvictV1(ctx, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
	})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsTooManyRequests(err):
		m.opts.Log.WithFields(logrus.Fields{"pod": p.ID()}).Debug("eviction refused by a disruption budget")
		return false, nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return false, nil
	}
	return false, apiError("evicting", err)
}

// Resume implements jobs.Manager: rota's powered-off taint and annotation are removed, and a
// cordon rota made (kubeview.Node.CordonedByRota) is lifted. A cordon anyone else made stays,
// even over rota's annotation (jobs.ErrNotOurs, once rota's own marks are gone); a Node with
// none of rota's marks is left as it is.
func (m *Manager) Resume(ctx context.Context, server string) error {
	n, err := m.node(ctx, server)
	if err != nil {
		return fmt.Errorf("resuming %s: %w", server, err)
	}
	spec, annotations := map[string]any{}, map[string]any{}
	if n.PoweredOff() {
		spec["taints"] = withoutPoweredOff(n.Taints)
	}
	if n.DrainReason != "" {
		annotations[kubeview.DrainAnnotation] = nil
	}
	if n.CordonedByRota() {
		spec["unschedulable"] = nil
	}
	if len(spec) > 0 || len(annotations) > 0 {
		if err := m.patch(ctx, n, spec, annotations); err != nil {
			return fmt.Errorf("resuming %s: %w", server, err)
		}
		m.opts.Log.WithField("node", server).Info("resumed in kubernetes")
	}
	if n.CordonedByPerson() {
		return fmt.Errorf("resuming %s: %w (node %s %s)", server, jobs.ErrNotOurs, n.Name, cordonedBy(n))
	}
	return nil
}

// PoweredOff implements jobs.PowerAware: the Node gets rota's powered-off taint (NoSchedule),
// so nothing is placed on it while it is off, even if someone lifts the cordon. Resume removes
// it once the server is ready again.
func (m *Manager) PoweredOff(ctx context.Context, server string) error {
	n, err := m.node(ctx, server)
	if err != nil {
		return fmt.Errorf("marking %s powered off: %w", server, err)
	}
	if n.PoweredOff() {
		return nil
	}
	taints := append(slices.Clone(n.Taints), kubeview.Taint{Key: kubeview.PoweredOffTaint, Effect: kubeview.NoSchedule})
	if err := m.patch(ctx, n, map[string]any{"taints": taints}, nil); err != nil {
		return fmt.Errorf("marking %s powered off: %w", server, err)
	}
	m.opts.Log.WithField("node", server).Info("tainted powered off in kubernetes")
	return nil
}

func withoutPoweredOff(taints []kubeview.Taint) []kubeview.Taint {
	out := []kubeview.Taint{}
	for _, t := range taints {
		if t.Key != kubeview.PoweredOffTaint {
			out = append(out, t)
		}
	}
	return out
}
