package kubeview

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/rotahq/rota/internal/errtext"
)

// A move evicts through the Eviction API, so a PodDisruptionBudget decides: a running pod whose
// budget allows no disruption now is refused (429) at every pass, and the move's drain waits
// with its server cordoned until policy.drain.timeout undoes it; the next pass would plan the
// same move again. So such a pod is no move's to take while its budget holds it (MarkBudgets),
// and the planner is told which budget keeps it (fleet.Job.Held).

// Budget is a policy/v1 PodDisruptionBudget as rota reads it.
type Budget struct {
	Namespace, Name string
	// Selector selects the pods of its namespace it guards; nil selects none (policy/v1: an
	// empty selector selects every pod of the namespace).
	Selector *LabelSelector
	// Blocks: the API server evicts none of its pods now: status.disruptionsAllowed is not
	// above zero, or the disruption controller has not yet processed its spec
	// (status.observedGeneration behind metadata.generation).
	Blocks bool
}

// ID is how rota names the budget: namespace/name.
func (b Budget) ID() string { return b.Namespace + "/" + b.Name }

type budgetObject struct {
	Metadata struct {
		Name       string `json:"name"`
		Namespace  string `json:"namespace"`
		Generation int64  `json:"generation"`
	} `json:"metadata"`
	Spec struct {
		Selector *LabelSelector `json:"selector"`
	} `json:"spec"`
	Status struct {
		ObservedGeneration int64 `json:"observedGeneration"`
		DisruptionsAllowed int64 `json:"disruptionsAllowed"`
	} `json:"status"`
}

// ParseBudgetList reads one page of a policy/v1 PodDisruptionBudgetList.
func ParseBudgetList(data []byte) ([]Budget, string, error) {
	return parseList(data, "PodDisruptionBudgetList", "poddisruptionbudget", func(item []byte) (Budget, error) {
		var o budgetObject
		if err := json.Unmarshal(item, &o); err != nil {
			return Budget{}, fmt.Errorf("%w: %s", ErrBadAnswer, errtext.Of(err))
		}
		md := o.Metadata
		if md.Name == "" || md.Namespace == "" {
			return Budget{}, fmt.Errorf("%w: poddisruptionbudget without metadata.name or metadata.namespace", ErrBadAnswer)
		}
		return Budget{Namespace: md.Namespace, Name: md.Name, Selector: o.Spec.Selector,
			Blocks: o.Status.DisruptionsAllowed <= 0 || o.Status.ObservedGeneration < md.Generation}, nil
	})
}

// AnyMovable reports whether a pod of pods is one a move could take but for a PodDisruptionBudget
// (see Pod.held): only then are the budgets read (MarkBudgets).
func AnyMovable(pods []Pod, emptyDirData bool) bool {
	return slices.ContainsFunc(pods, func(p Pod) bool { return p.guarded() && p.held(emptyDirData) == "" })
}

// MarkBudgets sets Budget on each pod of pods that runs and that the Eviction API would refuse
// now because of budgets: one that selects it blocks (see Budget.Blocks), or several select it
// (the API server evicts no pod that more than one budget selects).
func MarkBudgets(pods []Pod, budgets []Budget) {
	for i := range pods {
		p := &pods[i]
		if !p.guarded() {
			continue
		}
		var selecting []string
		blocking := ""
		for _, b := range budgets {
			if b.Namespace != p.Namespace || b.Selector == nil || !b.Selector.matches(p.Labels) {
				continue
			}
			selecting = append(selecting, b.ID())
			if b.Blocks && blocking == "" {
				blocking = b.ID()
			}
		}
		switch {
		case len(selecting) > 1:
			p.Budget = "PodDisruptionBudgets " + strings.Join(selecting, " and ") + " select it, and the API server evicts no pod that several select"
		case blocking != "":
			p.Budget = "PodDisruptionBudget " + blocking + " allows no disruption now"
		}
	}
}

// guarded reports whether a PodDisruptionBudget decides pod p's eviction: it holds its Node
// and runs (the Eviction API lets a pod that has not started yet go whatever its budget).
func (p Pod) guarded() bool { return p.Holds() && p.Phase == podRunning && !p.Deleting }
