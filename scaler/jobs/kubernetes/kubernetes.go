package kubernetes

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs"
	"github.com/rotahq/rota/scaler/jobs/kubernetes/kubeview"
)

// ErrUnknownNode: no Node runs the server (jobs.ErrNotRegistered: one powered on registers
// its Node as its kubelet starts).
var ErrUnknownNode = fmt.Errorf("%w: no kubernetes node runs the server", jobs.ErrNotRegistered)

// Options build a Manager.
type Options struct {
	// Client talks to the API server (NewFromConfig builds it from jobs.kubernetes).
	Client k8s.Interface
	// Mapping says which server each Node runs on (jobs.kubernetes.node_label).
	Mapping kubeview.Mapping
	// Servers are rota's servers (the inventory): a pod that could run on all of them asks
	// nothing of them; nil takes the servers the Nodes run.
	Servers []string
	// Classify maps a pod's shape to its class (config.Config.Classify).
	Classify kubeview.Classifier
	// GPUClasses are the DeviceClasses whose devices count as whole GPUs
	// (jobs.kubernetes.gpu_device_classes).
	GPUClasses []string
	// EmptyDirData lets drains and moves evict pods whose emptyDir volumes lose their data
	// (jobs.kubernetes.delete_emptydir_data; see kubeview.Pod.Drainable).
	EmptyDirData bool
	// Budgets: read the PodDisruptionBudgets, for the pods one keeps from a move now
	// (policy.moves.enabled: only a move needs them, so a fleet without moves needs no right
	// to list them, and one upgraded without re-applying the role reads on as before).
	Budgets bool
	// Clock dates each read (see kubeview.Pod.Job).
	Clock Clock
	// PageSize is how many objects one list call asks for (default 500).
	PageSize int64
	Log      *logrus.Entry
}

// Clock is the adapter's time source.
type Clock interface {
	Now() time.Time
}

// Manager is the jobs.Manager for Kubernetes. Reads list Nodes and pods through the API
// server, page by page, parsed by package kubeview; writes are merge patches on Nodes that
// carry the resourceVersion read (so a change made in between makes them fail, never
// overwrites it) and evictions through the Eviction API (a PodDisruptionBudget can refuse
// them; nothing is ever deleted). It keeps no state between calls and is safe for concurrent
// use.
type Manager struct {
	opts Options
}

var (
	_ jobs.Manager        = (*Manager)(nil)
	_ jobs.PowerAware     = (*Manager)(nil)
	_ jobs.DrainContinuer = (*Manager)(nil)
	_ jobs.Mover          = (*Manager)(nil)
	_ jobs.Watcher        = (*Manager)(nil)
)

// New returns a Manager.
func New(opts Options) *Manager {
	if opts.PageSize <= 0 {
		opts.PageSize = 500
	}
	return &Manager{opts: opts}
}

// NewFromConfig builds a Manager from rota's config: jobs.kubernetes (kubeconfig, context,
// node_label, gpu_device_classes, delete_emptydir_data), jobs.timeout, policy.moves.enabled,
// the servers of the pools and the classes.
func NewFromConfig(cfg *config.Config, clock Clock, log *logrus.Entry) (*Manager, error) {
	rc, err := RESTConfig(cfg.Jobs.Kubernetes, time.Duration(cfg.Jobs.Timeout))
	if err != nil {
		return nil, err
	}
	c, err := k8s.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("jobs.kubernetes: %w", err)
	}
	var servers []string
	for _, p := range cfg.Pools {
		for _, n := range p.Nodes {
			servers = append(servers, n.Name)
		}
	}
	return New(Options{Client: c, Mapping: kubeview.Mapping{Label: cfg.Jobs.Kubernetes.NodeLabel},
		Servers: servers, Classify: cfg.Classify, GPUClasses: cfg.Jobs.Kubernetes.GPUDeviceClasses,
		EmptyDirData: cfg.Jobs.Kubernetes.DeleteEmptyDirData, Budgets: cfg.Policy.Moves.Enabled, Clock: clock, Log: log}), nil
}

// RESTConfig is how rota reaches the API server: the kubeconfig file and context named, or the
// pod's service account when rota runs in the cluster and names none. Every request is bounded
// by timeout and speaks JSON (what the parser reads).
func RESTConfig(k config.KubernetesJobs, timeout time.Duration) (*rest.Config, error) {
	var rc *rest.Config
	var err error
	if k.Kubeconfig == "" {
		if rc, err = rest.InClusterConfig(); err != nil {
			return nil, fmt.Errorf("jobs.kubernetes.kubeconfig is empty and rota runs outside a cluster: %w", err)
		}
	} else {
		rc, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: k.Kubeconfig},
			&clientcmd.ConfigOverrides{CurrentContext: k.Context}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("jobs.kubernetes.kubeconfig %s: %w", k.Kubeconfig, err)
		}
	}
	rc.Timeout, rc.UserAgent = timeout, "rota"
	rc.ContentType, rc.AcceptContentTypes = "application/json", "application/json"
	// Draining a large server evicts its pods one request each.
	rc.QPS, rc.Burst = 50, 100
	return rc, nil
}

// Read returns one whole View: every Node, every pod that has not finished, when a pod that
// holds its Node claims devices, the GPUs the allocated ResourceClaims hold (see
// Manager.claimed), when one is a Job's, whether each Job outlives its pods' eviction (the
// Jobs are listed: see kubeview.MarkJobs), and when moves are on (Options.Budgets) and one
// could take a pod, whether a PodDisruptionBudget keeps it now (the budgets are listed: see
// kubeview.MarkBudgets). A list
// that fails, or one object in it that does not parse, fails the read.
func (m *Manager) Read(ctx context.Context) (kubeview.View, error) {
	nodes, err := m.nodes(ctx, "")
	if err != nil {
		return kubeview.View{}, err
	}
	pods, err := m.pods(ctx, live)
	if err != nil {
		return kubeview.View{}, err
	}
	claimed, err := m.claimed(ctx, pods)
	if err != nil {
		return kubeview.View{}, err
	}
	if kubeview.RunsJobs(pods) {
		jobs, err := listAll(ctx, m, m.opts.Client.BatchV1().RESTClient(), "jobs", "", "", kubeview.ParseJobList)
		if err != nil {
			return kubeview.View{}, err
		}
		kubeview.MarkJobs(pods, jobs)
	}
	if m.opts.Budgets && kubeview.AnyMovable(pods, m.opts.EmptyDirData) {
		budgets, err := listAll(ctx, m, m.opts.Client.PolicyV1().RESTClient(), "poddisruptionbudgets", "", "", kubeview.ParseBudgetList)
		if err != nil {
			return kubeview.View{}, err
		}
		kubeview.MarkBudgets(pods, budgets)
	}
	return kubeview.View{Nodes: nodes, Pods: pods, Claimed: claimed}, nil
}

// scope is the Scope of a read made now.
func (m *Manager) scope() kubeview.Scope {
	return kubeview.Scope{Mapping: m.opts.Mapping, Servers: m.opts.Servers, Now: m.opts.Clock.Now(), EmptyDirData: m.opts.EmptyDirData}
}

// Nodes implements jobs.Manager.
func (m *Manager) Nodes(ctx context.Context) (map[string]fleet.JobsView, error) {
	v, err := m.Read(ctx)
	if err != nil {
		return nil, err
	}
	out, err := v.JobsViews(m.scope())
	if err != nil {
		return nil, fmt.Errorf("reading kubernetes nodes: %w", err)
	}
	return out, nil
}

// The field selectors of the pods Read, Demand and Waiting list.
const (
	// live: the pods not finished.
	live = "status.phase!=Succeeded,status.phase!=Failed"
	// bound: the live pods a node took (for the Nodes anti-affinity or spread keeps one off).
	bound = "spec.nodeName!=," + live
	// pending: the pods that wait, for a node or on the one they are bound to.
	pending = "status.phase=Pending"
	// waiting: the pending pods no node took yet.
	waiting = "spec.nodeName=," + pending
)

// Demand implements jobs.Manager: the pods marked unschedulable, each group with the servers
// its pods could run on, and the pods bound to a Node that is not Ready (spec.nodeName), each
// for that Node's server alone. Pods that fit none of rota's servers are no demand for them, and are
// logged. When a waiting pod has required pod anti-affinity or DoNotSchedule topology spread,
// the pods bound to Nodes are listed too, for the Nodes it keeps the pod off
// (kubeview.PlaceApart).
func (m *Manager) Demand(ctx context.Context) ([]fleet.Demand, error) {
	nodes, err := m.nodes(ctx, "")
	if err != nil {
		return nil, err
	}
	pods, err := m.pods(ctx, pending)
	if err != nil {
		return nil, err
	}
	if err := m.volumes(ctx, pods); err != nil {
		return nil, err
	}
	if err := m.devices(ctx, pods, nodes); err != nil {
		return nil, err
	}
	if kubeview.KeepsApart(pods) {
		held, err := m.pods(ctx, bound)
		if err != nil {
			return nil, err
		}
		kubeview.PlaceApart(pods, held, nodes)
	}
	demand, unplaced, err := kubeview.View{Nodes: nodes, Pods: pods}.Demand(m.scope(), m.opts.Classify)
	if err != nil {
		return nil, fmt.Errorf("reading kubernetes demand: %w", err)
	}
	if len(unplaced) > 0 {
		m.opts.Log.WithFields(logrus.Fields{"pods": len(unplaced), "first": unplaced[0]}).Info("unschedulable pods fit none of rota's servers: no demand for them")
	}
	return demand, nil
}

// volumes puts, into the placement of each waiting pod that mounts a PersistentVolumeClaim
// bound to a PersistentVolume, that volume's required node affinity (a local volume names its
// Node), so that the pod wakes only a server it could start on: a StatefulSet's pod whose local
// volume is on a server that is off waits for that server. A claim not bound yet, or not
// there, says nothing of where the pod can run. Each claim is read once a call.
func (m *Manager) volumes(ctx context.Context, pods []kubeview.Pod) error {
	affinity := map[string]*kubeview.NodeSelector{} // by namespace/claim
	for i := range pods {
		p := &pods[i]
		if !p.Waits() {
			continue
		}
		for _, c := range p.Claims {
			key := p.Namespace + "/" + c
			sel, ok := affinity[key]
			if !ok {
				var err error
				if sel, err = m.claimAffinity(ctx, p.Namespace, c); err != nil {
					return err
				}
				affinity[key] = sel
			}
			if sel != nil {
				p.Placement.Volumes = append(p.Placement.Volumes, *sel)
			}
		}
	}
	return nil
}

// claimAffinity is the required node affinity of the volume claim ns/claim is bound to; nil
// when it is bound to none, it or its volume is not there, or the volume names no Node.
func (m *Manager) claimAffinity(ctx context.Context, ns, claim string) (*kubeview.NodeSelector, error) {
	what := "reading kubernetes persistentvolumeclaim " + ns + "/" + claim
	data, found, err := get(ctx, what, m.opts.Client.CoreV1().RESTClient().Get().Namespace(ns).Resource("persistentvolumeclaims").Name(claim))
	if err != nil || !found {
		return nil, err
	}
	volume, err := kubeview.ParseClaimVolume(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if volume == "" {
		return nil, nil
	}
	what = "reading kubernetes persistentvolume " + volume
	data, found, err = get(ctx, what, m.opts.Client.CoreV1().RESTClient().Get().Resource("persistentvolumes").Name(volume))
	if err != nil || !found {
		return nil, err
	}
	sel, err := kubeview.ParseVolumeAffinity(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return sel, nil
}

// Waiting implements jobs.Watcher: the UIDs of the pods marked unschedulable, from one list of
// the pods no node took (Demand reads the Nodes too).
func (m *Manager) Waiting(ctx context.Context) ([]string, error) {
	pods, err := m.pods(ctx, waiting)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, p := range pods {
		if p.Waits() {
			ids = append(ids, p.UID)
		}
	}
	return ids, nil
}

// nodes lists the Nodes, those with label selector only when it is not empty.
func (m *Manager) nodes(ctx context.Context, selector string) ([]kubeview.Node, error) {
	return listAll(ctx, m, m.opts.Client.CoreV1().RESTClient(), "nodes", "", selector, kubeview.ParseNodeList)
}

// pods lists the pods of every namespace that match field selector fields.
func (m *Manager) pods(ctx context.Context, fields string) ([]kubeview.Pod, error) {
	return listAll(ctx, m, m.opts.Client.CoreV1().RESTClient(), "pods", fields, "", kubeview.ParsePodList)
}

// listAll lists a resource of every namespace page by page, through the client of its API
// group; the API server serves the pages from one snapshot, or fails the list (410 Gone) when
// it no longer can.
func listAll[T any](ctx context.Context, m *Manager, client rest.Interface, resource, fields, labels string, parse func([]byte) ([]T, string, error)) ([]T, error) {
	var out []T
	cont := ""
	for {
		req := client.Get().Resource(resource).
			Param("limit", strconv.FormatInt(m.opts.PageSize, 10))
		for k, v := range map[string]string{"continue": cont, "fieldSelector": fields, "labelSelector": labels} {
			if v != "" {
				req = req.Param(k, v)
			}
		}
		data, err := raw(req.Do(ctx))
		if err != nil {
			return nil, apiError("listing kubernetes "+resource, err)
		}
		page, next, err := parse(data)
		if err != nil {
			return nil, fmt.Errorf("listing kubernetes %s: %w", resource, err)
		}
		out = append(out, page...)
		if next == "" {
			return out, nil
		}
		cont = next
	}
}

// get reads one object: its body, or found false when the API server has no such object (404);
// any other failure is an error saying what was read.
func get(ctx context.Context, what string, req *rest.Request) (data []byte, found bool, err error) {
	data, err = raw(req.Do(ctx))
	switch {
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, apiError(what, err)
	}
	return data, true, nil
}

// raw is a result's body, or its error with the API server's own message (its Status).
func raw(res rest.Result) ([]byte, error) {
	data, err := res.Raw()
	if err != nil {
		return nil, res.Error()
	}
	return data, nil
}

// apiError wraps an API error with what it means for rota's setup.
func apiError(what string, err error) error {
	switch {
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s: the API server does not accept rota's credentials (jobs.kubernetes.kubeconfig, or the service account rota runs as): %w", what, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s: rota's role does not allow it (deploy/kubernetes/rbac.yaml): %w", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
