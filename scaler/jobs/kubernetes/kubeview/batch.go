package kubeview

import (
	"encoding/json"
	"fmt"

	"github.com/rotahq/rota/internal/errtext"
)

// An evicted pod of a batch/v1 Job fails, and its Job counts that failure against its
// backoffLimit (and, in an Indexed Job with backoffLimitPerIndex, against its index's): the
// Job, or the index, fails once they pass it, and its run is lost. So a Job's pod is moved only
// when its Job outlives the eviction (BatchJob.Outlives).

// indexFailureAnnotation is on each pod of a Job with backoffLimitPerIndex: the failures of its
// index so far.
const indexFailureAnnotation = "batch.kubernetes.io/job-index-failure-count"

// defaultBackoffLimit is Kubernetes' backoffLimit when a Job names none.
const defaultBackoffLimit = 6

// BatchJob is a batch/v1 Job as rota reads it: what decides whether its pods outlive a move.
type BatchJob struct {
	Namespace, Name, UID string
	// BackoffLimit is spec.backoffLimit; PerIndex spec.backoffLimitPerIndex (nil: none).
	BackoffLimit int64
	PerIndex     *int64
	// Failed are its failures so far: counted (status.failed), found and not counted yet
	// (status.uncountedTerminatedPods.failed) and, where the Job controller counts a pod only
	// once it failed (a pod failure policy, podReplacementPolicy Failed), its pods being
	// deleted (status.terminating); it counts them already otherwise.
	Failed int64
	// Active are its pods that run or wait to (status.active): a move may take each one.
	Active int64
	// Finished: it completed or failed (or is about to): no pod evicted is started again.
	Finished bool
	// Eviction is what its pod failure policy makes of an evicted pod (condition
	// DisruptionTarget, any exit code).
	Eviction Eviction
}

// Eviction is what a Job makes of one of its pods evicted.
type Eviction int

const (
	// EvictionCounted: a failure, counted against the backoff limits (no policy says otherwise).
	EvictionCounted Eviction = iota
	// EvictionIgnored: a pod failure policy rule ignores it (action Ignore on DisruptionTarget).
	EvictionIgnored
	// EvictionFails: a rule may fail the Job or the pod's index at once (FailJob, FailIndex).
	EvictionFails
)

// ID is how rota names the Job: namespace/name.
func (j BatchJob) ID() string { return j.Namespace + "/" + j.Name }

// Outlives reports whether Job j lives on, and starts pod p again, when a move evicts p and
// every other pod of j with it (moves of several servers may take them all): not finished,
// and either its pod failure policy ignores evictions, or the failures so far and one for each
// active pod stay within backoffLimit and, with backoffLimitPerIndex, p's index has a retry left.
func (j BatchJob) Outlives(p Pod) bool {
	switch {
	case j.Finished || j.Eviction == EvictionFails:
		return false
	case j.Eviction == EvictionIgnored:
		return true
	case j.Failed+max(j.Active, 1) > j.BackoffLimit:
		return false
	case j.PerIndex != nil:
		return p.IndexFailures != nil && *p.IndexFailures < *j.PerIndex
	}
	return true
}

// MarkJobs sets JobOutlives on each pod of pods that a Job of jobs runs and outlives its
// eviction (BatchJob.Outlives); a pod whose Job is not in jobs (one of its name made again
// since is another Job: its UID differs) stays unmarked, never moved.
func MarkJobs(pods []Pod, jobs []BatchJob) {
	byID := make(map[string]BatchJob, len(jobs))
	for _, j := range jobs {
		byID[j.ID()] = j
	}
	for i := range pods {
		p := &pods[i]
		if j, ok := byID[p.Namespace+"/"+p.JobName]; ok && p.JobName != "" && j.UID == p.JobUID {
			p.JobOutlives = j.Outlives(*p)
		}
	}
}

// RunsJobs reports whether a pod of pods that holds its node is a batch/v1 Job's: only then
// are the Jobs read.
func RunsJobs(pods []Pod) bool {
	for _, p := range pods {
		if p.Holds() && p.JobName != "" {
			return true
		}
	}
	return false
}

type podFailurePolicyRule struct {
	Action          string    `json:"action"`
	OnExitCodes     *struct{} `json:"onExitCodes"`
	OnPodConditions []struct {
		Type   string `json:"type"`
		Status string `json:"status"`
	} `json:"onPodConditions"`
}

type jobObject struct {
	Kind     string     `json:"kind"`
	Metadata objectMeta `json:"metadata"`
	Spec     struct {
		// int32, as Kubernetes' own: a count past it is refused by the decoding.
		BackoffLimit         *int32 `json:"backoffLimit"`
		BackoffLimitPerIndex *int32 `json:"backoffLimitPerIndex"`
		PodReplacementPolicy string `json:"podReplacementPolicy"`
		PodFailurePolicy     *struct {
			Rules []podFailurePolicyRule `json:"rules"`
		} `json:"podFailurePolicy"`
	} `json:"spec"`
	Status struct {
		Active                  int32       `json:"active"`
		Failed                  int32       `json:"failed"`
		Terminating             *int32      `json:"terminating"`
		Conditions              []condition `json:"conditions"`
		UncountedTerminatedPods *struct {
			Failed []string `json:"failed"`
		} `json:"uncountedTerminatedPods"`
	} `json:"status"`
}

// eviction is what the rules of a pod failure policy make of an evicted pod, read in order as
// the Job controller does: the first rule on condition DisruptionTarget (status True) decides;
// a rule on exit codes before it may match too (rota cannot tell the evicted pod's exit code),
// so one that fails the Job or the index fails it, and one that counts it may count it.
// An action rota does not know (a later Kubernetes's) may fail the Job, as FailJob does.
func eviction(rules []podFailurePolicyRule) Eviction {
	counted := false
	for _, r := range rules {
		e := EvictionFails
		switch r.Action {
		case "Ignore":
			e = EvictionIgnored
		case "Count":
			e = EvictionCounted
		}
		if r.OnExitCodes != nil {
			if e == EvictionFails {
				return EvictionFails
			}
			counted = counted || e == EvictionCounted
			continue
		}
		for _, c := range r.OnPodConditions {
			if c.Type == "DisruptionTarget" && (c.Status == "" || c.Status == "True") {
				if e == EvictionIgnored && counted {
					return EvictionCounted
				}
				return e
			}
		}
	}
	return EvictionCounted
}

// ParseJob reads one batch/v1 Job.
func ParseJob(data []byte) (BatchJob, error) {
	var o jobObject
	if err := unmarshalKind(data, &o, &o.Kind, "Job"); err != nil {
		return BatchJob{}, err
	}
	return o.job()
}

// ParseJobList reads one page of a batch/v1 JobList.
func ParseJobList(data []byte) ([]BatchJob, string, error) {
	return parseList(data, "JobList", "job", func(item []byte) (BatchJob, error) {
		var o jobObject
		if err := json.Unmarshal(item, &o); err != nil {
			return BatchJob{}, fmt.Errorf("%w: %s", ErrBadAnswer, errtext.Of(err))
		}
		return o.job()
	})
}

func (o jobObject) job() (BatchJob, error) {
	md, spec, st := o.Metadata, o.Spec, o.Status
	if md.Name == "" || md.Namespace == "" {
		return BatchJob{}, fmt.Errorf("%w: job without metadata.name or metadata.namespace", ErrBadAnswer)
	}
	// A negative count would make room for retries the Job does not have: its pods moved.
	for _, c := range []struct {
		field string
		v     *int32
	}{{"spec.backoffLimit", spec.BackoffLimit}, {"spec.backoffLimitPerIndex", spec.BackoffLimitPerIndex},
		{"status.active", &st.Active}, {"status.failed", &st.Failed}, {"status.terminating", st.Terminating}} {
		if c.v != nil && *c.v < 0 {
			return BatchJob{}, fmt.Errorf("%w: job %s/%s: %s is %d, below 0", ErrBadAnswer, md.Namespace, md.Name, c.field, *c.v)
		}
	}
	j := BatchJob{Namespace: md.Namespace, Name: md.Name, UID: md.UID, BackoffLimit: defaultBackoffLimit,
		Failed: int64(st.Failed), Active: int64(st.Active)}
	if spec.BackoffLimit != nil {
		j.BackoffLimit = int64(*spec.BackoffLimit)
	}
	if n := spec.BackoffLimitPerIndex; n != nil {
		j.PerIndex = new(int64(*n))
	}
	if st.UncountedTerminatedPods != nil {
		j.Failed += int64(len(st.UncountedTerminatedPods.Failed))
	}
	if st.Terminating != nil && (spec.PodFailurePolicy != nil || spec.PodReplacementPolicy == "Failed") {
		j.Failed += int64(*st.Terminating)
	}
	for _, c := range st.Conditions {
		switch c.Type {
		case "Complete", "Failed", "FailureTarget", "SuccessCriteriaMet":
			j.Finished = j.Finished || c.Status == "True"
		}
	}
	if p := spec.PodFailurePolicy; p != nil {
		j.Eviction = eviction(p.Rules)
	}
	return j, nil
}
