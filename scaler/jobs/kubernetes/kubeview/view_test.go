package kubeview

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func running(name, node, controller string, milliCPU, gpus int64) Pod {
	return Pod{Namespace: "ml", Name: name, NodeName: node, Phase: "Running", Controller: controller,
		Requests: Requests{MilliCPU: milliCPU, GPUs: gpus}, Started: t0}
}

// summary is a JobsView without its Running list, which TestJobsViews checks apart.
func summary(v fleet.JobsView) fleet.JobsView { v.Running = nil; return v }

// rotas is the owner of a cordon rota made (metadata.managedFields).
var rotas = []string{FieldManager}

// TestJobsViews: what each server holds, and whose its cordon is. rota's annotation makes a
// cordon rota's only while rota's field manager alone owns spec.unschedulable: after a
// `kubectl uncordon` the annotation is stale, and a later `kubectl cordon` (owned by
// kubectl-cordon) is a person's, however rota's annotation reads.
func TestJobsViews(t *testing.T) {
	offTaint := []Taint{{Key: PoweredOffTaint, Effect: NoSchedule}}
	v := View{
		Nodes: []Node{
			{Name: "busy", Ready: true},
			{Name: "empty", Ready: true},
			{Name: "daemons-only", Ready: true},
			{Name: "draining", Ready: true, Unschedulable: true, DrainReason: "rota: idle", CordonOwners: rotas},
			{Name: "drained", Ready: true, Unschedulable: true, DrainReason: "rota: idle", CordonOwners: rotas},
			{Name: "person", Ready: true, Unschedulable: true},
			{Name: "off", Unschedulable: true, DrainReason: "rota: idle", Taints: offTaint, CordonOwners: rotas},
			{Name: "off-person", Unschedulable: true, Taints: offTaint},
			{Name: "tainted-only", Taints: offTaint},
			{Name: "stale", Ready: true, DrainReason: "rota: idle"},
			{Name: "taken-over", Ready: true, Unschedulable: true, DrainReason: "rota: idle", CordonOwners: []string{"kubectl-cordon"}},
			{Name: "shared", Ready: true, Unschedulable: true, DrainReason: "rota: idle", CordonOwners: []string{FieldManager, "admin"}},
			{Name: "no-owner", Ready: true, Unschedulable: true, DrainReason: "rota: idle"},
			{Name: "off-taken-over", Unschedulable: true, DrainReason: "rota: idle", Taints: offTaint, CordonOwners: []string{"kubectl-cordon"}},
		},
		Pods: []Pod{
			running("a", "busy", "ReplicaSet", 1500, 0),
			running("b", "busy", "", 250, 2),
			running("ds", "daemons-only", "DaemonSet", 100, 0),
			{Namespace: "kube-system", Name: "static", NodeName: "daemons-only", Phase: "Running", Mirror: true},
			running("done", "empty", "Job", 1000, 0),
			running("left", "draining", "ReplicaSet", 100, 0),
			running("leaving", "drained", "", 1000, 1),
		},
	}
	v.Pods[4].Phase = podSucceeded
	v.Pods[6].Phase = podFailed
	got, err := v.JobsViews(Scope{Now: t0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]fleet.JobsView{
		"busy":           {Known: true, Jobs: 2, CPUs: 2, GPUs: 2, Responding: true},
		"empty":          {Known: true, Responding: true},
		"daemons-only":   {Known: true, Responding: true},
		"draining":       {Known: true, Jobs: 1, CPUs: 1, DrainedByRota: true, Responding: true},
		"drained":        {Known: true, Drained: true, DrainedByRota: true, Responding: true},
		"person":         {Known: true, Drained: true, Responding: true},
		"off":            {Known: true, Drained: true, DrainedByRota: true},
		"off-person":     {Known: true, Drained: true},
		"tainted-only":   {Known: true, Drained: true, DrainedByRota: true},
		"stale":          {Known: true, Responding: true},
		"taken-over":     {Known: true, Drained: true, Responding: true},
		"shared":         {Known: true, Drained: true, Responding: true},
		"no-owner":       {Known: true, Drained: true, Responding: true},
		"off-taken-over": {Known: true, Drained: true},
	}
	if len(got) != len(want) {
		t.Errorf("got %d servers, want %d: %+v", len(got), len(want), got)
	}
	for name, w := range want {
		if !reflect.DeepEqual(summary(got[name]), w) {
			t.Errorf("%s: got %+v, want %+v", name, summary(got[name]), w)
		}
	}
	// The pods on busy, as the planner weighs moving them: the ReplicaSet's is requeueable and
	// loses nothing but its restart (checkpoint: the read); the bare pod is never requeueable.
	// Either could go to any server but those a person cordoned.
	elsewhere := fleet.Needs{Nodes: "busy,daemons-only,drained,draining,empty,off,stale,tainted-only"}
	wantRun := []fleet.Job{
		{ID: "ml/a", Department: "ml", CPUs: 2, Servers: 1, Needs: elsewhere, Requeueable: true, Started: t0, Checkpoint: t0.Add(time.Hour)},
		{ID: "ml/b", Department: "ml", CPUs: 1, GPUs: 2, Servers: 1, Needs: elsewhere, Started: t0, Held: "no controller starts it again once evicted"},
	}
	if !reflect.DeepEqual(got["busy"].Running, wantRun) {
		t.Errorf("busy runs %+v, want %+v", got["busy"].Running, wantRun)
	}
}

func TestJobsViewsByLabel(t *testing.T) {
	label := "rota.example/server"
	v := View{Nodes: []Node{
		{Name: "k8s-node-1", Labels: map[string]string{label: "gpu01"}, Ready: true},
		{Name: "k8s-node-2"}, // not a rota server: absent
	}, Pods: []Pod{running("a", "k8s-node-1", "", 1000, 1)}}
	got, err := v.JobsViews(Scope{Mapping: Mapping{Label: label}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !reflect.DeepEqual(summary(got["gpu01"]), fleet.JobsView{Known: true, Jobs: 1, CPUs: 1, GPUs: 1, Responding: true}) {
		t.Errorf("got %+v", got)
	}
	v.Nodes = append(v.Nodes, Node{Name: "k8s-node-3", Labels: map[string]string{label: "gpu01"}})
	_, err = v.JobsViews(Scope{Mapping: Mapping{Label: label}})
	if err == nil || !strings.Contains(err.Error(), "k8s-node-1 and k8s-node-3 both run server gpu01") {
		t.Errorf("two nodes for one server: got %v", err)
	}
}

func classify(s config.Shape) string {
	if s.GPUs > 0 {
		return "gpu"
	}
	return "cpu"
}

// TestDemand: waiting pods are grouped by class, namespace, shape, the servers they could run
// on and time limit; a pod that fits every server asks nothing, one that fits some names them
// (a person's cordon and taints it does not tolerate rule servers out; rota's own cordon and
// taint do not), and one that fits none is no demand, and is named. A pod bound to the Node of
// a server that is not Ready (spec.nodeName) asks for that server alone, whatever its taints;
// not a DaemonSet's pod, nor one bound to a Node that is Ready, or to no Node of rota's; one
// bound to a Node a person cordoned is named.
func TestDemand(t *testing.T) {
	gpuTaint := Taint{Key: "nvidia.com/gpu", Effect: NoSchedule}
	v := View{
		Nodes: []Node{
			{Name: "cpu01"},
			{Name: "cpu02", Unschedulable: true}, // a person's cordon
			{Name: "gpu01", Labels: map[string]string{"accelerator": "h100"}, Taints: []Taint{gpuTaint}, Ready: true},
			{Name: "gpu02", Labels: map[string]string{"accelerator": "a100"}, Taints: []Taint{gpuTaint,
				{Key: PoweredOffTaint, Effect: NoSchedule}}, Unschedulable: true, DrainReason: "rota: idle", CordonOwners: rotas},
			{Name: "cp01"}, // not rota's
		},
	}
	tolerate := []Toleration{{Key: "nvidia.com/gpu", Operator: "Exists"}}
	pending := func(name string, milliCPU, gpus int64, created time.Time, pl Placement) Pod {
		return Pod{Namespace: "ml", Name: name, Phase: podPending, Unschedulable: true,
			Requests: Requests{MilliCPU: milliCPU, Memory: 1 << 30, GPUs: gpus}, Created: created, Placement: pl}
	}
	anyGPU := Placement{Tolerations: tolerate}
	a100 := Placement{Tolerations: tolerate, Selector: map[string]string{"accelerator": "a100"}}
	v.Pods = []Pod{
		pending("train-1", 4000, 1, t0.Add(time.Minute), anyGPU),
		pending("train-2", 3500, 1, t0, anyGPU),
		pending("tune", 3500, 1, t0, a100),
		pending("web", 500, 0, t0, Placement{}),
		pending("everywhere", 500, 0, t0, Placement{Tolerations: []Toleration{{Operator: "Exists"}}}),
		pending("nowhere", 500, 0, t0, Placement{Selector: map[string]string{"node-role.kubernetes.io/control-plane": ""}}),
		{Namespace: "ml", Name: "gated", Phase: podPending, Requests: Requests{GPUs: 1}},
		{Namespace: "ml", Name: "bound", Phase: podPending, NodeName: "gpu01", Unschedulable: true},
		{Namespace: "ml", Name: "deleting", Phase: podPending, Deleting: true, Unschedulable: true},
	}
	v.Pods[1].Deadline = time.Hour
	unbound := v.Pods
	v.Pods = append(slices.Clone(unbound),
		Pod{Namespace: "ml", Name: "pinned", Phase: podPending, NodeName: "gpu02", Requests: Requests{MilliCPU: 3500, Memory: 1 << 30, GPUs: 1}, Created: t0},
		Pod{Namespace: "ml", Name: "agent", Phase: podPending, NodeName: "gpu02", Controller: "DaemonSet", Requests: Requests{MilliCPU: 500}},
		Pod{Namespace: "ml", Name: "pinned-cp01", Phase: podPending, NodeName: "cp01", Requests: Requests{MilliCPU: 500}},
		Pod{Namespace: "ml", Name: "pinned-cordoned", Phase: podPending, NodeName: "cpu02", Requests: Requests{MilliCPU: 500}})
	got, unplaced, err := v.Demand(Scope{Servers: []string{"cpu01", "cpu02", "gpu01", "gpu02"}}, classify)
	if err != nil {
		t.Fatal(err)
	}
	shape := func(cpus, gpus int) config.Shape { return config.Shape{CPUs: cpus, GPUs: gpus, Memory: 1 << 30} }
	want := []fleet.Demand{
		{Class: "cpu", Department: "ml", Shape: shape(1, 0), Needs: fleet.Needs{Nodes: "cpu01"}, Nodes: 1, Count: 1, Since: t0},
		{Class: "cpu", Department: "ml", Shape: shape(1, 0), Needs: fleet.Needs{Nodes: "cpu01,gpu01,gpu02"}, Nodes: 1, Count: 1, Since: t0},
		// Placement alone: cpu01 has no GPUs, which the planner sees in its pool's profile.
		{Class: "gpu", Department: "ml", Shape: shape(4, 1), Needs: fleet.Needs{Nodes: "cpu01,gpu01,gpu02"}, Nodes: 1, Count: 1, Since: t0.Add(time.Minute)},
		{Class: "gpu", Department: "ml", Shape: shape(4, 1), Needs: fleet.Needs{Nodes: "cpu01,gpu01,gpu02"}, TimeLimit: time.Hour, Nodes: 1, Count: 1, Since: t0},
		{Class: "gpu", Department: "ml", Shape: shape(4, 1), Needs: fleet.Needs{Nodes: "gpu02"}, Nodes: 1, Count: 2, Since: t0}, // tune, pinned
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("demand:\n got %+v\nwant %+v", got, want)
	}
	if !slices.Equal(unplaced, []string{"ml/nowhere", "ml/pinned-cordoned"}) {
		t.Errorf("unplaced %v, want [ml/nowhere ml/pinned-cordoned]", unplaced)
	}

	// Every server can take a pod that tolerates everything once no person's cordon stands.
	v.Nodes, v.Pods = v.Nodes[:4], unbound // every Node rota's
	v.Nodes[1].Unschedulable = false
	got, _, err = v.Demand(Scope{}, classify)
	if err != nil {
		t.Fatal(err)
	}
	asks := map[string]bool{}
	for _, d := range got {
		if d.Class == "cpu" {
			asks[d.Needs.Nodes] = true
		}
	}
	if !asks[""] || !asks["cpu01,cpu02"] || len(asks) != 2 {
		t.Errorf("CPU pods ask for %v, want every server (\"\") and cpu01,cpu02", asks)
	}
}
