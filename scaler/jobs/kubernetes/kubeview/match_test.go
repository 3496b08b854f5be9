package kubeview

import (
	"slices"
	"testing"
)

func TestFits(t *testing.T) {
	gpuNode := Node{Name: "gpu01", Labels: map[string]string{"accelerator": "h100", "gpus": "8", "zone": "a"},
		Taints: []Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: NoSchedule}}}
	off := Node{Name: "cpu01", Labels: map[string]string{"zone": "b"}, Unschedulable: true, DrainReason: "rota: idle",
		Taints: []Taint{
			{Key: PoweredOffTaint, Effect: NoSchedule},
			{Key: "node.kubernetes.io/unreachable", Effect: NoExecute},
			{Key: "node.kubernetes.io/unschedulable", Effect: NoSchedule},
			{Key: "soft", Effect: PreferNoSchedule},
		}}
	// A cloud controller manager that knows the server's power (a bare-metal provider's) taints
	// the Node of a server that is off with its shutdown taint, and lifts it once it runs.
	shutDown := Node{Name: "cpu02", Taints: []Taint{{Key: "node.cloudprovider.kubernetes.io/shutdown", Effect: NoSchedule}}}
	gpuToleration := []Toleration{{Key: "nvidia.com/gpu", Operator: "Exists", Effect: NoSchedule}}
	term := func(rs ...Requirement) *NodeSelector {
		return &NodeSelector{Terms: []SelectorTerm{{MatchExpressions: rs}}}
	}
	req := func(key string, op string, vals ...string) Requirement {
		return Requirement{Key: key, Operator: op, Values: vals}
	}
	for _, tc := range []struct {
		name string
		pl   Placement
		node Node
		want bool
	}{
		{"nothing asked, untainted node", Placement{}, off, true},
		{"a taint not tolerated", Placement{}, gpuNode, false},
		{"the taint tolerated", Placement{Tolerations: gpuToleration}, gpuNode, true},
		{"tolerated by value", Placement{Tolerations: []Toleration{{Key: "nvidia.com/gpu", Value: "present"}}}, gpuNode, true},
		{"wrong value", Placement{Tolerations: []Toleration{{Key: "nvidia.com/gpu", Value: "absent"}}}, gpuNode, false},
		{"wrong effect", Placement{Tolerations: []Toleration{{Key: "nvidia.com/gpu", Operator: "Exists", Effect: NoExecute}}}, gpuNode, false},
		{"tolerate everything", Placement{Tolerations: []Toleration{{Operator: "Exists"}}}, gpuNode, true},
		{"selector matches", Placement{Selector: map[string]string{"accelerator": "h100"}, Tolerations: gpuToleration}, gpuNode, true},
		{"selector value differs", Placement{Selector: map[string]string{"accelerator": "a100"}, Tolerations: gpuToleration}, gpuNode, false},
		{"selector label missing", Placement{Selector: map[string]string{"accelerator": "h100"}}, off, false},
		{"affinity In", Placement{Affinity: term(req("zone", "In", "a", "c")), Tolerations: gpuToleration}, gpuNode, true},
		{"affinity In misses", Placement{Affinity: term(req("zone", "In", "a", "c"))}, off, false},
		{"affinity NotIn", Placement{Affinity: term(req("zone", "NotIn", "a"))}, off, true},
		{"affinity NotIn on a missing label", Placement{Affinity: term(req("rack", "NotIn", "r1"))}, off, true},
		{"affinity Exists", Placement{Affinity: term(req("accelerator", "Exists"))}, off, false},
		{"affinity DoesNotExist", Placement{Affinity: term(req("accelerator", "DoesNotExist"))}, off, true},
		{"affinity Gt", Placement{Affinity: term(req("gpus", "Gt", "4")), Tolerations: gpuToleration}, gpuNode, true},
		{"affinity Lt", Placement{Affinity: term(req("gpus", "Lt", "4")), Tolerations: gpuToleration}, gpuNode, false},
		{"affinity Gt on a missing label", Placement{Affinity: term(req("gpus", "Gt", "4"))}, off, false},
		{"affinity expressions are ANDed", Placement{Affinity: term(req("zone", "In", "a"), req("accelerator", "In", "a100")), Tolerations: gpuToleration}, gpuNode, false},
		{"affinity terms are ORed", Placement{Affinity: &NodeSelector{Terms: []SelectorTerm{
			{MatchExpressions: []Requirement{req("zone", "In", "x")}},
			{MatchFields: []Requirement{req("metadata.name", "In", "cpu01")}},
		}}}, off, true},
		{"affinity by name misses", Placement{Affinity: &NodeSelector{Terms: []SelectorTerm{
			{MatchFields: []Requirement{req("metadata.name", "In", "cpu02")}},
		}}}, off, false},
		{"an empty term matches nothing", Placement{Affinity: &NodeSelector{Terms: []SelectorTerm{{}}}}, off, false},
		{"an operator rota cannot read counts as met", Placement{Affinity: term(req("zone", "Near", "a"))}, off, true},
		{"the cloud provider's shutdown taint goes with the power", Placement{}, shutDown, true},
		{"a taint beside the shutdown taint", Placement{}, Node{Name: "cpu02", Taints: append(slices.Clone(shutDown.Taints),
			Taint{Key: "maintenance", Effect: NoExecute})}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.pl.Fits(tc.node); got != tc.want {
				t.Errorf("Fits = %v, want %v", got, tc.want)
			}
		})
	}
}
