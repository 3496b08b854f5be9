package kubernetes

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestFits(t *testing.T) {
	gpuNode := Node{Name: "gpu01", Labels: map[string]string{"accelerator": "h100", "gpus": "8", "zone": "a"},
		Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}}
	off := Node{Name: "cpu01", Labels: map[string]string{"zone": "b"}, Unschedulable: true, DrainReason: "rota: idle",
		Taints: []corev1.Taint{
			{Key: PoweredOffTaint, Effect: corev1.TaintEffectNoSchedule},
			{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute},
			{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule},
			{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule},
		}}
	gpuToleration := []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	term := func(rs ...corev1.NodeSelectorRequirement) *corev1.NodeSelector {
		return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: rs}}}
	}
	req := func(key string, op corev1.NodeSelectorOperator, vals ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: vals}
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
		{"tolerated by value", Placement{Tolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Value: "present"}}}, gpuNode, true},
		{"wrong value", Placement{Tolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Value: "absent"}}}, gpuNode, false},
		{"wrong effect", Placement{Tolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}}, gpuNode, false},
		{"tolerate everything", Placement{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}, gpuNode, true},
		{"selector matches", Placement{Selector: map[string]string{"accelerator": "h100"}, Tolerations: gpuToleration}, gpuNode, true},
		{"selector value differs", Placement{Selector: map[string]string{"accelerator": "a100"}, Tolerations: gpuToleration}, gpuNode, false},
		{"selector label missing", Placement{Selector: map[string]string{"accelerator": "h100"}}, off, false},
		{"affinity In", Placement{Affinity: term(req("zone", corev1.NodeSelectorOpIn, "a", "c")), Tolerations: gpuToleration}, gpuNode, true},
		{"affinity In misses", Placement{Affinity: term(req("zone", corev1.NodeSelectorOpIn, "a", "c"))}, off, false},
		{"affinity NotIn", Placement{Affinity: term(req("zone", corev1.NodeSelectorOpNotIn, "a"))}, off, true},
		{"affinity NotIn on a missing label", Placement{Affinity: term(req("rack", corev1.NodeSelectorOpNotIn, "r1"))}, off, true},
		{"affinity Exists", Placement{Affinity: term(req("accelerator", corev1.NodeSelectorOpExists))}, off, false},
		{"affinity DoesNotExist", Placement{Affinity: term(req("accelerator", corev1.NodeSelectorOpDoesNotExist))}, off, true},
		{"affinity Gt", Placement{Affinity: term(req("gpus", corev1.NodeSelectorOpGt, "4")), Tolerations: gpuToleration}, gpuNode, true},
		{"affinity Lt", Placement{Affinity: term(req("gpus", corev1.NodeSelectorOpLt, "4")), Tolerations: gpuToleration}, gpuNode, false},
		{"affinity Gt on a missing label", Placement{Affinity: term(req("gpus", corev1.NodeSelectorOpGt, "4"))}, off, false},
		{"affinity expressions are ANDed", Placement{Affinity: term(req("zone", corev1.NodeSelectorOpIn, "a"), req("accelerator", corev1.NodeSelectorOpIn, "a100")), Tolerations: gpuToleration}, gpuNode, false},
		{"affinity terms are ORed", Placement{Affinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{req("zone", corev1.NodeSelectorOpIn, "x")}},
			{MatchFields: []corev1.NodeSelectorRequirement{req("metadata.name", corev1.NodeSelectorOpIn, "cpu01")}},
		}}}, off, true},
		{"affinity by name misses", Placement{Affinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchFields: []corev1.NodeSelectorRequirement{req("metadata.name", corev1.NodeSelectorOpIn, "cpu02")}},
		}}}, off, false},
		{"an empty term matches nothing", Placement{Affinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}}, off, false},
		{"an operator rota cannot read counts as met", Placement{Affinity: term(req("zone", "Near", "a"))}, off, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.pl.Fits(tc.node); got != tc.want {
				t.Errorf("Fits = %v, want %v", got, tc.want)
			}
		})
	}
}
