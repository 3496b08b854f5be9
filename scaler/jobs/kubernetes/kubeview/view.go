package kubeview

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs"
)

// View is one whole read of the cluster: every Node and every pod that has not finished.
type View struct {
	Nodes []Node
	Pods  []Pod
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

// Drainable reports whether a drain evicts pod p (see ContinueDrain).
func (p Pod) Drainable() bool {
	return p.Holds() && !p.Deleting && !p.DoNotDisrupt && slices.Contains(service, p.Controller)
}

// Waits reports whether pod p waits for a node the scheduler could not find: pending,
// unbound, not being deleted, and marked unschedulable.
func (p Pod) Waits() bool {
	return p.NodeName == "" && p.Phase == podPending && !p.Deleting && p.Unschedulable
}

// ours reports whether rota made node n unschedulable: its drain annotation or its powered-off
// taint, and no cordon by a person over it.
func ours(n Node) bool {
	byPerson := n.Unschedulable && n.DrainReason == ""
	return !byPerson && (n.DrainReason != "" || n.PoweredOff())
}

// JobsViews is what the scaler needs of each server, by server name: what the pods that hold
// it request (Holds), whether it takes no new pods (cordoned, or tainted by rota) and holds
// none (Drained), whether rota did that (DrainedByRota), and whether its Ready condition is
// true (Responding: a booted server counts as ready only then).
func (v View) JobsViews(m Mapping) (map[string]fleet.JobsView, error) {
	servers, err := v.servers(m)
	if err != nil {
		return nil, err
	}
	type sum struct {
		pods      int
		cpu, gpus int64
	}
	held := map[string]*sum{}
	for _, p := range v.Pods {
		if !p.Holds() {
			continue
		}
		s, ok := held[p.NodeName]
		if !ok {
			s = &sum{}
			held[p.NodeName] = s
		}
		s.pods++
		s.cpu += p.Requests.MilliCPU
		s.gpus += p.Requests.GPUs
	}
	out := make(map[string]fleet.JobsView, len(servers))
	for name, n := range servers {
		jv := fleet.JobsView{Known: true, Responding: n.Ready}
		if s := held[n.Name]; s != nil {
			jv.Jobs, jv.CPUs, jv.GPUs = s.pods, int((s.cpu+999)/1000), int(s.gpus)
		}
		closed := n.Unschedulable || n.PoweredOff()
		jv.Drained = closed && !jv.Allocated()
		jv.DrainedByRota = ours(*n)
		out[name] = jv
	}
	return out, nil
}

// Classifier maps a pod's shape to its class (config.Config.Classify).
type Classifier func(config.Shape) string

// Shape is what the pod asks of its server: whole cores (rounded up), memory, GPUs.
func (p Pod) Shape() config.Shape {
	return config.Shape{CPUs: int((p.Requests.MilliCPU + 999) / 1000), GPUs: int(p.Requests.GPUs), Memory: config.Bytes(p.Requests.Memory)}
}

// Demand groups the pods that wait for a node (Waits) by class, department (the namespace)
// and shape, with the oldest creation of each group (Since), sorted by class, department and
// shape.
func (v View) Demand(classify Classifier) []fleet.Demand {
	type key struct {
		class, department string
		shape             config.Shape
	}
	groups := map[key]*fleet.Demand{}
	for _, p := range v.Pods {
		if !p.Waits() {
			continue
		}
		shape := p.Shape()
		k := key{classify(shape), p.Namespace, shape}
		d, ok := groups[k]
		if !ok {
			d = &fleet.Demand{Class: k.class, Department: k.department, Shape: shape, Nodes: 1, Since: p.Created}
			groups[k] = d
		}
		d.Count++
		if p.Created.Before(d.Since) {
			d.Since = p.Created
		}
	}
	out := make([]fleet.Demand, 0, len(groups))
	for _, d := range groups {
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b fleet.Demand) int {
		return cmp.Or(cmp.Compare(a.Class, b.Class), cmp.Compare(a.Department, b.Department),
			cmp.Compare(a.Shape.CPUs, b.Shape.CPUs), cmp.Compare(a.Shape.GPUs, b.Shape.GPUs),
			cmp.Compare(a.Shape.Memory, b.Shape.Memory))
	})
	return out
}

// Reason is the drain annotation rota puts on a Node it cordons: jobs.Marker, then reason.
func Reason(reason string) string {
	if strings.HasPrefix(reason, jobs.Marker) {
		return reason
	}
	return strings.TrimSpace(jobs.Marker + " " + reason)
}
