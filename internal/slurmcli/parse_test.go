package slurmcli

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/size"
	"github.com/rotahq/rota/internal/slurmcli/slurmclitest"
)

// TestSepIsSlurmclitests: the test lines are written with the separator the parsers read.
func TestSepIsSlurmclitests(t *testing.T) {
	if slurmclitest.Sep != Sep {
		t.Fatalf("slurmclitest.Sep %q, slurmcli.Sep %q", slurmclitest.Sep, Sep)
	}
}

func TestParseNodesMergesPartitions(t *testing.T) {
	nodes, err := ParseNodes(slurmclitest.Sinfo("n1|batch*|idle|0/2/0/2|gpu:0|none\nn1|debug|idle|0/2/0/2|gpu:0|none\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 || strings.Join(nodes[0].Partitions, ",") != "batch,debug" {
		t.Fatalf("got %+v", nodes)
	}
}

func TestParseJobLine(t *testing.T) {
	mib := size.Bytes(1 << 20)
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
			got, err := ParseJobs(slurmclitest.Squeue(tc.line), time.UTC)
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
				_, err = ParseNodes(slurmclitest.Sinfo(tc.sinfo))
			} else {
				_, err = ParseJobs(slurmclitest.Squeue(tc.squeue), time.UTC)
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

// TestWaitingMatchesDemand: on every recorded cluster, the watch's cheap read lists exactly the
// pending jobs the full read counts as demand (an array's tasks under the array's id).
func TestWaitingMatchesDemand(t *testing.T) {
	for _, name := range slurmclitest.Recorded(t) {
		t.Run(name, func(t *testing.T) {
			got, err := ParseWaiting(slurmclitest.ReadRecorded(t, name+".waiting"))
			if err != nil {
				t.Fatal(err)
			}
			queue, err := ParseJobs(slurmclitest.ReadRecorded(t, name+".squeue"), time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, j := range queue {
				if j.WantsServers() && !slices.Contains(want, j.ID) {
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

// FuzzParseWaiting: any input parses or fails with ErrUnexpected, never panics; every id read
// is non-empty and one word.
func FuzzParseWaiting(f *testing.F) {
	for _, name := range slurmclitest.Recorded(f) {
		f.Add(slurmclitest.ReadRecorded(f, name+".waiting"))
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
