package kubeview

import (
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func running(name, node, controller string, milliCPU, gpus int64) Pod {
	return Pod{Namespace: "ml", Name: name, NodeName: node, Phase: "Running", Controller: controller,
		Requests: Requests{MilliCPU: milliCPU, GPUs: gpus}}
}

func TestJobsViews(t *testing.T) {
	offTaint := []Taint{{Key: PoweredOffTaint, Effect: NoSchedule}}
	v := View{
		Nodes: []Node{
			{Name: "busy", Ready: true},
			{Name: "empty", Ready: true},
			{Name: "daemons-only", Ready: true},
			{Name: "draining", Ready: true, Unschedulable: true, DrainReason: "rota: idle"},
			{Name: "drained", Ready: true, Unschedulable: true, DrainReason: "rota: idle"},
			{Name: "person", Ready: true, Unschedulable: true},
			{Name: "off", Unschedulable: true, DrainReason: "rota: idle", Taints: offTaint},
			{Name: "off-person", Unschedulable: true, Taints: offTaint},
			{Name: "tainted-only", Taints: offTaint},
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
	got, err := v.JobsViews(Mapping{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]fleet.JobsView{
		"busy":         {Known: true, Jobs: 2, CPUs: 2, GPUs: 2, Responding: true},
		"empty":        {Known: true, Responding: true},
		"daemons-only": {Known: true, Responding: true},
		"draining":     {Known: true, Jobs: 1, CPUs: 1, DrainedByRota: true, Responding: true},
		"drained":      {Known: true, Drained: true, DrainedByRota: true, Responding: true},
		"person":       {Known: true, Drained: true, Responding: true},
		"off":          {Known: true, Drained: true, DrainedByRota: true},
		"off-person":   {Known: true, Drained: true},
		"tainted-only": {Known: true, Drained: true, DrainedByRota: true},
	}
	if len(got) != len(want) {
		t.Errorf("got %d servers, want %d: %+v", len(got), len(want), got)
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: got %+v, want %+v", name, got[name], w)
		}
	}
}

func TestJobsViewsByLabel(t *testing.T) {
	label := "rota.example/server"
	v := View{Nodes: []Node{
		{Name: "k8s-node-1", Labels: map[string]string{label: "gpu01"}, Ready: true},
		{Name: "k8s-node-2"}, // not a rota server: absent
	}, Pods: []Pod{running("a", "k8s-node-1", "", 1000, 1)}}
	got, err := v.JobsViews(Mapping{Label: label})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["gpu01"] != (fleet.JobsView{Known: true, Jobs: 1, CPUs: 1, GPUs: 1, Responding: true}) {
		t.Errorf("got %+v", got)
	}
	v.Nodes = append(v.Nodes, Node{Name: "k8s-node-3", Labels: map[string]string{label: "gpu01"}})
	_, err = v.JobsViews(Mapping{Label: label})
	if err == nil || !strings.Contains(err.Error(), "k8s-node-1 and k8s-node-3 both run server gpu01") {
		t.Errorf("two nodes for one server: got %v", err)
	}
}

func TestDemand(t *testing.T) {
	pending := func(ns, name string, milliCPU, gpus int64, created time.Time) Pod {
		return Pod{Namespace: ns, Name: name, Phase: podPending, Unschedulable: true,
			Requests: Requests{MilliCPU: milliCPU, Memory: 1 << 30, GPUs: gpus}, Created: created}
	}
	v := View{Pods: []Pod{
		pending("ml", "train-1", 4000, 1, t0.Add(time.Minute)),
		pending("ml", "train-2", 3500, 1, t0),
		pending("web", "api", 500, 0, t0),
		{Namespace: "ml", Name: "gated", Phase: podPending, Requests: Requests{GPUs: 1}},
		{Namespace: "ml", Name: "bound", Phase: podPending, NodeName: "gpu01", Unschedulable: true},
		{Namespace: "ml", Name: "deleting", Phase: podPending, Deleting: true, Unschedulable: true},
	}}
	classify := func(s config.Shape) string {
		if s.GPUs > 0 {
			return "gpu"
		}
		return "light"
	}
	got := v.Demand(classify)
	want := []fleet.Demand{
		{Class: "gpu", Department: "ml", Shape: config.Shape{CPUs: 4, GPUs: 1, Memory: 1 << 30}, Nodes: 1, Count: 2, Since: t0},
		{Class: "light", Department: "web", Shape: config.Shape{CPUs: 1, Memory: 1 << 30}, Nodes: 1, Count: 1, Since: t0},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("demand %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}
