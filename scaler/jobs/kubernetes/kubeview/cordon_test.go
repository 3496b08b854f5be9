package kubeview

import (
	"reflect"
	"testing"
)

// nodeJSON is a Node as the API server answers it after rota's drain (rota owns its
// annotation) and then a cordon written by the field manager owner ("" for none: the cordon
// was lifted), with the status a kubelet wrote.
func nodeJSON(unschedulable bool, owner string) string {
	spec, cordon := `{}`, ``
	if unschedulable {
		spec = `{"unschedulable":true}`
	}
	if owner != "" {
		cordon = `,{"manager":"` + owner + `","operation":"Update","apiVersion":"v1","time":"2026-12-03T07:08:30Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:unschedulable":{}}}}`
	}
	return `{"kind":"Node","apiVersion":"v1","metadata":{"name":"cpu01","resourceVersion":"7",
		"annotations":{"rotahq.github.io/drain":"rota: idle"},
		"managedFields":[
			{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2026-12-03T07:08:29Z","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:allocatable":{".":{},"f:cpu":{}}}},"subresource":"status"},
			{"manager":"rota","operation":"Update","apiVersion":"v1","time":"2026-12-03T07:08:30Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:rotahq.github.io/drain":{}}}}}` + cordon + `]},
		"spec":` + spec + `,
		"status":{"allocatable":{"cpu":"8","memory":"32Gi","amd.com/gpu":"4","nvidia.com/gpu":"0","hugepages-2Mi":"0"},
			"conditions":[{"type":"Ready","status":"True"}]}}`
}

// TestCordonOwner: the owner of spec.unschedulable, read from managedFields, says whose cordon
// it is. rota's annotation stays on a Node through `kubectl uncordon` (stale: ignored) and a
// later `kubectl cordon` is kubectl's, not rota's; only a cordon rota's field manager alone
// owns is rota's.
func TestCordonOwner(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		unschedulable         bool
		owner                 string
		owners                []string
		byRota, byPerson, old bool
	}{
		{"rota's cordon", true, FieldManager, []string{FieldManager}, true, false, false},
		{"lifted by a person", false, "", nil, false, false, true},
		{"cordoned again by a person", true, "kubectl-cordon", []string{"kubectl-cordon"}, false, true, true},
		{"no owner recorded", true, "", nil, false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := ParseNode([]byte(nodeJSON(tc.unschedulable, tc.owner)))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(n.CordonOwners, tc.owners) {
				t.Errorf("cordon owners %v, want %v", n.CordonOwners, tc.owners)
			}
			if n.CordonedByRota() != tc.byRota || n.CordonedByPerson() != tc.byPerson || n.StaleDrain() != tc.old {
				t.Errorf("by rota %v, by a person %v, stale %v; want %v %v %v",
					n.CordonedByRota(), n.CordonedByPerson(), n.StaleDrain(), tc.byRota, tc.byPerson, tc.old)
			}
			if want := []string{"amd.com/gpu", "cpu", "memory"}; !reflect.DeepEqual(n.Allocatable, want) {
				t.Errorf("allocatable %v, want %v (a zero quantity offers nothing)", n.Allocatable, want)
			}
		})
	}
}
