package kubeview

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/fleet"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json")

// The fixtures are what a real API server answered (TestRealCluster -record): a NodeList of a
// Ready node, a node a person cordoned and two GPU nodes rota powered off; a PodList of running
// Deployment pods (one annotated do-not-disrupt), a bare pod, a DaemonSet pod, a Job's pod, a
// static pod's mirror, and pending pods the scheduler marked unschedulable (a node selector, a
// sidecar and an init container, GPU pods with node affinity and tolerations); and a first page
// of pods with its continue token.
func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	return testutil.Testdata(t, name)
}

// recorded is what the golden file holds: each pod as read, and the view rota derives.
type recorded struct {
	Pods     []podSummary              `json:"pods"`
	Servers  map[string]fleet.JobsView `json:"servers"`
	Demand   []fleet.Demand            `json:"demand"`
	Unplaced []string                  `json:"unplaced"`
}

type podSummary struct {
	ID         string   `json:"id"`
	Node       string   `json:"node,omitempty"`
	Controller string   `json:"controller,omitempty"`
	Requests   Requests `json:"requests"`
	Holds      bool     `json:"holds"`
	Waits      bool     `json:"waits"`
	Drainable  bool     `json:"drainable"`
	Movable    bool     `json:"movable"`
	Mirror     bool     `json:"mirror,omitempty"`
	Keep       bool     `json:"do_not_disrupt,omitempty"`
}

func TestRecordedAnswers(t *testing.T) {
	nodes, cont, err := ParseNodeList(readFixture(t, "recorded-nodes.json"))
	if err != nil || cont != "" {
		t.Fatalf("nodes: %v (continue %q)", err, cont)
	}
	pods, cont, err := ParsePodList(readFixture(t, "recorded-pods.json"))
	if err != nil || cont != "" {
		t.Fatalf("pods: %v (continue %q)", err, cont)
	}
	page, cont, err := ParsePodList(readFixture(t, "recorded-pods-page.json"))
	if err != nil || cont == "" || len(page) != 2 {
		t.Errorf("first page: %d pods, continue %q, %v", len(page), cont, err)
	}
	v := View{Nodes: nodes, Pods: pods}
	sc := Scope{Now: t0}
	servers, err := v.JobsViews(sc)
	if err != nil {
		t.Fatal(err)
	}
	demand, unplaced, err := v.Demand(sc, classify)
	if err != nil {
		t.Fatal(err)
	}
	got := recorded{Servers: servers, Demand: demand, Unplaced: unplaced}
	for _, p := range pods {
		got.Pods = append(got.Pods, podSummary{ID: p.ID(), Node: p.NodeName, Controller: p.Controller, Requests: p.Requests,
			Holds: p.Holds(), Waits: p.Waits(), Drainable: p.Drainable(false), Movable: p.Movable(false), Mirror: p.Mirror, Keep: p.DoNotDisrupt})
	}
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "recorded.golden.json")
	if *update {
		if err := os.WriteFile(golden, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(want), b) {
		t.Errorf("view of the recorded answers differs from %s (go test -run TestRecordedAnswers -update):\n%s", golden, b)
	}
}

// Answers spoiled in the ways a proxy, a truncated read or a newer API server could spoil
// them: each fails the whole page, names what it could not read, and wraps ErrBadAnswer.
func TestSpoiledAnswers(t *testing.T) {
	pods := string(readFixture(t, "recorded-pods.json"))
	nodes := string(readFixture(t, "recorded-nodes.json"))
	huge := strings.Repeat("x", 1<<20)
	replace := func(s, old, new string) string {
		if !strings.Contains(s, old) {
			t.Fatalf("fixture holds no %q", old)
		}
		return strings.Replace(s, old, new, 1)
	}
	for _, tc := range []struct {
		name, body string
		parse      func([]byte) error
		want       string
	}{
		{"truncated", pods[:len(pods)/2], parsePods, "unexpected end of JSON"},
		{"not json", "<html>502 Bad Gateway</html>", parsePods, "invalid character"},
		{"wrong kind", replace(pods, `"kind": "PodList"`, `"kind": "Status"`), parsePods, `got kind "Status"`},
		{"no items", replace(pods, `"items": [`, `"itemz": [`), parsePods, "PodList without items"},
		{"null items", `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":null}`, parsePods, "without items"},
		{"cpu not a quantity", replace(pods, `"cpu": "2"`, `"cpu": "two"`), parsePods, "quantities must match"},
		{"negative memory", replace(pods, `"memory": "1Gi"`, `"memory": "-1Gi"`), parsePods, "memory request -1Gi is negative"},
		{"half a gpu", strings.ReplaceAll(pods, `"nvidia.com/gpu": "2"`, `"nvidia.com/gpu": "500m"`), parsePods, "nvidia.com/gpu request 500m is not a whole number"},
		{"absurd cpu", replace(pods, `"cpu": "8"`, `"cpu": "8e30"`), parsePods, "out of range"},
		// Read at once: an exact comparison of such a number takes minutes (found by fuzzing).
		{"absurd exponent", replace(pods, `"cpu": "8"`, `"cpu": "8e99999999"`), parsePods, "cpu request 8e99999999 is out of range"},
		{"pod without a name", replace(pods, `"name": "bare",`, `"name": "",`), parsePods, "pod item 1: "},
		{"pod without containers", replace(pods, `"containers": [`, `"sidecars": [`), parsePods, "pod t-record/agent-x1: unexpected kubernetes api answer: pod without spec.containers"},
		{"a field of the wrong type", replace(pods, `"phase": "Running"`, `"phase": 7`), parsePods, "cannot unmarshal number"},
		{"node without a name", replace(nodes, `"name": "cpu01"`, `"name": ""`), parseNodes, "node item 0: "},
		{"node list as pods", nodes, parsePods, `got kind "NodeList"`},
		// A value quoted in an error is cut short, however long it is.
		{"a huge kind", replace(pods, `"kind": "PodList"`, `"kind": "`+huge+`"`), parsePods, `got kind "xxxx`},
		{"a huge time", podList(`{"metadata":{"name":"a","namespace":"ns"},"spec":{"containers":[{"name":"c"}]},"status":{"startTime":"` + huge + `"}}`), parsePods, `parsing time "xxxx`},
		{"a huge name", podList(`{"metadata":{"name":"` + huge + `","namespace":"ns"},"spec":{}}`), parsePods, "pod ns/xxxx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.parse([]byte(tc.body))
			if !errors.Is(err, ErrBadAnswer) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %.300v, want an ErrBadAnswer naming %q", err, tc.want)
			}
			if len(err.Error()) > 1000 {
				t.Errorf("an error of %d bytes: %.300s", len(err.Error()), err)
			}
		})
	}
}

// itemSeeds makes a one-item list of each object of a recorded list; a pod without its
// managedFields (bookkeeping the parser reads of Nodes alone): small seeds keep the fuzzer
// quick.
func itemSeeds(f *testing.F, name string) [][]byte {
	f.Helper()
	var l struct {
		Kind  string                       `json:"kind"`
		Items []map[string]json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(readFixture(f, name), &l); err != nil {
		f.Fatal(err)
	}
	var out [][]byte
	for _, item := range l.Items {
		var md map[string]json.RawMessage
		if err := json.Unmarshal(item["metadata"], &md); err != nil {
			f.Fatal(err)
		}
		if l.Kind == "PodList" {
			delete(md, "managedFields")
		}
		item["metadata"], _ = json.Marshal(md)
		b, err := json.Marshal(map[string]any{"kind": l.Kind, "apiVersion": "v1", "metadata": map[string]string{}, "items": []any{item}})
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// podList is a PodList answer of the given items.
func podList(items ...string) string {
	return `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[` + strings.Join(items, ",") + `]}`
}

func parsePods(b []byte) error  { _, _, err := ParsePodList(b); return err }
func parseNodes(b []byte) error { _, _, err := ParseNodeList(b); return err }

// FuzzParsePodList: any answer either fails with ErrBadAnswer or gives pods that each have a
// name, a namespace and requests within bounds; it never panics.
func FuzzParsePodList(f *testing.F) {
	for _, seed := range itemSeeds(f, "recorded-pods.json") {
		f.Add(seed)
	}
	f.Add([]byte(`{"kind":"PodList","items":[{"metadata":{"name":"a","namespace":"b"},"spec":{"containers":[{"resources":{"requests":{"cpu":"1e3","nvidia.com/gpu":"1"}}}],"overhead":{"cpu":"10m"}}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		pods, _, err := ParsePodList(b)
		if err != nil {
			if !errors.Is(err, ErrBadAnswer) {
				t.Fatalf("error without ErrBadAnswer: %v", err)
			}
			return
		}
		for _, p := range pods {
			r := p.Requests
			if p.Name == "" || p.Namespace == "" || r.MilliCPU < 0 || r.Memory < 0 || r.GPUs < 0 ||
				r.MilliCPU > maxMilliCPU || r.Memory > maxMemory || r.GPUs > maxGPUs {
				t.Fatalf("pod read as %+v", p)
			}
			_ = p.Shape()
		}
		v := View{Nodes: []Node{{Name: "n"}}, Pods: pods}
		if _, err := v.JobsViews(Scope{}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := v.Demand(Scope{}, classify); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzParseNodeList: as FuzzParsePodList, for Nodes; the view of any Nodes read is whole.
func FuzzParseNodeList(f *testing.F) {
	for _, seed := range itemSeeds(f, "recorded-nodes.json") {
		f.Add(seed)
	}
	f.Add([]byte(`{"kind":"NodeList","items":[{"metadata":{"name":"n","annotations":{"rotahq.github.io/drain":"rota: x"}},"spec":{"unschedulable":true}}]}`))
	f.Add([]byte(`{"kind":"NodeList","items":[{"metadata":{"name":"n","annotations":{"rotahq.github.io/drain":"rota: x"},"managedFields":[{"manager":"rota","fieldsV1":{"f:spec":{"f:unschedulable":{}}}}]},"spec":{"unschedulable":true},"status":{"allocatable":{"amd.com/gpu":"1"}}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		nodes, _, err := ParseNodeList(b)
		if err != nil {
			if !errors.Is(err, ErrBadAnswer) {
				t.Fatalf("error without ErrBadAnswer: %v", err)
			}
			return
		}
		views, err := (View{Nodes: nodes}).JobsViews(Scope{})
		if err != nil {
			return // two Nodes of one name: refused whole
		}
		for _, n := range nodes {
			v := views[n.Name]
			if !v.Known || v.Allocated() || (v.DrainedByRota && !v.Drained && n.Unschedulable) {
				t.Fatalf("node %+v read as %+v", n, v)
			}
		}
	})
}
