package kubeview

import (
	"reflect"
	"slices"
	"testing"
)

// TestPlaceApart: a waiting pod's required pod anti-affinity keeps it off every Node whose
// topology domain holds a pod its term selects: the Node itself by kubernetes.io/hostname,
// every Node of the zone by a zone key; in its own namespace unless the term names others or
// has an empty namespaceSelector (every namespace); matchLabelKeys narrow the selector to the
// pod's own values; a finished pod, a term without a labelSelector and one whose
// namespaceSelector selects by labels (rota reads no namespaces) keep it off nothing.
func TestPlaceApart(t *testing.T) {
	nodes := []Node{
		{Name: "a1", Labels: map[string]string{"kubernetes.io/hostname": "a1", "zone": "a"}},
		{Name: "a2", Labels: map[string]string{"kubernetes.io/hostname": "a2", "zone": "a"}},
		{Name: "b1", Labels: map[string]string{"kubernetes.io/hostname": "b1", "zone": "b"}},
		{Name: "c1"}, // no labels: no domain
	}
	held := func(ns, node, phase string, labels map[string]string) Pod {
		return Pod{Namespace: ns, Name: "x", NodeName: node, Phase: phase, Labels: labels}
	}
	kafka := map[string]string{"app": "kafka", "pod-template-hash": "v1"}
	running := []Pod{
		held("ml", "a1", "Running", kafka),
		held("ml", "c1", "Running", kafka),
		held("web", "b1", "Running", map[string]string{"app": "kafka"}),
		held("ml", "b1", "Succeeded", kafka),
	}
	term := func(key string, extra string) string {
		return `{"labelSelector":{"matchLabels":{"app":"kafka"}},"topologyKey":"` + key + `"` + extra + `}`
	}
	for _, tc := range []struct {
		name, terms, labels string
		want                []string
	}{
		{"by hostname", term("kubernetes.io/hostname", ``), `{}`, []string{"a1"}},
		{"by zone", term("zone", ``), `{}`, []string{"a1", "a2"}},
		{"other namespaces named", term("kubernetes.io/hostname", `,"namespaces":["web"]`), `{}`, []string{"b1"}},
		{"every namespace", term("kubernetes.io/hostname", `,"namespaceSelector":{}`), `{}`, []string{"a1", "b1"}},
		{"namespaces by label: not read", term("kubernetes.io/hostname", `,"namespaceSelector":{"matchLabels":{"team":"x"}}`), `{}`, nil},
		{"matchLabelKeys: another revision", term("kubernetes.io/hostname", `,"matchLabelKeys":["pod-template-hash"]`), `{"pod-template-hash":"v2"}`, nil},
		{"matchLabelKeys: its own revision", term("kubernetes.io/hostname", `,"matchLabelKeys":["pod-template-hash"]`), `{"pod-template-hash":"v1"}`, []string{"a1"}},
		{"an expression", `{"labelSelector":{"matchExpressions":[{"key":"app","operator":"In","values":["kafka","zk"]}]},"topologyKey":"kubernetes.io/hostname"}`, `{}`, []string{"a1"}},
		{"no labelSelector", `{"topologyKey":"kubernetes.io/hostname"}`, `{}`, nil},
		{"a key no Node has", term("rack", ``), `{}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePod([]byte(`{"metadata":{"name":"kafka-1","namespace":"ml","labels":` + tc.labels + `},
				"spec":{"affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[` + tc.terms + `]}},
				"containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]},
				"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable"}]}}`))
			if err != nil {
				t.Fatal(err)
			}
			pods := []Pod{p}
			if notRead := tc.name == "namespaces by label: not read"; KeepsApart(pods) == notRead {
				t.Errorf("KeepsApart %v", !notRead)
			}
			PlaceApart(pods, running, nodes)
			if got := pods[0].Placement.Apart; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("apart from %v, want %v", got, tc.want)
			}
			for _, n := range nodes {
				if want := !slices.Contains(tc.want, n.Name); pods[0].Placement.Fits(n) != want {
					t.Errorf("fits %s: %v, want %v", n.Name, !want, want)
				}
			}
		})
	}
}
