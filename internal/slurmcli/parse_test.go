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

// The places in squeueFormat of the fields the tests set apart from the legacy lines.
const (
	fieldReqNodes      = 19
	fieldPriority      = 22
	fieldCPUsPerTRES   = 24
	fieldOverSubscribe = 25
	fieldUserName      = 26
)

// squeueWith is squeue's output for the legacy lines of out (slurmclitest.Squeue), with the
// fields of squeueFormat's places in set set so on every line.
func squeueWith(out string, set map[int]string) []byte {
	var b strings.Builder
	for _, line := range strings.SplitAfter(string(slurmclitest.Squeue(out)), "\n") {
		body, nl := strings.CutSuffix(line, "\n")
		f := strings.Split(body, Sep)
		for i, v := range set {
			if i < len(f) {
				f[i] = v
			}
		}
		b.WriteString(strings.Join(f, Sep))
		if nl {
			b.WriteString("\n")
		}
	}
	return []byte(b.String())
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
		// Slurm 20.11 and earlier printed GRES with no kind (21.08 added "gres:", 23.02 "gres/").
		{"20.11: gpus per node", "12|gpu|PENDING|1|1|1|1|cpu=1,mem=1G,node=1|gpu:2|N/A|N/A|1|(null)|2026-11-29T21:56:12||Resources",
			Job{CPUs: 1, GPUs: 2, Memory: 1024 * mib, Requeue: true}},
		{"20.11: typed gpus per node", "13|gpu|PENDING|1|1|1|1|cpu=1,mem=1G,node=1|gpu:a100:2|N/A|N/A|1|(null)|2026-11-29T21:56:12||Resources",
			Job{CPUs: 1, GPUs: 2, Memory: 1024 * mib, Requeue: true}},
		{"20.11: gpus per job", "14|gpu|PENDING|2|2|2|1|cpu=2,node=2|N/A|gpu:4|N/A|1|(null)|2026-11-29T21:56:12||Resources",
			Job{Nodes: 2, CPUs: 1, GPUs: 2, Requeue: true}},
		{"20.11: other gres beside gpus", "15|gpu|PENDING|1|1|1|1|cpu=1,node=1|gpu:1,shard:2|N/A|N/A|1|(null)|2026-11-29T21:56:12||Resources",
			Job{CPUs: 1, GPUs: 1, Requeue: true}},
		{"23.02: cpus and gpus per task", "16|gpu|PENDING|1|8|2|1|cpu=8,node=1|N/A|N/A|cpu=4,gres/gpu=1|1|(null)|2026-11-29T21:56:12||Resources",
			Job{CPUs: 8, GPUs: 2, Requeue: true}},
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

// TestParseCPUsPerGPUAndExclusive: a pending job's NumCPUs and MinCpus count one CPU however
// many it asks per GPU (sbatch --gpus=2 --cpus-per-gpu=2 on Slurm 22.05 prints 1 and 1, its
// cpus-per-tres gres:gpu:2): its CPUs are its CPUs per GPU times the GPUs it asks of each
// server. OverSubscribe NO (--exclusive) or TOPO is a job that takes its servers whole.
func TestParseCPUsPerGPUAndExclusive(t *testing.T) {
	const tail = "|1|(null)|2026-11-29T22:00:51||Resources"
	for _, tc := range []struct {
		name, line, perGPU, share string
		cpus, gpus                int
		exclusive                 bool
	}{
		{"gpus per job", "1|gpu|PENDING|1|1|1|1|cpu=1,mem=100M,node=1|N/A|gres:gpu:2|N/A" + tail, "gres:gpu:2", "OK", 4, 2, false},
		{"23.02: gpus per node", "2|gpu|PENDING|1|1|1|1|cpu=1,node=1|gres/gpu:2|N/A|N/A" + tail, "gres/gpu:8", "OK", 16, 2, false},
		{"typed gpus per node", "3|gpu|PENDING|1|1|1|1|cpu=1,node=1|gres:gpu:a100:1|N/A|N/A" + tail, "gres:gpu:3", "OK", 3, 1, false},
		{"gpus per job over two nodes", "4|gpu|PENDING|2|2|2|1|cpu=2,node=2|N/A|gres:gpu:2|N/A" + tail, "gres:gpu:2", "OK", 2, 1, false},
		{"gpus per task", "5|gpu|PENDING|1|2|2|2|cpu=2,node=1|N/A|N/A|gres:gpu:1" + tail, "gres:gpu:2", "OK", 4, 2, false},
		{"more cpus per task than per gpu", "6|gpu|PENDING|1|8|1|8|cpu=8,node=1|gres:gpu:1|N/A|N/A" + tail, "gres:gpu:2", "OK", 8, 1, false},
		{"no gpus", "7|batch|PENDING|1|2|1|2|cpu=2,node=1|N/A|N/A|N/A" + tail, "N/A", "OK", 2, 0, false},
		{"exclusive", "8|batch|PENDING|1|1|1|1|cpu=1,node=1|N/A|N/A|N/A" + tail, "N/A", "NO", 1, 0, true},
		{"exclusive over a topology segment", "9|batch|PENDING|2|2|2|1|cpu=2,node=2|N/A|N/A|N/A" + tail, "N/A", "TOPO", 1, 0, true},
		{"exclusive to its user", "10|batch|PENDING|1|1|1|1|cpu=1,node=1|N/A|N/A|N/A" + tail, "N/A", "USER", 1, 0, false},
		{"exclusive to its mcs group", "11|batch|PENDING|1|1|1|1|cpu=1,node=1|N/A|N/A|N/A" + tail, "N/A", "MCS", 1, 0, false},
		{"oversubscribed", "12|batch|PENDING|1|1|1|1|cpu=1,node=1|N/A|N/A|N/A" + tail, "N/A", "YES", 1, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseJobs(squeueWith(tc.line, map[int]string{fieldCPUsPerTRES: tc.perGPU, fieldOverSubscribe: tc.share}), time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			if j := got[0]; j.CPUs != tc.cpus || j.GPUs != tc.gpus || j.Exclusive != tc.exclusive {
				t.Errorf("cpus %d, gpus %d, exclusive %v; want %d, %d, %v", j.CPUs, j.GPUs, j.Exclusive, tc.cpus, tc.gpus, tc.exclusive)
			}
		})
	}
}

// TestParseUserExclusive: OverSubscribe USER (sbatch --exclusive=user) is a job that shares
// its servers with its user's jobs alone, and UserName is its user, as Slurm 22.05 prints it
// for pending and running jobs (the lab's root and nobody); it takes no server whole.
func TestParseUserExclusive(t *testing.T) {
	const line = "1|batch|PENDING|1|1|1|1|cpu=1,node=1|N/A|N/A|N/A|1|(null)|2026-11-29T22:00:51||Resources\n" +
		"2|batch|RUNNING|1|1|1|1|cpu=1,node=1|N/A|N/A|N/A|1|(null)|2026-11-29T22:00:51|node1|None\n"
	for _, tc := range []struct {
		share, user string
		only        bool
	}{
		{"USER", "nobody", true},
		{"OK", "alice", false},
		{"MCS", "alice", false}, // --exclusive=mcs is not read
		{"NO", "root", false},
	} {
		got, err := ParseJobs(squeueWith(line, map[int]string{fieldOverSubscribe: tc.share, fieldUserName: tc.user}), time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range got {
			if j.User != tc.user || j.UserExclusive != tc.only || j.Exclusive != (tc.share == "NO") {
				t.Errorf("%s job of %s (%s): user %q, exclusive to it %v, whole %v", j.State, tc.user, tc.share, j.User, j.UserExclusive, j.Exclusive)
			}
		}
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
		{name: "squeue: a tab in the job id", squeue: strings.Replace(good, "1|batch", "1\t2|batch", 1)},
		{name: "squeue: bad time", squeue: strings.Replace(good, "2026-11-29T22:00:51", "yesterday", 1)},
		{name: "squeue: bad memory", squeue: strings.Replace(good, "mem=200M", "mem=lots", 1)},
		{name: "squeue: unknown memory unit", squeue: strings.Replace(good, "mem=200M", "mem=200X", 1)},
		{name: "squeue: memory NaN", squeue: strings.Replace(good, "mem=200M", "mem=NaN", 1)},
		{name: "squeue: memory too large", squeue: strings.Replace(good, "mem=200M", "mem=999999999999P", 1)},
		{name: "squeue: bad hostlist", squeue: strings.Replace(good, "||Resources", "|n[1-|Resources", 1)},
		{name: "squeue: bad requeue flag", squeue: strings.Replace(good, "N/A|1|", "N/A|yes|", 1)},
		// the account becomes the department label of rota's books: not UTF-8, /metrics fails whole
		{name: "squeue: an account that is not text", squeue: strings.Replace(good, "|1|(null)|", "|1|ph\xffys|", 1)},
		{name: "squeue: zero nodes", squeue: strings.Replace(good, "PENDING|1|", "PENDING|0|", 1)},
		{name: "squeue: a gpu count that does not read", squeue: strings.Replace(good, "|N/A|N/A|N/A|", "|gpu:two|N/A|N/A|", 1)},
		{name: "squeue: a gres with no kind that does not read", squeue: strings.Replace(good, "|N/A|N/A|N/A|", "|N/A|gres/gpu:a:b:2|N/A|", 1)},
		{name: "squeue: a bare word", squeue: strings.Replace(good, "|N/A|N/A|N/A|", "|N/A|N/A|gpus|", 1)},
		{name: "squeue: bad priority", squeue: string(squeueWith(good, map[int]string{fieldPriority: "high"}))},
		{name: "squeue: cpus per gpu that do not read", squeue: string(squeueWith(good, map[int]string{fieldCPUsPerTRES: "gres:gpu:many"}))},
		{name: "squeue: an OverSubscribe Slurm never prints", squeue: string(squeueWith(good, map[int]string{fieldOverSubscribe: "MAYBE"}))},
		{name: "squeue: no OverSubscribe", squeue: string(squeueWith(good, map[int]string{fieldOverSubscribe: "N/A"}))},
		{name: "squeue: no user", squeue: string(squeueWith(good, map[int]string{fieldUserName: "(null)"}))},
		{name: "squeue: a user with a space", squeue: string(squeueWith(good, map[int]string{fieldUserName: "al ice"}))},
		{name: "squeue: a user that is not text", squeue: string(squeueWith(good, map[int]string{fieldUserName: "al\xffice"}))},
		{name: "sinfo: a gres annotation not closed", sinfo: "n1|batch|idle|0/2/0/2|gpu:(null):0(IDX:N/A|none\n"},
		{name: "sinfo: a null type with no count", sinfo: "n1|batch|idle|0/2/0/2|gpu:(null)|none\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			switch {
			case tc.sinfo != "":
				_, err = ParseNodes(slurmclitest.Sinfo(tc.sinfo))
			case strings.Contains(tc.squeue, Sep):
				_, err = ParseJobs([]byte(tc.squeue), time.UTC)
			default:
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
		// squeue prints the description, not JobHeld*, for a job requeued held
		// (scontrol requeuehold; a failed prolog).
		"job requeued in held state": false, "launch failed requeued held": false,
		"JobHoldMaxRequeue": false, "AccountingPolicy": false, "MaxMemPerLimit": false, "Constraints": false,
		"MaxCpuPerAccount": false, "MaxJobsPerAccount": false, "MaxNodePerAccount": false,
		"MaxGRESPerAccount": false, "MaxMemoryPerAccount": false, "MaxSubmitJobsPerAccount": false,
		"MaxBillingPerAccount": false,
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
		{name: "not yet looked at, resources, priority", out: "7|9|None\n8|9|Resources\n9|4294901759|Priority\n", want: []string{"7", "8", "9"}},
		{name: "held, dependency, limits left out", out: "1|0|JobHeldAdmin\n2|9|Dependency\n3|9|QOSMaxJobsPerUserLimit\n4|9|BeginTime\n5|9|ReqNodeNotAvail, UnavailableNodes:n[1-2]\n",
			want: []string{"5"}},
		{name: "requeued held, by its description", out: "1|0|job requeued in held state\n2|0|launch failed requeued held\n3|9|MaxCpuPerAccount\n",
			want: nil},
		{name: "held whatever the reason says", out: "1|0|Resources\n2|1|Resources\n", want: []string{"2"}},
		{name: "a '|' in the reason", out: "6|9|Resources|odd\n", want: []string{"6"}},
		{name: "no reason field", out: "6|9\n", bad: true},
		{name: "no priority", out: "6||Resources\n", bad: true},
		{name: "a priority that is no number", out: "6|high|Resources\n", bad: true},
		{name: "no id", out: "|9|Resources\n", bad: true},
		{name: "a space in the id", out: "6 7|9|Resources\n", bad: true},
		{name: "a tab in the id", out: "6\t7|9|Resources\n", bad: true},
		{name: "an array's pending tasks", out: "6_[1-3%2]|9|Resources\n", want: []string{"6_[1-3%2]"}},
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
// passes CheckJobID.
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
			if CheckJobID(id) != nil {
				t.Fatalf("id %q", id)
			}
		}
	})
}

// TestGresGPUs: sinfo's Gres and GresUsed, typed, untyped, and untyped as Slurm 21.08.5 and
// later print it ("gpu:(null):2(IDX:0-1)").
func TestGresGPUs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		typ  string
		fail bool
	}{
		{in: "gpu:2", n: 2},
		{in: "gpu:a100:1(IDX:0),nic:1", n: 1, typ: "a100"},
		{in: "gpu:h100:3(IDX:0-1,4)", n: 3, typ: "h100"},
		{in: "gpu:(null):0(IDX:N/A)", n: 0},
		{in: "gpu:(null):2(IDX:0-1)", n: 2},
		{in: "gpu:(null):8(S:0-1)", n: 8},
		{in: "gpu:a100:4(S:0-1),gpu:v100:2(S:1)", n: 6, typ: "a100"},
		{in: "gpu:nvidia_a100_1g.5gb:0(IDX:N/A)", n: 0, typ: "nvidia_a100_1g.5gb"},
		{in: "gpu:(null)", fail: true},
		{in: "gpu:(x):2", fail: true},
		{in: "gpu:2(IDX:0", fail: true},
	} {
		n, typ, err := gresGPUs(tc.in)
		if (err != nil) != tc.fail || !tc.fail && (n != tc.n || typ != tc.typ) {
			t.Errorf("gresGPUs(%q) = %d, %q, %v; want %d, %q, fail %v", tc.in, n, typ, err, tc.n, tc.typ, tc.fail)
		}
	}
}

// TestHeldJobIsNoDemand: a job at priority 0 is held whatever its reason says.
func TestHeldJobIsNoDemand(t *testing.T) {
	line := "1|batch|PENDING|1|1|1|1|cpu=1,node=1|N/A|N/A|N/A|1|(null)|2026-11-29T22:00:51||Resources\n"
	for prio, want := range map[string]bool{"1": true, "0": false} {
		queue, err := ParseJobs(squeueWith(line, map[int]string{fieldPriority: prio}), time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		if got := queue[0].WantsServers(); got != want {
			t.Errorf("priority %s: wants servers %v, want %v", prio, got, want)
		}
	}
}

// FuzzParseExcludes: any input parses or fails with ErrUnexpected, never panics; every id read
// passes CheckJobID, with a reservation or at least one name and at most MaxHosts, none empty,
// and MaxReadHosts in all (a hostlist repeated on several lines shares its names, counted once);
// every reservation name passes checkReservationName.
func FuzzParseExcludes(f *testing.F) {
	for _, s := range []string{"", "1" + Sep + "(null)" + Sep + "(null)\n", "2" + Sep + "" + Sep + "r1\n3" + Sep + "node1" + Sep + "r1,r2\n", "7_2" + Sep + "n[1-3],gpu01" + Sep + "(null)\n8" + Sep + "" + Sep + "(null)\n", "9" + Sep + "n[1-99999999]" + Sep + "(null)\n", "1 2" + Sep + "n1" + Sep + "(null)\n", "1\t2" + Sep + "n1" + Sep + "(null)\n", "3_[1-5%2]" + Sep + "n1" + Sep + "(null)\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseExcludes(b)
		if err != nil {
			if !errors.Is(err, ErrUnexpected) {
				t.Fatalf("error %v is not ErrUnexpected", err)
			}
			return
		}
		total, held := 0, map[*string]bool{}
		for id, a := range m {
			nodes := a.Exclude
			if CheckJobID(id) != nil || len(nodes)+len(a.Reservations) == 0 || len(nodes) > MaxHosts || slices.Contains(nodes, "") {
				t.Fatalf("id %q: %d nodes, reservations %q", id, len(nodes), a.Reservations)
			}
			for _, r := range a.Reservations {
				if checkReservationName(r) != nil {
					t.Fatalf("id %q: reservation %q", id, r)
				}
			}
			if len(nodes) > 0 && !held[&nodes[0]] {
				held[&nodes[0]] = true
				total += len(nodes)
			}
		}
		if total > MaxReadHosts {
			t.Fatalf("%d nodes in all", total)
		}
	})
}

// TestReadHostsInAll: each hostlist is bounded by MaxHosts, and a whole read's hostlists (a
// queue's node lists and requested nodes, its excluded nodes) by a budget: one short line per
// job, each with a large hostlist, must not multiply into millions of names.
func TestReadHostsInAll(t *testing.T) {
	running := func(id, nodes string) string {
		return id + "|gpu|RUNNING|1|1|1|1|cpu=1,node=1|N/A|N/A|N/A|1|(null)|2026-11-29T22:00:51|" + nodes + "|None\n"
	}
	twoJobs := string(slurmclitest.Squeue(running("1", "n[1-6]") + running("2", "n[7-10]")))
	// job 3 names no node it runs on, but one it asks for by name (ReqNodes)
	asking := string(squeueWith(running("3", ""), map[int]string{fieldReqNodes: "n11"}))
	excludes := "1" + Sep + "n[1-6]" + Sep + "(null)\n2" + Sep + "n[7-10]" + Sep + "(null)\n"
	for _, tc := range []struct {
		name, out string
		excludes  bool
		wantErr   bool
	}{
		{name: "squeue: within the budget", out: twoJobs},
		{name: "squeue: one name past it", out: twoJobs + string(slurmclitest.Squeue(running("3", "n11"))), wantErr: true},
		{name: "squeue: a requested name past it", out: twoJobs + asking, wantErr: true},
		{name: "exclusions: within the budget", out: excludes, excludes: true},
		{name: "exclusions: one name past it", out: excludes + "3" + Sep + "n11" + Sep + "(null)\n", excludes: true, wantErr: true},
		// an array's tasks print their job's hostlists on every line: a repeat costs nothing more
		{name: "squeue: hostlists repeated", out: twoJobs + string(slurmclitest.Squeue(running("3", "n[7-10]")+running("4", "n[1-6]")))},
		{name: "exclusions: hostlists repeated", out: excludes + "3" + Sep + "n[1-6]" + Sep + "(null)\n4" + Sep + "n[7-10]" + Sep + "(null)\n", excludes: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.excludes {
				_, err = parseExcludes([]byte(tc.out), newHostBudget(10))
			} else {
				_, err = parseJobs([]byte(tc.out), time.UTC, newHostBudget(10))
			}
			switch {
			case !tc.wantErr && err != nil:
				t.Fatal(err)
			case tc.wantErr && (!errors.Is(err, ErrUnexpected) || !strings.Contains(err.Error(), "more than 10 nodes in all")):
				t.Fatalf("got %v, want ErrUnexpected saying more than 10 nodes in all", err)
			}
		})
	}
	// A repeated hostlist's names are shared, and an append to one line's list copies them.
	ex, err := ParseExcludes([]byte("1" + Sep + "n[1-3]" + Sep + "(null)\n2" + Sep + "n[1-3]" + Sep + "(null)\n"))
	if err != nil {
		t.Fatal(err)
	}
	ex1, ex2 := ex["1"].Exclude, ex["2"].Exclude
	if one := append(ex1, "x"); &ex1[0] != &ex2[0] || &one[0] == &ex2[0] || !slices.Equal(ex2, []string{"n1", "n2", "n3"}) {
		t.Fatalf("repeated hostlist: %q and %q, shared %v", ex1, ex2, &ex1[0] == &ex2[0])
	}
	// The budget of ParseJobs and ParseExcludes is not one hostlist's: a queue may name more.
	big := string(slurmclitest.Squeue(running("1", "n[1-65536]") + running("2", "m[1-65536]")))
	if _, err := ParseJobs([]byte(big), time.UTC); err != nil {
		t.Fatalf("two jobs of MaxHosts nodes each: %v", err)
	}
	if _, err := ParseExcludes([]byte("1" + Sep + "n[1-65536]" + Sep + "(null)\n2" + Sep + "m[1-65536]" + Sep + "(null)\n")); err != nil {
		t.Fatalf("two jobs excluding MaxHosts nodes each: %v", err)
	}
}

// TestParseExcludesJobIDs: the ids squeue prints (%i: a job, an array task, an array's pending
// tasks, a heterogeneous job's component) read; an id with a tab or anything else Slurm never
// prints in one fails the read, naming it.
func TestParseExcludesJobIDs(t *testing.T) {
	for _, id := range []string{"1234", "1234_5", "1234_[1-5,7%2]", "1234_[1,3,5,7,9,11,13,15,17,1", "1234+0"} {
		m, err := ParseExcludes([]byte(id + Sep + "n1" + Sep + "(null)\n"))
		if err != nil || !slices.Equal(m[id].Exclude, []string{"n1"}) {
			t.Errorf("%q: %v, %v", id, m, err)
		}
	}
	for _, id := range []string{"1\t2", "12\t", "1 2", "1\v2", "1\r", "job1", "_5", "1234_5\x00"} {
		_, err := ParseExcludes([]byte(id + Sep + "n1" + Sep + "(null)\n"))
		if !errors.Is(err, ErrUnexpected) || !strings.Contains(err.Error(), "job id") {
			t.Errorf("%q: got %v, want ErrUnexpected naming the job id", id, err)
		}
	}
}

// TestParseExcludesReservations: the reservations a job names (%v: one, a list, none as
// "(null)" or empty), read beside its exclusions; a job with neither is left out; a line of
// another number of fields or a reservation name Slurm never prints fails the read.
func TestParseExcludesReservations(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      map[string]Apart
		bad       bool
	}{
		// as squeue 22.05 printed them here: job 2 waiting in r1, job 3 naming r1 and r2
		{name: "recorded", out: "2" + Sep + Sep + "r1\n3" + Sep + "node1" + Sep + "r1,r2\n1" + Sep + Sep + "r1\n",
			want: map[string]Apart{"1": {Reservations: []string{"r1"}}, "2": {Reservations: []string{"r1"}},
				"3": {Exclude: []string{"node1"}, Reservations: []string{"r1", "r2"}}}},
		{name: "none", out: "4" + Sep + Sep + "(null)\n5" + Sep + "n1" + Sep + "\n",
			want: map[string]Apart{"5": {Exclude: []string{"n1"}}}},
		{name: "exclusions alone, as before", out: "6" + Sep + "n1\n", bad: true},
		{name: "a space in a name", out: "7" + Sep + Sep + "r 1\n", bad: true},
		{name: "an empty name in the list", out: "7" + Sep + Sep + "r1,,r2\n", bad: true},
		{name: "a tab in a name", out: "7" + Sep + Sep + "r\t1\n", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseExcludes([]byte(tc.out))
			if tc.bad {
				if !errors.Is(err, ErrUnexpected) {
					t.Fatalf("ParseExcludes: %v, %v; want ErrUnexpected", got, err)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("ParseExcludes: %+v, %v; want %+v", got, err, tc.want)
			}
			for id, a := range tc.want {
				if g := got[id]; !slices.Equal(g.Exclude, a.Exclude) || !slices.Equal(g.Reservations, a.Reservations) {
					t.Errorf("job %s: %+v, want %+v", id, g, a)
				}
			}
		})
	}
}

// TestParseReservations: scontrol show reservation -o as Slurm 22.05 printed it here
// (testdata/show-reservation.txt: r1 on three nodes, r2 FLEX), none, and lines that fail.
func TestParseReservations(t *testing.T) {
	got, err := ParseReservations(slurmclitest.ReadRecorded(t, "show-reservation.txt"))
	if err != nil {
		t.Fatal(err)
	}
	r1, r2 := got["r1"], got["r2"]
	if len(got) != 2 || !slices.Equal(r1.Nodes, []string{"gpu01", "gpu02", "node2"}) || !r1.Bounds() ||
		!slices.Equal(r2.Nodes, []string{"node1"}) || !slices.Equal(r2.Flags, []string{"FLEX", "SPEC_NODES"}) || r2.Bounds() {
		t.Fatalf("recorded: %+v", got)
	}
	for _, tc := range []struct {
		name, out string
		want      map[string]Reservation
		bad       bool
	}{
		{name: "none", out: "No reservations in the system\n", want: map[string]Reservation{}},
		{name: "nothing", out: "", want: map[string]Reservation{}},
		{name: "no nodes: licenses only", out: "ReservationName=lic Nodes=(null) Flags=ANY_NODES Licenses=matlab:1 State=ACTIVE\n",
			want: map[string]Reservation{"lic": {Name: "lic", Flags: []string{"ANY_NODES"}}}},
		{name: "a comment with spaces and a Nodes= of its own", out: "ReservationName=c Nodes=n1 Flags=MAINT Comment=do not Nodes=n2 touch\n",
			want: map[string]Reservation{"c": {Name: "c", Nodes: []string{"n1"}, Flags: []string{"MAINT"}}}},
		{name: "no name", out: "StartTime=now Nodes=n1\n", bad: true},
		{name: "a name twice", out: "ReservationName=a Nodes=n1\nReservationName=a Nodes=n2\n", bad: true},
		{name: "a node list that does not expand", out: "ReservationName=a Nodes=n[1-\n", bad: true},
		{name: "a node list past the budget", out: "ReservationName=a Nodes=n[1-99999999]\n", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseReservations([]byte(tc.out))
			if tc.bad {
				if !errors.Is(err, ErrUnexpected) {
					t.Fatalf("ParseReservations: %+v, %v; want ErrUnexpected", got, err)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("ParseReservations: %+v, %v; want %+v", got, err, tc.want)
			}
			for name, r := range tc.want {
				if g := got[name]; g.Name != r.Name || !slices.Equal(g.Nodes, r.Nodes) || !slices.Equal(g.Flags, r.Flags) {
					t.Errorf("%s: %+v, want %+v", name, g, r)
				}
			}
		})
	}
}

// FuzzParseReservations: any input parses or fails with ErrUnexpected, never panics; every
// reservation read has a name that passes checkReservationName, under that name, and at most
// MaxReadHosts nodes in all.
func FuzzParseReservations(f *testing.F) {
	f.Add(slurmclitest.ReadRecorded(f, "show-reservation.txt"))
	f.Add([]byte("No reservations in the system\n"))
	f.Add([]byte("ReservationName=c Nodes=n[1-3] Flags=MAINT Comment=a b\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseReservations(b)
		if err != nil {
			if !errors.Is(err, ErrUnexpected) {
				t.Fatalf("error %v is not ErrUnexpected", err)
			}
			return
		}
		total, held := 0, map[*string]bool{}
		for name, r := range m {
			if r.Name != name || checkReservationName(name) != nil || slices.Contains(r.Nodes, "") {
				t.Fatalf("reservation %q: %+v", name, r)
			}
			if len(r.Nodes) > 0 && !held[&r.Nodes[0]] {
				held[&r.Nodes[0]] = true
				total += len(r.Nodes)
			}
		}
		if total > MaxReadHosts {
			t.Fatalf("%d nodes in all", total)
		}
	})
}
