package slurm

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fixtures are the sinfo/squeue outputs recorded from the real cluster (see -record).
func fixtures(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.sinfo"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".sinfo"))
	}
	return names
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFixturesGolden parses every recorded pair and compares what the scaler would see (nodes
// and demand with the default classes) with testdata/<name>.golden.json.
func TestFixturesGolden(t *testing.T) {
	cfg := &config.Config{Classes: config.DefaultClasses()}
	for _, name := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			nodes, err := ParseNodes(readFixture(t, name+".sinfo"))
			if err != nil {
				t.Fatal(err)
			}
			queue, err := ParseJobs(readFixture(t, name+".squeue"), time.UTC)
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
		{"down", "gpu02|gpu|down+not_responding|0/0/4/4|gpu:0|Not responding",
			fleet.JobsView{Known: true}, "down"},
		{"powering down", "node2|batch*|idle+powering_down|0/2/0/2|gpu:0|rota: idle 10m",
			fleet.JobsView{Known: true}, "powering_down"},
		{"powered down, rota's reason kept", "node2|batch*|idle+powered_down|0/2/0/2|gpu:0|rota: idle",
			fleet.JobsView{Known: true}, "powered_down"},
		{"typed gres with indexes", "g1|gpu|mixed|8/88/0/96|gpu:h100:3(IDX:0-1,4),nic:1|none",
			fleet.JobsView{Known: true, CPUs: 8, GPUs: 3, Responding: true}, "mixed"},
		{"no gres configured", "n1|batch|idle|0/2/0/2|(null)|none",
			fleet.JobsView{Known: true, Responding: true}, "idle"},
		{"pipe in the reason", "n1|batch|idle+drain|0/0/2/2|gpu:0|rota: a|b",
			fleet.JobsView{Known: true, Drained: true, DrainedByRota: true, Responding: true}, "drained"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes, err := ParseNodes(sinfoOut(tc.line + "\n"))
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

func TestParseNodesMergesPartitions(t *testing.T) {
	nodes, err := ParseNodes(sinfoOut("n1|batch*|idle|0/2/0/2|gpu:0|none\nn1|debug|idle|0/2/0/2|gpu:0|none\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 || strings.Join(nodes[0].Partitions, ",") != "batch,debug" {
		t.Fatalf("got %+v", nodes)
	}
}

func TestParseJobLine(t *testing.T) {
	mib := config.Bytes(1 << 20)
	for _, tc := range []struct {
		name, line string
		want       Job
	}{
		{"two cpus", "1|batch|PENDING|1|2|1|2|cpu=2,mem=200M,node=1,billing=2|N/A|N/A|N/A|1|(null)|2026-11-29T22:00:51||Resources",
			Job{CPUs: 2, Memory: 200 * mib, Requeue: true}},
		{"two nodes", "3|batch|PENDING|2|2|2|1|cpu=2,mem=200M,node=2,billing=2|N/A|N/A|N/A|1|(null)|2026-11-29T22:00:51||Priority",
			Job{Nodes: 2, CPUs: 1, Memory: 100 * mib, Requeue: true}},
		{"gpus per node", "8|gpu|PENDING|2|6|2|3|cpu=6,mem=600M,node=2,billing=6|gres:gpu:2|N/A|N/A|0|research|2026-11-29T22:00:51||Resources",
			Job{Nodes: 2, CPUs: 3, GPUs: 2, Memory: 300 * mib, Account: "research"}},
		{"gpus per job over two nodes", "9|gpu|PENDING|2|2|2|1|cpu=2,node=2|N/A|gres/gpu=3|N/A|1|(null)|2026-11-29T22:00:51||Resources",
			Job{Nodes: 2, CPUs: 1, GPUs: 2, Requeue: true}},
		{"gpus per task", "9|gpu|PENDING|2|3|3|1|cpu=3,mem=2000M,node=1,billing=3|N/A|N/A|gres:gpu:1|1|(null)|2026-11-29T21:56:12||Resources",
			Job{Nodes: 2, CPUs: 2, GPUs: 2, Memory: 2000 * mib, Requeue: true}},
		{"typed gpus, memory in G", "5|gpu,batch|PENDING|1|1|1|1|cpu=1,mem=1G,node=1|gres:gpu:h100:4|N/A|N/A|1|(null)|2026-11-29T21:56:12||Priority",
			Job{CPUs: 1, GPUs: 4, Memory: 1024 * mib, Requeue: true}},
		{"running", "11|gpu|RUNNING|1|1|1|1|cpu=1,mem=100M,node=1,billing=1|N/A|N/A|N/A|1|(null)|2026-11-29T22:00:54|gpu[01-02]|None",
			Job{State: "running", CPUs: 1, Memory: 100 * mib, Requeue: true, NodeList: []string{"gpu01", "gpu02"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseJobs(squeueOut(tc.line), time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			j := got[0]
			want := tc.want
			if want.State == "" {
				want.State = "pending"
			}
			want.Nodes = max(want.Nodes, 1)
			if j.State != want.State || j.Nodes != want.Nodes || j.CPUs != want.CPUs || j.GPUs != want.GPUs ||
				j.Memory != want.Memory || j.Requeue != want.Requeue || j.Account != want.Account ||
				strings.Join(j.NodeList, ",") != strings.Join(want.NodeList, ",") {
				t.Errorf("got %+v\nwant %+v", j, want)
			}
		})
	}
}

// TestParseErrors: a line that does not parse fails the whole read.
func TestParseErrors(t *testing.T) {
	good := "1|batch|PENDING|1|2|1|2|cpu=2,mem=200M,node=1|N/A|N/A|N/A|1|(null)|2026-11-29T22:00:51||Resources\n"
	for _, tc := range []struct {
		name, sinfo, squeue string
	}{
		{name: "sinfo: too few fields", sinfo: "n1|batch|idle|0/2/0/2\n"},
		{name: "sinfo: unknown base state", sinfo: "n1|batch|sleeping|0/2/0/2|gpu:0|none\n"},
		{name: "sinfo: bad cpu counts", sinfo: "n1|batch|idle|0/2/0|gpu:0|none\n"},
		{name: "sinfo: bad gres", sinfo: "n1|batch|idle|0/2/0/2|gpu:x|none\n"},
		{name: "sinfo: error text", sinfo: "slurm_load_node error: Unable to contact slurm controller\n"},
		{name: "squeue: a bad line after a good one", squeue: good + "2|batch|PENDING|one|2|1|2|cpu=2|N/A|N/A|N/A|1|(null)|2026-11-29T22:00:51||Resources\n"},
		{name: "squeue: bad time", squeue: strings.Replace(good, "2026-11-29T22:00:51", "yesterday", 1)},
		{name: "squeue: bad memory", squeue: strings.Replace(good, "mem=200M", "mem=lots", 1)},
		{name: "squeue: unknown memory unit", squeue: strings.Replace(good, "mem=200M", "mem=200X", 1)},
		{name: "squeue: memory NaN", squeue: strings.Replace(good, "mem=200M", "mem=NaN", 1)},
		{name: "squeue: memory too large", squeue: strings.Replace(good, "mem=200M", "mem=999999999999P", 1)},
		{name: "squeue: bad hostlist", squeue: strings.Replace(good, "||Resources", "|n[1-|Resources", 1)},
		{name: "squeue: bad requeue flag", squeue: strings.Replace(good, "N/A|1|", "N/A|yes|", 1)},
		{name: "squeue: zero nodes", squeue: strings.Replace(good, "PENDING|1|", "PENDING|0|", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.sinfo != "" {
				_, err = ParseNodes(sinfoOut(tc.sinfo))
			} else {
				_, err = ParseJobs(squeueOut(tc.squeue), time.UTC)
			}
			if !errors.Is(err, ErrUnexpected) {
				t.Fatalf("got %v, want ErrUnexpected", err)
			}
		})
	}
}

func TestStartable(t *testing.T) {
	for reason, want := range map[string]bool{
		"Resources": true, "Priority": true, "None": true,
		"ReqNodeNotAvail, UnavailableNodes:node[1-2]": true,
		"JobHeldUser": false, "JobHeldAdmin": false, "Dependency": false, "BeginTime": false,
		"QOSMaxJobsPerUserLimit": false, "AssocGrpCpuLimit": false, "PartitionDown": false,
		"BadConstraints": false, "Licenses": false,
	} {
		if got := Startable(reason); got != want {
			t.Errorf("Startable(%q) = %v, want %v", reason, got, want)
		}
	}
}

// FuzzParseNodes: any input parses or fails with ErrUnexpected, never panics; what parses
// reads back consistently.
func FuzzParseNodes(f *testing.F) {
	for _, name := range fixtures(f) {
		f.Add(readFixture(f, name+".sinfo"))
	}
	f.Add(sinfoOut("g1|gpu|mixed+drain|8/88/0/96|gpu:h100:3(IDX:0-1,4),nic:1|rota: x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		nodes, err := ParseNodes(b)
		if err != nil {
			if !errors.Is(err, ErrUnexpected) {
				t.Fatalf("error %v is not ErrUnexpected", err)
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
		}
	})
}

// FuzzParseJobs: any input parses or fails with ErrUnexpected, never panics.
func FuzzParseJobs(f *testing.F) {
	for _, name := range fixtures(f) {
		f.Add(readFixture(f, name+".squeue"))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		queue, err := ParseJobs(b, time.UTC)
		if err != nil {
			if !errors.Is(err, ErrUnexpected) {
				t.Fatalf("error %v is not ErrUnexpected", err)
			}
			return
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
	recorded := lines(readFixture(b, "pending.squeue"))
	var buf bytes.Buffer
	for i := range 100000 {
		buf.WriteString(recorded[i%len(recorded)] + "\n")
	}
	classify := (&config.Config{Classes: config.DefaultClasses()}).Classify
	b.ResetTimer()
	for range b.N {
		queue, err := ParseJobs(buf.Bytes(), time.UTC)
		if err != nil {
			b.Fatal(err)
		}
		if d := (View{Jobs: queue}).Demand(classify); len(d) == 0 {
			b.Fatal("no demand")
		}
	}
}

// TestWaitingMatchesDemand: on every recorded cluster, the watch's cheap read lists exactly the
// pending jobs the full read counts as demand (an array's tasks under the array's id).
func TestWaitingMatchesDemand(t *testing.T) {
	for _, name := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			got, err := ParseWaiting(readFixture(t, name+".waiting"))
			if err != nil {
				t.Fatal(err)
			}
			queue, err := ParseJobs(readFixture(t, name+".squeue"), time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, j := range queue {
				if j.Pending() && Startable(j.Reason) && !slices.Contains(want, j.ID) {
					want = append(want, j.ID)
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("waiting %q, demand's jobs %q", got, want)
			}
		})
	}
}

func TestParseWaiting(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      []string
		bad       bool
	}{
		{name: "nothing waits", out: ""},
		{name: "not yet looked at, resources, priority", out: "7|None\n8|Resources\n9|Priority\n", want: []string{"7", "8", "9"}},
		{name: "held, dependency, limits left out", out: "1|JobHeldAdmin\n2|Dependency\n3|QOSMaxJobsPerUserLimit\n4|BeginTime\n5|ReqNodeNotAvail, UnavailableNodes:n[1-2]\n",
			want: []string{"5"}},
		{name: "a '|' in the reason", out: "6|Resources|odd\n", want: []string{"6"}},
		{name: "no reason field", out: "6\n", bad: true},
		{name: "no id", out: "|Resources\n", bad: true},
		{name: "a space in the id", out: "6 7|Resources\n", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseWaiting([]byte(tc.out))
			if tc.bad {
				if !errors.Is(err, ErrUnexpected) {
					t.Fatalf("ParseWaiting: %q, %v; want ErrUnexpected", got, err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("ParseWaiting: %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// FuzzParseWaiting: any input parses or fails with ErrUnexpected, never panics; every id read
// is non-empty and one word.
func FuzzParseWaiting(f *testing.F) {
	for _, name := range fixtures(f) {
		f.Add(readFixture(f, name+".waiting"))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ids, err := ParseWaiting(b)
		if err != nil {
			if !errors.Is(err, ErrUnexpected) {
				t.Fatalf("error %v is not ErrUnexpected", err)
			}
			return
		}
		for _, id := range ids {
			if id == "" || strings.ContainsAny(id, " \t\n|") {
				t.Fatalf("id %q", id)
			}
		}
	})
}
