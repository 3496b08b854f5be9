package kubeview

import (
	"reflect"
	"slices"
	"testing"
)

// TestPlaceSpread: a waiting pod's topology spread constraint with whenUnsatisfiable
// DoNotSchedule keeps it off every Node where it would put its domain more than maxSkew above
// the domain holding the fewest pods the constraint selects (in the pod's namespace, neither
// finished nor being deleted), and off every Node without the topology key; minDomains, the
// Nodes' inclusion policies, matchLabelKeys and a pod its selector does not select change the
// count as the scheduler's; a ScheduleAnyway constraint keeps it off nothing.
func TestPlaceSpread(t *testing.T) {
	poweredOff := []Taint{{Key: PoweredOffTaint, Effect: NoSchedule}}
	nodes := []Node{
		{Name: "a1", Labels: map[string]string{"kubernetes.io/hostname": "a1", "zone": "a"}},
		// a2's taint the pod does not tolerate; b1's goes when it wakes.
		{Name: "a2", Labels: map[string]string{"kubernetes.io/hostname": "a2", "zone": "a"}, Taints: []Taint{{Key: "dedicated", Effect: NoSchedule}}},
		{Name: "b1", Labels: map[string]string{"kubernetes.io/hostname": "b1", "zone": "b"}, Taints: poweredOff},
		{Name: "c1"}, // no labels: no domain
	}
	held := func(ns, node, phase string, deleting bool) Pod {
		return Pod{Namespace: ns, Name: "x", NodeName: node, Phase: phase, Deleting: deleting,
			Labels: map[string]string{"app": "web", "pod-template-hash": "v1"}}
	}
	running := []Pod{
		held("ml", "a1", "Running", false),
		held("ml", "a1", "Running", false),
		held("ml", "b1", "Running", false),
		held("other", "a2", "Running", false),
		held("ml", "a2", "Succeeded", false),
		held("ml", "a2", "Running", true),
	}
	constraint := func(key, extra string) string {
		return `{"maxSkew":1,"topologyKey":"` + key + `","whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"web"}}` + extra + `}`
	}
	web := `{"app":"web","pod-template-hash":"v1"}`
	for _, tc := range []struct {
		name, constraints, labels, spec string
		want                            []string
	}{
		{"by hostname", constraint("kubernetes.io/hostname", ``), web, ``, []string{"a1", "b1", "c1"}},
		{"maxSkew 2", constraint("kubernetes.io/hostname", `,"maxSkew":2`), web, ``, []string{"a1", "c1"}},
		{"by zone", constraint("zone", ``), web, ``, []string{"a1", "a2", "c1"}},
		{"fewer domains than minDomains", constraint("zone", `,"minDomains":3`), web, ``, []string{"a1", "a2", "b1", "c1"}},
		{"Nodes of its selector alone", constraint("kubernetes.io/hostname", ``), web, `"nodeSelector":{"zone":"b"},`, []string{"c1"}},
		{"nodeAffinityPolicy Ignore", constraint("kubernetes.io/hostname", `,"nodeAffinityPolicy":"Ignore"`), web, `"nodeSelector":{"zone":"b"},`, []string{"a1", "b1", "c1"}},
		{"nodeTaintsPolicy Honor", constraint("kubernetes.io/hostname", `,"nodeTaintsPolicy":"Honor"`), web, ``, []string{"a1", "c1"}},
		{"matchLabelKeys: another revision", constraint("kubernetes.io/hostname", `,"matchLabelKeys":["pod-template-hash"]`), `{"app":"web","pod-template-hash":"v2"}`, ``, []string{"c1"}},
		{"not selecting itself", constraint("kubernetes.io/hostname", ``), `{}`, ``, []string{"a1", "c1"}},
		{"no labelSelector", `{"maxSkew":1,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"DoNotSchedule"}`, web, ``, []string{"c1"}},
		{"ScheduleAnyway", `{"maxSkew":1,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"ScheduleAnyway","labelSelector":{"matchLabels":{"app":"web"}}}`, web, ``, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePod([]byte(`{"metadata":{"name":"web-1","namespace":"ml","labels":` + tc.labels + `},
				"spec":{` + tc.spec + `"topologySpreadConstraints":[` + tc.constraints + `],
				"containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]},
				"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable"}]}}`))
			if err != nil {
				t.Fatal(err)
			}
			pods := []Pod{p}
			if anyway := tc.name == "ScheduleAnyway"; KeepsApart(pods) == anyway {
				t.Errorf("KeepsApart %v", !anyway)
			}
			PlaceApart(pods, running, nodes)
			if got := pods[0].Placement.Apart; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("apart from %v, want %v", got, tc.want)
			}
			for _, n := range nodes {
				if slices.Contains(tc.want, n.Name) && pods[0].Placement.Fits(n) {
					t.Errorf("fits %s", n.Name)
				}
			}
		})
	}
}
