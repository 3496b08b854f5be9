package kubeview

import (
	"errors"
	"strconv"
	"testing"

	"github.com/rotahq/rota/scaler/fleet"
)

// TestMarkBudgets: a running pod that a PodDisruptionBudget allowing no disruption selects (or
// one whose spec the disruption controller has not processed yet) is held, named by that
// budget, so the planner never plans a move the Eviction API refuses at every pass; so is one
// that two budgets select (the API server evicts none such). A budget that allows a
// disruption, one of another namespace, one whose selector does not match, one without a
// selector (policy/v1: it selects nothing), and a pod not running yet (the Eviction API lets
// it go) hold nothing; an empty selector selects every pod of its namespace.
func TestMarkBudgets(t *testing.T) {
	budget := func(ns, name, selector string, allowed, generation, observed int) string {
		return `{"metadata":{"name":"` + name + `","namespace":"` + ns + `","generation":` + strconv.Itoa(generation) + `},
			"spec":{` + selector + `},"status":{"observedGeneration":` + strconv.Itoa(observed) + `,"disruptionsAllowed":` + strconv.Itoa(allowed) + `}}`
	}
	web := `"selector":{"matchLabels":{"app":"web"}}`
	for _, tc := range []struct {
		name    string
		budgets []string
		phase   string
		want    string
	}{
		{"none allowed", []string{budget("ml", "web", web, 0, 1, 1)}, "Running", "PodDisruptionBudget ml/web allows no disruption now"},
		{"one allowed", []string{budget("ml", "web", web, 1, 1, 1)}, "Running", ""},
		{"not processed yet", []string{budget("ml", "web", web, 1, 2, 1)}, "Running", "PodDisruptionBudget ml/web allows no disruption now"},
		{"another namespace", []string{budget("other", "web", web, 0, 1, 1)}, "Running", ""},
		{"another app", []string{budget("ml", "db", `"selector":{"matchExpressions":[{"key":"app","operator":"In","values":["db"]}]}`, 0, 1, 1)}, "Running", ""},
		{"no selector", []string{budget("ml", "web", ``, 0, 1, 1)}, "Running", ""},
		{"an empty selector", []string{budget("ml", "all", `"selector":{}`, 0, 1, 1)}, "Running", "PodDisruptionBudget ml/all allows no disruption now"},
		{"two budgets", []string{budget("ml", "a", web, 1, 1, 1), budget("ml", "b", `"selector":{}`, 1, 1, 1)}, "Running",
			"PodDisruptionBudgets ml/a and ml/b select it, and the API server evicts no pod that several select"},
		{"not running yet", []string{budget("ml", "web", web, 0, 1, 1)}, "Pending", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list := `{"kind":"PodDisruptionBudgetList","items":[`
			for i, b := range tc.budgets {
				if i > 0 {
					list += ","
				}
				list += b
			}
			budgets, _, err := ParseBudgetList([]byte(list + `]}`))
			if err != nil {
				t.Fatal(err)
			}
			p := replicaPod(t, ``, `{"requests":{"cpu":"1"}}`)
			p.Labels, p.Phase = map[string]string{"app": "web"}, tc.phase
			pods := []Pod{p}
			if AnyMovable(pods, false) != (tc.phase == "Running") {
				t.Errorf("a ReplicaSet's pod %s: budgets read %v", tc.phase, !AnyMovable(pods, false))
			}
			MarkBudgets(pods, budgets)
			j := pods[0].Job(fleet.Needs{}, Scope{Now: t0})
			if pods[0].Budget != tc.want || j.Held != tc.want || j.Requeueable != (tc.want == "") || pods[0].Movable(false) != (tc.want == "") {
				t.Errorf("budget %q, job %+v, movable %v; want held by %q", pods[0].Budget, j, pods[0].Movable(false), tc.want)
			}
			if !pods[0].Drainable(false) {
				t.Error("a drain no longer evicts it: the Eviction API decides, as the budget changes")
			}
		})
	}
	// No pod a move could take: the budgets are not read.
	if AnyMovable([]Pod{replicaPod(t, `"volumes":[{"name":"s","emptyDir":{}}],`, `{}`)}, false) {
		t.Error("budgets read for a pod kept for its emptyDir data")
	}
}

// TestParseBudgetListErrors: a list of another kind, a budget without a name or namespace, and
// a selector or count of the wrong type are bad answers.
func TestParseBudgetListErrors(t *testing.T) {
	for _, bad := range []string{
		`{"kind":"PodList","items":[]}`,
		`{"kind":"PodDisruptionBudgetList"}`,
		`{"kind":"PodDisruptionBudgetList","items":[{"metadata":{"name":"web"}}]}`,
		`{"kind":"PodDisruptionBudgetList","items":[{"metadata":{"name":"web","namespace":"ml"},"spec":{"selector":[]}}]}`,
		`{"kind":"PodDisruptionBudgetList","items":[{"metadata":{"name":"web","namespace":"ml"},"status":{"disruptionsAllowed":"1"}}]}`,
	} {
		if _, _, err := ParseBudgetList([]byte(bad)); !errors.Is(err, ErrBadAnswer) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// FuzzParseBudgetList: any answer either fails with ErrBadAnswer or is read, each budget named,
// and marking pods with what was read never panics.
func FuzzParseBudgetList(f *testing.F) {
	f.Add([]byte(`{"kind":"PodDisruptionBudgetList","items":[{"metadata":{"name":"web","namespace":"ml","generation":1},
		"spec":{"selector":{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier","operator":"NotIn","values":["x"]}]}},
		"status":{"observedGeneration":1,"disruptionsAllowed":0}}]}`))
	f.Add([]byte(`{"kind":"PodDisruptionBudgetList","metadata":{"continue":"c"},"items":[{"metadata":{"name":"a","namespace":"b"},"spec":{"selector":{}}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		budgets, _, err := ParseBudgetList(b)
		if err != nil {
			if !errors.Is(err, ErrBadAnswer) {
				t.Fatalf("error without ErrBadAnswer: %v", err)
			}
			return
		}
		for _, bu := range budgets {
			if bu.Name == "" || bu.Namespace == "" {
				t.Fatalf("budget read as %+v", bu)
			}
			pods := []Pod{{Namespace: bu.Namespace, Name: "p", NodeName: "n", Phase: podRunning, Controller: "ReplicaSet", Labels: map[string]string{"app": "web"}}}
			MarkBudgets(pods, budgets)
		}
	})
}
