package kubeview

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs"
)

// View is one whole read of the cluster: every Node and every pod that has not finished.
type View struct {
	Nodes []Node
	Pods  []Pod
	// Claimed are the GPUs each allocated ResourceClaim holds, by namespace/name (see
	// ClaimedGPUs): read only when a pod that holds its Node claims devices (ClaimsDevices).
	Claimed map[string][]string
}

// Mapping says which rota server each Node runs on: the label Label names it, or (Label
// empty) the Node's own name does.
type Mapping struct {
	Label string
}

// Server is the rota server node n runs on ("" when the Node names none).
func (m Mapping) Server(n Node) string {
	if m.Label == "" {
		return n.Name
	}
	return n.Labels[m.Label]
}

// servers indexes the Nodes by the server each runs on. Two Nodes that name one server fail
// the read: rota cannot tell which one's pods are the server's.
func (v View) servers(m Mapping) (map[string]*Node, error) {
	out := make(map[string]*Node, len(v.Nodes))
	for i := range v.Nodes {
		n := &v.Nodes[i]
		s := m.Server(*n)
		if s == "" {
			continue
		}
		if prev, ok := out[s]; ok {
			return nil, fmt.Errorf("nodes %s and %s both run server %s (label %s)", prev.Name, n.Name, s, m.Label)
		}
		out[s] = n
	}
	return out, nil
}

// Holds reports whether pod p holds part of its node: bound, not finished, neither a
// DaemonSet's pod (it runs on every node, and goes with it) nor a static pod's mirror.
func (p Pod) Holds() bool {
	return p.NodeName != "" && !p.Terminal() && p.Controller != "DaemonSet" && !p.Mirror
}

// service are the controllers that keep a number of pods running and start one elsewhere for
// each evicted: a drain may take their pods.
var service = []string{"ReplicaSet", "ReplicationController", "StatefulSet"}

// Drainable reports whether a drain evicts pod p (see ContinueDrain): never one that mounts a
// PersistentVolumeClaim or claims devices through dynamic resource allocation (its volume or
// its allocated devices may be this Node's: the pod could start nowhere else), nor one whose
// emptyDir volumes would lose their data (see losesData): the drain waits for it instead.
func (p Pod) Drainable(emptyDirData bool) bool {
	return p.Holds() && !p.Deleting && !p.DoNotDisrupt && slices.Contains(service, p.Controller) && !p.claims() && !p.losesData(emptyDirData)
}

// claims reports whether pod p holds a claim that may be bound to its Node: a
// PersistentVolumeClaim (a local volume) or a ResourceClaim (devices allocated on the Node).
func (p Pod) claims() bool { return len(p.Claims) > 0 || len(p.ResourceClaims) > 0 }

// losesData reports whether evicting pod p loses data: it has emptyDir volumes, whose data
// goes with the pod, and emptyDirData (jobs.kubernetes.delete_emptydir_data, kubectl drain's
// --delete-emptydir-data) does not allow that. rota then never evicts it, as kubectl drain
// refuses to by default.
func (p Pod) losesData(emptyDirData bool) bool { return len(p.EmptyDirs) > 0 && !emptyDirData }

// held says why a move may not take pod p, beyond do-not-disrupt ("" when it may): its
// controller does not start it again (see restarted); it may be tied to its Node by what rota
// does not read, a claim (see claims) or a resource rota does not model (a few Nodes may offer
// it), so rota could not tell that it has room elsewhere, and one evicted with none waits while
// its server powers off; its emptyDir data would be lost (see losesData); or a
// PodDisruptionBudget keeps it now (Budget, see MarkBudgets).
func (p Pod) held(emptyDirData bool) string {
	switch {
	case p.Controller == "Job" && !p.JobOutlives:
		return "its Job would not outlive its eviction"
	case !p.restarted():
		return "no controller starts it again once evicted"
	case len(p.Claims) > 0:
		return "it mounts PersistentVolumeClaim " + p.Claims[0] + ", whose volume may be its Node's"
	case len(p.ResourceClaims) > 0:
		return "it claims devices, which may be allocated on its Node"
	case len(p.Extended) > 0:
		return "it requests " + p.Extended[0] + ", which few Nodes may offer"
	case p.losesData(emptyDirData):
		return "its emptyDir volume " + p.EmptyDirs[0] + " would lose its data (jobs.kubernetes.delete_emptydir_data)"
	}
	return p.Budget
}

// Waits reports whether pod p waits for a node the scheduler could not find: pending,
// unbound, not being deleted, and marked unschedulable.
func (p Pod) Waits() bool {
	return p.NodeName == "" && p.Phase == podPending && !p.Deleting && p.Unschedulable
}

// waitsBound reports whether pod p is bound to a Node and waits there for its kubelet: pending
// and not being deleted, neither a DaemonSet's pod (one runs on every Node: it is no work for a
// server) nor a static pod's mirror. A pod created with spec.nodeName (by hand, or by a
// controller that places its own) is bound at once, never seen by the scheduler: it can start
// on that Node alone.
func (p Pod) waitsBound() bool {
	return p.NodeName != "" && p.Phase == podPending && !p.Deleting && p.Controller != "DaemonSet" && !p.Mirror
}

// ours reports whether rota made node n unschedulable: its cordon (CordonedByRota), or its
// powered-off taint and no cordon by anyone else over it. rota's annotation alone, with the
// cordon it describes lifted or taken over (StaleDrain), is not rota's.
func ours(n Node) bool {
	return n.CordonedByRota() || (n.PoweredOff() && !n.Unschedulable)
}

// Scope is what a view is read against: which server each Node runs, rota's servers, and when
// the view was read.
type Scope struct {
	Mapping Mapping
	// Servers are rota's servers (the inventory): a pod that could run on every one of them
	// asks nothing of them (empty fleet.Needs); nil takes the servers the Nodes run.
	Servers []string
	// Now is when the view was read: the last checkpoint of a pod that loses nothing when it
	// moves but its restart (see Job).
	Now time.Time
	// EmptyDirData: a pod's emptyDir data may be lost to a move
	// (jobs.kubernetes.delete_emptydir_data, see Pod.losesData).
	EmptyDirData bool
}

// JobsViews is what the scaler needs of each server, by server name: what the pods that hold
// it request (Holds; their GPUs are those they request and those their allocated resource
// claims hold, each device once though several pods share its claim) and the pods themselves
// (Running, see Job), whether it takes no new pods (cordoned, or tainted by rota) and holds
// none (Drained), whether rota did that (DrainedByRota), and whether its Ready condition is
// true (Responding: a booted server counts as ready only then).
func (v View) JobsViews(sc Scope) (map[string]fleet.JobsView, error) {
	servers, err := v.servers(sc.Mapping)
	if err != nil {
		return nil, err
	}
	fits := newFits(servers, sc.Servers)
	held := map[string][]Pod{}
	for _, p := range v.Pods {
		if p.Holds() {
			held[p.NodeName] = append(held[p.NodeName], p)
		}
	}
	out := make(map[string]fleet.JobsView, len(servers))
	for name, n := range servers {
		jv := fleet.JobsView{Known: true, Responding: n.Ready}
		var milliCPU int64
		claimed := map[string]bool{} // devices held through claims, each once
		for _, p := range held[n.Name] {
			jv.Jobs++
			milliCPU += p.Requests.MilliCPU
			jv.GPUs += int(p.Requests.GPUs)
			needs, _ := fits.needs(p.Placement, p.Extended)
			j := p.Job(needs, sc)
			gpus := p.heldGPUs(v.Claimed)
			j.GPUs += len(gpus)
			for _, g := range gpus {
				claimed[g] = true
			}
			jv.Running = append(jv.Running, j)
		}
		jv.CPUs = int((milliCPU + 999) / 1000)
		jv.GPUs += len(claimed)
		closed := n.Unschedulable || n.PoweredOff()
		jv.Drained = closed && !jv.Allocated()
		jv.DrainedByRota = ours(*n)
		out[name] = jv
	}
	return out, nil
}

// restarted reports whether pod p's controller starts it again, elsewhere if its Node is
// cordoned, once evicted: a service's (see service), or a Job's that outlives the eviction
// (JobOutlives). A move may take only such a pod.
func (p Pod) restarted() bool {
	return slices.Contains(service, p.Controller) || (p.Controller == "Job" && p.JobOutlives)
}

// Job is pod p as the planner weighs moving it, in a view read against sc: its requests,
// where it could run (needs), and whether a move may take it (Requeueable, and when not, why:
// Held, see held). The pod of a ReplicaSet, ReplicationController or StatefulSet keeps no run
// of its own (its state, if any, lives on its volumes), so its checkpoint is the time of the
// read: moving it loses its restart only. A Job's pod has no known checkpoint (a move loses
// its whole run).
func (p Pod) Job(needs fleet.Needs, sc Scope) fleet.Job {
	held := p.held(sc.EmptyDirData)
	j := fleet.Job{ID: p.ID(), Department: p.Namespace, CPUs: p.Shape().CPUs, GPUs: int(p.Requests.GPUs),
		Memory: p.Requests.Memory, Servers: 1, Needs: needs, Requeueable: held == "", Held: held,
		DoNotDisrupt: p.DoNotDisrupt, Started: p.Started, TimeLimit: p.Deadline}
	if slices.Contains(service, p.Controller) {
		j.Checkpoint = sc.Now
	}
	return j
}

// Movable reports whether a move may evict pod p: it holds its node, is not being deleted,
// carries no do-not-disrupt annotation, and nothing holds it (see held).
func (p Pod) Movable(emptyDirData bool) bool {
	return p.Holds() && !p.Deleting && !p.DoNotDisrupt && p.held(emptyDirData) == ""
}

// Classifier maps a pod's shape to its class (config.Config.Classify).
type Classifier func(config.Shape) string

// Shape is what the pod asks of its server: whole cores (rounded up), memory, GPUs.
func (p Pod) Shape() config.Shape {
	return config.Shape{CPUs: int((p.Requests.MilliCPU + 999) / 1000), GPUs: int(p.Requests.GPUs), Memory: config.Bytes(p.Requests.Memory)}
}

// Demand groups the pods that wait for a node (Waits), and those bound to the Node of one of
// rota's servers that is not Ready that wait for its kubelet (waitsBound: they ask for that
// server alone), by
// class, department (the namespace), shape, the servers they could run on (Needs.Nodes, when
// not all of rota's) and time limit, with the oldest creation of each group (Since), sorted. A
// pod that fits no server rota manages (its placement, or a resource rota does not model that
// no Node of rota's offers; for a bound pod, its Node cordoned by a person)
// is no demand for rota: it is left out, and named in unplaced.
func (v View) Demand(sc Scope, classify Classifier) (demand []fleet.Demand, unplaced []string, err error) {
	servers, err := v.servers(sc.Mapping)
	if err != nil {
		return nil, nil, err
	}
	fits := newFits(servers, sc.Servers)
	down := map[string]bool{} // the Nodes of rota's servers that are not Ready, by name
	for _, s := range fits.all {
		if n, ok := servers[s]; ok && !n.Ready {
			down[n.Name] = true
		}
	}
	type key struct {
		class, department string
		shape             config.Shape
		needs             fleet.Needs
		limit             time.Duration
	}
	groups := map[key]*fleet.Demand{}
	for _, p := range v.Pods {
		var needs fleet.Needs
		var ok bool
		switch {
		case p.Waits():
			needs, ok = fits.needs(p.Placement, p.Extended)
		case p.waitsBound() && down[p.NodeName]:
			needs, ok = fits.on(p.NodeName, p.Extended)
		default:
			continue
		}
		if !ok {
			unplaced = append(unplaced, p.ID())
			continue
		}
		shape := p.Shape()
		k := key{classify(shape), p.Namespace, shape, needs, p.Deadline}
		d, ok := groups[k]
		if !ok {
			d = &fleet.Demand{Class: k.class, Department: k.department, Shape: shape, Needs: needs,
				TimeLimit: p.Deadline, Nodes: 1, Since: p.Created}
			groups[k] = d
		}
		d.Count++
		if p.Created.Before(d.Since) {
			d.Since = p.Created
		}
	}
	demand = make([]fleet.Demand, 0, len(groups))
	for _, d := range groups {
		demand = append(demand, *d)
	}
	slices.SortFunc(demand, func(a, b fleet.Demand) int {
		return cmp.Or(cmp.Compare(a.Class, b.Class), cmp.Compare(a.Department, b.Department),
			cmp.Compare(a.Shape.CPUs, b.Shape.CPUs), cmp.Compare(a.Shape.GPUs, b.Shape.GPUs),
			cmp.Compare(a.Shape.Memory, b.Shape.Memory), cmp.Compare(a.Needs.Nodes, b.Needs.Nodes),
			cmp.Compare(a.TimeLimit, b.TimeLimit))
	})
	return demand, unplaced, nil
}

// fits finds the servers a placement could run on, once per distinct placement (pods of one
// workload share theirs, so a large queue costs a few matches per Node, not one per pod).
type fits struct {
	servers map[string]*Node
	// all are rota's servers: when a placement fits each, it asks nothing.
	all   []string
	cache map[string]fitsAnswer
}

type fitsAnswer struct {
	needs fleet.Needs
	ok    bool
}

func newFits(servers map[string]*Node, inventory []string) *fits {
	all := inventory
	if all == nil {
		all = slices.Sorted(maps.Keys(servers))
	}
	return &fits{servers: servers, all: all, cache: map[string]fitsAnswer{}}
}

// needs is what a pod with placement pl that requests the resources rota does not model
// (extended) asks of rota's servers: Needs.Nodes lists the servers it could run on
// (Placement.Fits, on each server whose Node no person cordoned and whose Node offers every
// one of extended), empty when that is every one of rota's; ok is false when it is none.
func (f *fits) needs(pl Placement, extended []string) (fleet.Needs, bool) {
	key, _ := json.Marshal(struct { // plain data: it cannot fail
		Placement
		Extended []string
	}{pl, extended})
	if a, ok := f.cache[string(key)]; ok {
		return a.needs, a.ok
	}
	var on []string
	for _, s := range f.all {
		if n, ok := f.servers[s]; ok && !n.CordonedByPerson() && n.Offers(extended) && pl.Fits(*n) {
			on = append(on, s)
		}
	}
	a := fitsAnswer{ok: len(on) > 0}
	if len(on) < len(f.all) {
		a.needs.Nodes = strings.Join(on, ",")
	}
	f.cache[string(key)] = a
	return a.needs, a.ok
}

// on is what a pod bound to Node node, one of rota's, that requests the resources rota does
// not model (extended) asks of rota's servers: the server node runs alone (Needs.Nodes, empty
// when it is rota's only one); ok is false when a person cordoned node or it does not offer
// every one of extended (its kubelet would refuse the pod). Taints and the pod's placement do
// not count: the scheduler never weighs a pod bound by its spec.
func (f *fits) on(node string, extended []string) (fleet.Needs, bool) {
	for _, s := range f.all {
		n, ok := f.servers[s]
		if !ok || n.Name != node {
			continue
		}
		if n.CordonedByPerson() || !n.Offers(extended) {
			return fleet.Needs{}, false
		}
		if len(f.all) == 1 {
			return fleet.Needs{}, true
		}
		return fleet.Needs{Nodes: s}, true
	}
	return fleet.Needs{}, false
}

// Reason is the drain annotation rota puts on a Node it cordons: jobs.Marker, then reason.
func Reason(reason string) string {
	if strings.HasPrefix(reason, jobs.Marker) {
		return reason
	}
	return strings.TrimSpace(jobs.Marker + " " + reason)
}
