package kubeview

import (
	"errors"
	"testing"

	"github.com/rotahq/rota/scaler/fleet"
)

// jobPod is a running pod on cpu01 that owner (an owner reference, JSON) controls, with
// annotations notes (JSON).
func jobPod(t *testing.T, owner, notes string) Pod {
	t.Helper()
	p, err := ParsePod([]byte(`{"metadata":{"name":"train-0","namespace":"ml","annotations":` + notes + `,
		"ownerReferences":[` + owner + `]},
		"spec":{"nodeName":"cpu01","containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]},
		"status":{"phase":"Running"}}`))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const trainOwner = `{"apiVersion":"batch/v1","kind":"Job","name":"train","uid":"j1","controller":true}`

// TestJobsAtTheirLastRetryStay: an evicted pod is one failure of its Job, which fails once
// they pass backoffLimit; so a Job's pod is moved (movable and requeueable) only when its Job
// outlives the eviction of every pod it runs: failures so far (counted, uncounted, pods being
// deleted where the Job controller does not count them yet) and one per active pod within backoffLimit, its index's retries with
// backoffLimitPerIndex, or a pod failure policy whose first rule that can match an eviction
// ignores it. A finished Job, a Job not read, one of its name made again since (another UID)
// and a "Job" of another API group keep their pods.
func TestJobsAtTheirLastRetryStay(t *testing.T) {
	ignore := `"podFailurePolicy":{"rules":[{"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget"}]}]},`
	for _, tc := range []struct {
		name, spec, status, notes string
		outlives                  bool
	}{
		{"backoffLimit 0", `"backoffLimit":0,`, `"active":1`, `{}`, false},
		{"retries left", `"backoffLimit":2,`, `"active":1,"failed":1`, `{}`, true},
		{"failures so far at backoffLimit", `"backoffLimit":2,`, `"active":1,"failed":2`, `{}`, false},
		{"the default backoffLimit, 6", ``, `"active":1,"failed":5`, `{}`, true},
		{"the default backoffLimit, reached", ``, `"active":1,"failed":6`, `{}`, false},
		{"more pods than retries", `"backoffLimit":3,`, `"active":4`, `{}`, false},
		{"as many pods as retries", `"backoffLimit":4,`, `"active":4`, `{}`, true},
		{"a status not updated yet", `"backoffLimit":0,`, ``, `{}`, false},
		{"failures not counted yet", `"backoffLimit":2,`, `"active":1,"uncountedTerminatedPods":{"failed":["u1","u2"]}`, `{}`, false},
		{"pods being deleted, not counted yet", `"backoffLimit":2,"podReplacementPolicy":"Failed",`, `"active":1,"terminating":2`, `{}`, false},
		{"pods being deleted, counted", `"backoffLimit":2,`, `"active":1,"failed":1,"terminating":1`, `{}`, true},
		{"complete", `"backoffLimit":6,`, `"active":1,"conditions":[{"type":"Complete","status":"True"}]`, `{}`, false},
		{"about to fail", `"backoffLimit":6,`, `"active":1,"conditions":[{"type":"FailureTarget","status":"True"}]`, `{}`, false},
		{"a false condition", `"backoffLimit":6,`, `"active":1,"conditions":[{"type":"Failed","status":"False"}]`, `{}`, true},
		{"disruptions ignored", `"backoffLimit":0,` + ignore, `"active":1`, `{}`, true},
		{"disruptions ignored, status True", `"backoffLimit":0,"podFailurePolicy":{"rules":[
			{"action":"Ignore","onPodConditions":[{"type":"ConfigIssue"},{"type":"DisruptionTarget","status":"True"}]}]},`, `"active":1`, `{}`, true},
		{"disruptions ignored when False only", `"backoffLimit":0,"podFailurePolicy":{"rules":[
			{"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget","status":"False"}]}]},`, `"active":1`, `{}`, false},
		{"disruptions counted", `"backoffLimit":0,"podFailurePolicy":{"rules":[
			{"action":"Count","onPodConditions":[{"type":"DisruptionTarget"}]},
			{"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget"}]}]},`, `"active":1`, `{}`, false},
		{"disruptions fail the Job", `"backoffLimit":6,"podFailurePolicy":{"rules":[
			{"action":"FailJob","onPodConditions":[{"type":"DisruptionTarget"}]}]},`, `"active":1`, `{}`, false},
		{"an exit code may fail the Job first", `"backoffLimit":6,"podFailurePolicy":{"rules":[
			{"action":"FailJob","onExitCodes":{"operator":"In","values":[137]}},
			{"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget"}]}]},`, `"active":1`, `{}`, false},
		{"an exit code may count it first", `"backoffLimit":0,"podFailurePolicy":{"rules":[
			{"action":"Count","onExitCodes":{"operator":"In","values":[143]}},
			{"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget"}]}]},`, `"active":1`, `{}`, false},
		{"an exit code ignored first", `"backoffLimit":0,"podFailurePolicy":{"rules":[
			{"action":"Ignore","onExitCodes":{"operator":"In","values":[143]}},` + ignore[len(`"podFailurePolicy":{"rules":[`):], `"active":1`, `{}`, true},
		{"an action rota does not know", `"backoffLimit":6,"podFailurePolicy":{"rules":[
			{"action":"FailSomething","onPodConditions":[{"type":"DisruptionTarget"}]}]},`, `"active":1`, `{}`, false},
		{"its index has a retry left", `"backoffLimitPerIndex":2,"backoffLimit":2147483647,`, `"active":3`,
			`{"batch.kubernetes.io/job-index-failure-count":"1"}`, true},
		{"its index at its last retry", `"backoffLimitPerIndex":2,"backoffLimit":2147483647,`, `"active":3`,
			`{"batch.kubernetes.io/job-index-failure-count":"2"}`, false},
		{"its index's failures not said", `"backoffLimitPerIndex":2,"backoffLimit":2147483647,`, `"active":3`, `{}`, false},
		{"its index's failures unreadable", `"backoffLimitPerIndex":2,"backoffLimit":2147483647,`, `"active":3`,
			`{"batch.kubernetes.io/job-index-failure-count":"-1"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobs, _, err := ParseJobList([]byte(`{"kind":"JobList","items":[{"metadata":{"name":"train","namespace":"ml","uid":"j1"},
				"spec":{` + tc.spec + `"template":{}},"status":{` + tc.status + `}}]}`))
			if err != nil {
				t.Fatal(err)
			}
			pods := []Pod{jobPod(t, trainOwner, tc.notes)}
			MarkJobs(pods, jobs)
			p := pods[0]
			if p.JobName != "train" || p.Movable(false) != tc.outlives || p.Job(fleet.Needs{}, Scope{Now: t0}).Requeueable != tc.outlives {
				t.Errorf("job %q: movable %v, requeueable %v; want %v", p.JobName, p.Movable(false), p.Job(fleet.Needs{}, Scope{Now: t0}).Requeueable, tc.outlives)
			}
		})
	}

	retries, err := ParseJob([]byte(`{"kind":"Job","metadata":{"name":"train","namespace":"ml","uid":"j1"},"spec":{"backoffLimit":6},"status":{"active":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	for name, owner := range map[string]string{
		"a Job not read":               `{"apiVersion":"batch/v1","kind":"Job","name":"other","uid":"j1","controller":true}`,
		"a Job of its name made again": `{"apiVersion":"batch/v1","kind":"Job","name":"train","uid":"j0","controller":true}`,
		"a Job of another group":       `{"apiVersion":"example.com/v1","kind":"Job","name":"train","uid":"j1","controller":true}`,
		"a Job that does not control":  `{"apiVersion":"batch/v1","kind":"Job","name":"train","uid":"j1"}`,
	} {
		pods := []Pod{jobPod(t, owner, `{}`)}
		MarkJobs(pods, []BatchJob{retries})
		if pods[0].Movable(false) || pods[0].Job(fleet.Needs{}, Scope{Now: t0}).Requeueable {
			t.Errorf("%s: the pod is movable or requeueable", name)
		}
	}
	if _, err := ParseJob([]byte(`{"kind":"Pod","metadata":{"name":"train","namespace":"ml"}}`)); err == nil {
		t.Error("a Pod read as a Job")
	}
	if _, _, err := ParseJobList([]byte(`{"kind":"JobList","items":[{"metadata":{"name":"train"}}]}`)); err == nil {
		t.Error("a Job without a namespace read")
	}
	// Garbage counts are refused, never read as retries left: a negative failure count, or
	// one past Kubernetes' int32, made room for evictions the Job would not outlive.
	for _, bad := range []string{
		`"spec":{"backoffLimit":-1},"status":{"active":1}`,
		`"spec":{"backoffLimit":0},"status":{"active":1,"failed":-5}`,
		`"spec":{"backoffLimit":2},"status":{"active":-3}`,
		`"spec":{"backoffLimit":2,"podReplacementPolicy":"Failed"},"status":{"active":1,"terminating":-2}`,
		`"spec":{"backoffLimitPerIndex":-1},"status":{"active":1}`,
		`"spec":{"backoffLimit":0},"status":{"active":1,"failed":-9223372036854775808}`,
		`"spec":{"backoffLimit":2147483648},"status":{"active":1}`,
	} {
		if _, _, err := ParseJobList([]byte(`{"kind":"JobList","items":[{"metadata":{"name":"train","namespace":"ml","uid":"j1"},` + bad + `}]}`)); !errors.Is(err, ErrBadAnswer) {
			t.Errorf("%s: error %v, want ErrBadAnswer", bad, err)
		}
	}
}

// FuzzParseJobList: any answer either fails with ErrBadAnswer or gives Jobs with a name, a
// namespace and counts that are not negative, whose pods' moves are decided without a panic.
func FuzzParseJobList(f *testing.F) {
	f.Add([]byte(`{"kind":"JobList","items":[{"metadata":{"name":"train","namespace":"ml","uid":"j1"},"spec":{"backoffLimit":2,"backoffLimitPerIndex":1,
		"podFailurePolicy":{"rules":[{"action":"Count","onExitCodes":{"values":[1]}},{"action":"Ignore","onPodConditions":[{"type":"DisruptionTarget"}]}]}},
		"status":{"active":1,"failed":1,"terminating":1,"uncountedTerminatedPods":{"failed":["u"]}}}]}`))
	f.Add([]byte(`{"kind":"JobList","items":[{"metadata":{"name":"a","namespace":"b"},"status":{"conditions":[{"type":"Complete","status":"True"}]}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		jobs, _, err := ParseJobList(b)
		if err != nil {
			if !errors.Is(err, ErrBadAnswer) {
				t.Fatalf("error without ErrBadAnswer: %v", err)
			}
			return
		}
		for _, j := range jobs {
			if j.Name == "" || j.Namespace == "" || j.BackoffLimit < 0 || j.Failed < 0 || j.Active < 0 || (j.PerIndex != nil && *j.PerIndex < 0) {
				t.Fatalf("job read as %+v", j)
			}
			pods := []Pod{{Namespace: j.Namespace, Name: "p", Controller: "Job", JobName: j.Name, JobUID: j.UID}}
			MarkJobs(pods, []BatchJob{j})
		}
	})
}
