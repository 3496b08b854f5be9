package slurm

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/slurmcli"
	"github.com/rotahq/rota/internal/slurmcli/slurmclitest"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// readFixture reads a golden file of testdata/, or a recorded Slurm output
// (slurmclitest.ReadRecorded).
func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	if !strings.HasSuffix(name, ".golden.json") {
		return slurmclitest.ReadRecorded(t, name)
	}
	return testutil.Testdata(t, name)
}

// TestFixturesGolden parses every recorded pair and compares what the scaler would see (nodes
// and demand with the default classes) with testdata/<name>.golden.json.
func TestFixturesGolden(t *testing.T) {
	cfg := &config.Config{Classes: config.DefaultClasses()}
	for _, name := range slurmclitest.Recorded(t) {
		t.Run(name, func(t *testing.T) {
			nodes, err := slurmcli.ParseNodes(readFixture(t, name+".sinfo"))
			if err != nil {
				t.Fatal(err)
			}
			queue, err := slurmcli.ParseJobs(readFixture(t, name+".squeue"), time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			v := View{Nodes: nodes, Jobs: queue}
			got, err := json.MarshalIndent(struct {
				Nodes  map[string]fleet.JobsView
				Demand []fleet.Demand
			}{v.JobsViews(), v.Demand(cfg.Classify)}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name+".golden.json")
			if *update {
				if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if want := readFixture(t, name+".golden.json"); !bytes.Equal(append(got, '\n'), want) {
				t.Errorf("%s differs from what was parsed (run with -update):\n%s", golden, got)
			}
		})
	}
}

func TestParseNodeLine(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       fleet.JobsView
		summary    string
	}{
		// Lines as Slurm 22.05 printed them on this cluster.
		{"idle", "node2|batch*|idle|0/2/0/2|gpu:0|none",
			fleet.JobsView{Known: true, Responding: true}, "idle"},
		{"mixed with a gpu", "gpu01|gpu|mixed|1/3/0/4|gpu:1|none",
			fleet.JobsView{Known: true, CPUs: 1, GPUs: 1, Responding: true}, "mixed"},
		{"draining by rota", "node1|batch*|allocated+drain|2/0/0/2|gpu:0|rota: idle 10m",
			fleet.JobsView{Known: true, CPUs: 2, DrainedByRota: true, Responding: true}, "draining"},
		{"draining while completing", "node2|batch*|idle+completing+drain|0/0/2/2|gpu:0|rota: idle 10m",
			fleet.JobsView{Known: true, DrainedByRota: true, Responding: true}, "draining"},
		{"drained by rota", "node2|batch*|idle+drain|0/0/2/2|gpu:0|rota: idle 10m",
			fleet.JobsView{Known: true, Drained: true, DrainedByRota: true, Responding: true}, "drained"},
		{"drained by a person", "node1|batch*|idle+drain|0/0/2/2|gpu:0|maintenance by bob",
			fleet.JobsView{Known: true, Drained: true, Responding: true}, "drained"},
		{"not responding", "gpu02|gpu|mixed+not_responding|2/2/0/4|gpu:2|none",
			fleet.JobsView{Known: true, CPUs: 2, GPUs: 2}, "not_responding"},
		// DOWN, FAIL and maintenance by anyone but rota: out of service by someone else's hand,
		// read as a person's drain (the planner leaves it; Drain and Resume refuse it).
		{"down by slurm, its server not responding", "gpu02|gpu|down+not_responding|0/0/4/4|gpu:0|Not responding",
			fleet.JobsView{Known: true, Drained: true}, "down"},
		{"down by a person", "node2|batch*|down|0/0/2/2|gpu:0|bad disk",
			fleet.JobsView{Known: true, Drained: true}, "down"},
		{"failed by a person", "node1|batch*|idle+fail|0/2/0/2|gpu:0|bad dimm",
			fleet.JobsView{Known: true, Drained: true, Responding: true}, "idle"},
		{"failing, its job still running", "node1|batch*|mixed+fail|1/1/0/2|gpu:0|bad dimm",
			fleet.JobsView{Known: true, CPUs: 1, Responding: true}, "mixed"},
		{"failed on rota's drain, reason kept", "node1|batch*|idle+drain+fail|0/0/2/2|gpu:0|rota: idle",
			fleet.JobsView{Known: true, Drained: true, Responding: true}, "drained"},
		{"in a maintenance reservation", "node1|batch*|idle+maintenance+reserved|0/2/0/2|gpu:0|none",
			fleet.JobsView{Known: true, Drained: true, Responding: true}, "idle"},
		// An active reservation holds the node for its users: idle, it is not empty (rota must
		// neither drain nor power it off) and takes no other work.
		{"in a reservation", "node1|batch*|idle+reserved|0/2/0/2|gpu:0|none",
			fleet.JobsView{Known: true, Drained: true, Responding: true}, "idle"},
		{"in a reservation, its job running", "node1|batch*|allocated+reserved|2/0/0/2|gpu:0|none",
			fleet.JobsView{Known: true, CPUs: 2, Responding: true}, "allocated"},
		{"reserved over rota's drain", "node1|batch*|idle+drain+reserved|0/0/2/2|gpu:0|rota: idle",
			fleet.JobsView{Known: true, Drained: true, Responding: true}, "drained"},
		{"down by a person over rota's drain", "node1|batch*|down+drain|0/0/2/2|gpu:0|bad psu",
			fleet.JobsView{Known: true, Drained: true}, "down"},
		// rota's own power-off: its reason stays on the node Slurm sees DOWN.
		{"rota powered off, slurm sees it down", "node2|batch*|down+drain+not_responding|0/0/2/2|gpu:0|rota: powered off",
			fleet.JobsView{Known: true, Drained: true, DrainedByRota: true}, "down"},
		{"down by slurm's power saving", "node2|batch*|down+powered_down|0/0/2/2|gpu:0|ResumeTimeout reached",
			fleet.JobsView{Known: true, PowerSaving: true}, "powered_down"},
		{"powering down", "node2|batch*|idle+powering_down|0/2/0/2|gpu:0|rota: idle 10m",
			fleet.JobsView{Known: true, PowerSaving: true}, "powering_down"},
		{"powered down, rota's reason kept", "node2|batch*|idle+powered_down|0/2/0/2|gpu:0|rota: idle",
			fleet.JobsView{Known: true, PowerSaving: true}, "powered_down"},
		{"typed gres with indexes", "g1|gpu|mixed|8/88/0/96|gpu:h100:3(IDX:0-1,4),nic:1|none",
			fleet.JobsView{Known: true, CPUs: 8, GPUs: 3, Responding: true}, "mixed"},
		{"no gres configured", "n1|batch|idle|0/2/0/2|(null)|none",
			fleet.JobsView{Known: true, Responding: true}, "idle"},
		{"pipe in the reason", "n1|batch|idle+drain|0/0/2/2|gpu:0|rota: a|b",
			fleet.JobsView{Known: true, Drained: true, DrainedByRota: true, Responding: true}, "drained"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes, err := slurmcli.ParseNodes(slurmclitest.Sinfo(tc.line + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			if got := (View{Nodes: nodes}).JobsViews()[nodes[0].Name]; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("view %+v, want %+v", got, tc.want)
			}
			if got := nodes[0].State.Summary(); got != tc.summary {
				t.Errorf("summary %q, want %q", got, tc.summary)
			}
		})
	}
}

// TestEveryJobHeldCounts: a job holds its servers until it is gone, not only while running.
// slurmctld sets a node whose only job is suspended to IDLE with its CPUs released (the job
// keeps its memory), and a completing job's CPUs may be freed before it ends: sinfo then shows
// nothing allocated, and only squeue says the server is not empty. Powering it off would kill
// the suspended job (invariant 1).
func TestEveryJobHeldCounts(t *testing.T) {
	for _, tc := range []struct{ name, line, state string }{
		{"suspended", "node1|batch*|idle+drain|0/2/0/2|gpu:0|rota: idle", "suspended"},
		{"completing", "node1|batch*|idle+drain|0/2/0/2|gpu:0|rota: idle", "completing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes, err := slurmcli.ParseNodes(slurmclitest.Sinfo(tc.line + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			jobs := []Job{{ID: "7", State: tc.state, Nodes: 1, CPUs: 2, NodeList: []string{"node1"}}}
			v := View{Nodes: nodes, Jobs: jobs}.JobsViews()["node1"]
			if !v.Allocated() || v.Drained {
				t.Errorf("node1 holding a %s job: %+v, want it allocated and not drained", tc.state, v)
			}
		})
	}
}

// FuzzParseNodes: any input parses or fails with slurmcli.ErrUnexpected, never panics; what parses
// reads back consistently.
func FuzzParseNodes(f *testing.F) {
	for _, name := range slurmclitest.Recorded(f) {
		f.Add(readFixture(f, name+".sinfo"))
	}
	f.Add(slurmclitest.Sinfo("g1|gpu|mixed+drain|8/88/0/96|gpu:h100:3(IDX:0-1,4),nic:1|rota: x\n"))
	f.Add(slurmclitest.Sinfo("g1|gpu|idle+drain+fail|0/96/0/96|gpu:h100:0(IDX:N/A)|rota: x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		nodes, err := slurmcli.ParseNodes(b)
		if err != nil {
			if !errors.Is(err, slurmcli.ErrUnexpected) {
				t.Fatalf("error %v is not slurmcli.ErrUnexpected", err)
			}
			return
		}
		views := View{Nodes: nodes}.JobsViews()
		for _, n := range nodes {
			v := views[n.Name]
			if v.Drained && v.Allocated() {
				t.Fatalf("%s drained with allocation: %+v", n.Name, v)
			}
			if v.DrainedByRota && !n.State.Has("drain") {
				t.Fatalf("%s ours without a drain", n.Name)
			}
			if v.DrainedByRota && (n.State.Has("fail") || !OursReason(n.Reason)) {
				t.Fatalf("%s ours with a person's marking: %+v", n.Name, n)
			}
		}
	})
}

// FuzzParseJobs: any input parses or fails with slurmcli.ErrUnexpected, never panics; its
// node lists name at most slurmcli.MaxReadHosts nodes in all.
func FuzzParseJobs(f *testing.F) {
	for _, name := range slurmclitest.Recorded(f) {
		f.Add(readFixture(f, name+".squeue"))
	}
	// CPUs per GPU as 23.02 and later print them, of a job exclusive over a topology segment.
	line := string(slurmclitest.Squeue("1|gpu|PENDING|1|1|1|1|cpu=1,node=1|N/A|gres/gpu:2|N/A|1|(null)|2026-11-29T22:00:51||Resources\n"))
	f.Add([]byte(strings.Replace(line, "N/A"+slurmcli.Sep+"OK"+slurmcli.Sep+"root\n", "gres/gpu:8"+slurmcli.Sep+"TOPO"+slurmcli.Sep+"root\n", 1)))
	// a job exclusive to its user (--exclusive=user), of another user
	f.Add([]byte(strings.Replace(line, "OK"+slurmcli.Sep+"root\n", "USER"+slurmcli.Sep+"nobody\n", 1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		queue, err := slurmcli.ParseJobs(b, time.UTC)
		if err != nil {
			if !errors.Is(err, slurmcli.ErrUnexpected) {
				t.Fatalf("error %v is not slurmcli.ErrUnexpected", err)
			}
			return
		}
		total := 0
		for _, j := range queue {
			total += len(j.NodeList) + len(j.ReqNodes)
		}
		if total > slurmcli.MaxReadHosts {
			t.Fatalf("%d nodes in all", total)
		}
		for _, d := range (View{Jobs: queue}).Demand(func(config.Shape) string { return "c" }) {
			if d.Count < 1 || d.Nodes < 1 {
				t.Fatalf("demand %+v", d)
			}
		}
	})
}

// BenchmarkQueue100k parses a queue of 100,000 pending jobs (the recorded lines repeated) and
// groups it into demand: the design's largest queue, read once per pass.
func BenchmarkQueue100k(b *testing.B) {
	recorded := strings.Split(strings.TrimSpace(string(readFixture(b, "pending.squeue"))), "\n")
	var buf bytes.Buffer
	for i := range 100000 {
		buf.WriteString(recorded[i%len(recorded)] + "\n")
	}
	classify := (&config.Config{Classes: config.DefaultClasses()}).Classify
	b.ResetTimer()
	for range b.N {
		queue, err := slurmcli.ParseJobs(buf.Bytes(), time.UTC)
		if err != nil {
			b.Fatal(err)
		}
		if d := (View{Jobs: queue}).Demand(classify); len(d) == 0 {
			b.Fatal("no demand")
		}
	}
}

// TestUsers: a server says whose jobs run on it when they are one user's (a completing job
// too), and whether one of them is exclusive to its user (--exclusive=user); pending jobs
// exclusive to their user are demand of that user, grouped apart, and other pending jobs carry
// no user, so their demand groups as before.
func TestUsers(t *testing.T) {
	job := func(id, state, user string, only bool, nodes ...string) Job {
		return Job{ID: id, Partition: "batch", State: state, Nodes: 1, CPUs: 1, User: user, UserExclusive: only, NodeList: nodes,
			Reason: "Resources", Priority: 1}
	}
	v := View{
		Nodes: []Node{{Name: "alone"}, {Name: "only"}, {Name: "several"}, {Name: "empty"}},
		Jobs: []Job{
			job("1", "running", "alice", false, "alone"), job("2", "completing", "alice", false, "alone"),
			job("3", "running", "alice", true, "only"), job("4", "running", "alice", false, "only"),
			job("5", "running", "alice", true, "several"), job("6", "running", "bob", false, "several"),
			job("7", "pending", "alice", true), job("8", "pending", "alice", true), job("9", "pending", "bob", true),
			job("10", "pending", "alice", false), job("11", "pending", "bob", false),
		},
	}
	views := v.JobsViews()
	for name, want := range map[string]struct {
		user string
		only bool
	}{"alone": {"alice", false}, "only": {"alice", true}, "several": {"", false}, "empty": {"", false}} {
		if got := views[name]; got.User != want.user || got.UserOnly != want.only {
			t.Errorf("%s: user %q, exclusive to it %v; want %q, %v", name, got.User, got.UserOnly, want.user, want.only)
		}
	}
	var got []string
	for _, d := range v.Demand(func(config.Shape) string { return "light" }) {
		got = append(got, fmt.Sprintf("%q:%d", d.Needs.User, d.Count))
	}
	if want := []string{`"":2`, `"alice":2`, `"bob":1`}; !slices.Equal(got, want) {
		t.Errorf("demand by user %v, want %v", got, want)
	}
}
