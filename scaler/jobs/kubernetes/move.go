package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/scaler/jobs"
	"github.com/rotahq/rota/scaler/jobs/kubernetes/kubeview"
)

// Move implements jobs.Mover: each pod named (namespace/name) that still runs on the server is
// evicted through the Eviction API (a PodDisruptionBudget may keep it, for now), so its
// controller starts it again elsewhere. Only a pod whose controller does start it again is
// taken (a ReplicaSet, ReplicationController, StatefulSet, or a Job that outlives the
// eviction, read now: see kubeview.BatchJob.Outlives; never a bare pod, a DaemonSet's or a
// static pod), none carrying a do-not-disrupt annotation, none that may be tied to the server
// (a PersistentVolumeClaim, a device claim, a resource rota does not model), and none whose
// emptyDir data it would lose unless jobs.kubernetes.delete_emptydir_data allows it (see
// kubeview.Pod.Movable). The server must be cordoned by rota (the move's drain does that):
// else the scheduler could place the new pod right back, and jobs.ErrCannotMove is returned.
// The scheduler, not rota, places the new pods: it keeps them off every cordoned server, but
// not off the other servers in exclude (Kubernetes takes no per-pod exclusions from rota).
// Pods already gone are left alone. A pod whose eviction fails does not keep the others:
// every failure is returned, joined.
func (m *Manager) Move(ctx context.Context, server string, ids, exclude []string) (int, error) {
	for _, id := range ids {
		ns, name, ok := strings.Cut(id, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return 0, fmt.Errorf("moving pods off %s: %s is not a namespace/name", server, errtext.Quote(id))
		}
	}
	n, err := m.node(ctx, server)
	if err != nil {
		return 0, fmt.Errorf("moving pods off %s: %w", server, err)
	}
	if !n.CordonedByRota() {
		return 0, fmt.Errorf("moving pods off %s: %w: node %s is not cordoned by rota, and the scheduler could place them back on it", server, jobs.ErrCannotMove, n.Name)
	}
	pods, err := m.pods(ctx, "spec.nodeName="+n.Name)
	if err != nil {
		return 0, fmt.Errorf("moving pods off %s: %w", server, err)
	}
	if err := m.markJobs(ctx, pods, ids); err != nil {
		return 0, fmt.Errorf("moving pods off %s: %w", server, err)
	}
	moved, kept := 0, 0
	var errs []error
	for _, p := range pods {
		if !slices.Contains(ids, p.ID()) {
			continue
		}
		if !p.Movable(m.opts.EmptyDirData) {
			kept++
			continue
		}
		// One pod's failure does not keep the others (see evictFrom).
		ok, err := m.evict(ctx, p)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("moving %s off %s: %w", p.ID(), server, err))
		case ok:
			moved++
		default:
			kept++
		}
	}
	m.opts.Log.WithFields(logrus.Fields{"node": server, "pods": moved, "kept": kept, "failed": len(errs)}).Info("moved pods in kubernetes")
	return moved, errors.Join(errs...)
}

// markJobs reads the Job of each pod of pods named in ids that a Job runs, once each, and marks
// the pods whose Job outlives their eviction (kubeview.MarkJobs). A Job that is gone marks none.
func (m *Manager) markJobs(ctx context.Context, pods []kubeview.Pod, ids []string) error {
	var jobs []kubeview.BatchJob
	read := map[string]bool{} // by namespace/name
	for _, p := range pods {
		key := p.Namespace + "/" + p.JobName
		if p.JobName == "" || read[key] || !slices.Contains(ids, p.ID()) {
			continue
		}
		read[key] = true
		what := "reading kubernetes job " + key
		data, found, err := get(ctx, what, m.opts.Client.BatchV1().RESTClient().Get().Namespace(p.Namespace).Resource("jobs").Name(p.JobName))
		if err != nil {
			return err
		}
		if !found {
			continue
		}
		j, err := kubeview.ParseJob(data)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		jobs = append(jobs, j)
	}
	kubeview.MarkJobs(pods, jobs)
	return nil
}
