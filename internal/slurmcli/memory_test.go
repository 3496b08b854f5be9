package slurmcli

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/size"
	"github.com/rotahq/rota/internal/slurmcli/slurmclitest"
)

const mib = size.Bytes(1 << 20)

// TestParseMemoryPerCPU: scontrol show job -o as Slurm 22.05 printed it here
// (testdata/show-job.txt: job 11 ended, given 1200M for --gpus=2 --cpus-per-gpu=2
// --mem-per-cpu=300M; pending, 22 the same, 23 --mem-per-gpu=500M, 24 --mem=500M, 25 the
// cluster's DefMemPerCPU=100, 26 an array whose name imitates the memory words), none, and
// lines that fail.
func TestParseMemoryPerCPU(t *testing.T) {
	got, err := ParseMemoryPerCPU(slurmclitest.ReadRecorded(t, "show-job.txt"))
	if want := map[string]size.Bytes{"11": 300 * mib, "22": 300 * mib, "25": 100 * mib}; err != nil || !maps.Equal(got, want) {
		t.Fatalf("recorded: %v, %v; want %v", got, err, want)
	}
	const triple = " MinCPUsNode=1 MinMemoryCPU=2G MinTmpDiskNode=0"
	for _, tc := range []struct {
		name, out string
		want      map[string]size.Bytes
		bad       bool
	}{
		{name: "none", out: "No jobs in the system\n", want: map[string]size.Bytes{}},
		{name: "nothing", out: "", want: map[string]size.Bytes{}},
		{name: "an array's task", out: "JobId=7 ArrayJobId=5 ArrayTaskId=2" + triple + "\n", want: map[string]size.Bytes{"7": 2 << 30}},
		{name: "memory per gpu set empty", out: "JobId=7" + triple + " MemPerTres=\n", want: map[string]size.Bytes{"7": 2 << 30}},
		{name: "a path that imitates the words", out: "JobId=7" + triple + " StdOut=/a" + triple + "\n", want: map[string]size.Bytes{}},
		{name: "no JobId", out: "JobName=x" + triple + "\n", bad: true},
		{name: "a job id none of Slurm's", out: "JobId=x7" + triple + "\n", bad: true},
		{name: "a job twice", out: "JobId=7" + triple + "\nJobId=7" + triple + "\n", bad: true},
		{name: "no memory words", out: "JobId=7 JobName=x MinCPUsNode=1\n", bad: true},
		{name: "memory of another kind", out: "JobId=7 MinCPUsNode=1 MinMemoryGPU=1G MinTmpDiskNode=0\n", bad: true},
		{name: "memory that does not read", out: "JobId=7 MinCPUsNode=1 MinMemoryCPU=lots MinTmpDiskNode=0\n", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseMemoryPerCPU([]byte(tc.out))
			if tc.bad {
				if !errors.Is(err, ErrUnexpected) {
					t.Fatalf("ParseMemoryPerCPU: %v, %v; want ErrUnexpected", got, err)
				}
				return
			}
			if err != nil || !maps.Equal(got, tc.want) {
				t.Fatalf("ParseMemoryPerCPU: %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// TestWithMemoryPerCPU: a pending job that asks CPUs per GPU and memory per CPU needs its
// memory per CPU times its CPUs on each server, which its pending TRES counts as one (the
// queue of testdata/show-job.txt, as squeue printed it). scontrol is asked only when such a
// job waits for servers.
func TestWithMemoryPerCPU(t *testing.T) {
	job := func(id, nodes, tres, perJob string) string {
		return id + "|gpu|PENDING|" + nodes + "|" + nodes + "|1|1|" + tres + "|N/A|" + perJob + "|N/A|1|(null)|2026-12-05T02:00:54||Resources\n"
	}
	pending := job("22", "1", "cpu=1,mem=300M,node=1,billing=1", "gres:gpu:2") +
		job("23", "1", "cpu=1,mem=1000M,node=1,billing=1", "gres:gpu:2") +
		job("24", "1", "cpu=1,mem=500M,node=1,billing=1", "gres:gpu:1") +
		job("25", "1", "cpu=1,mem=100M,node=1,billing=1", "gres:gpu:1") +
		job("26", "1", "cpu=1,mem=150M,node=1,billing=1", "gres:gpu:1")
	for _, tc := range []struct {
		name, squeue string
		set          map[int]string
		want         []size.Bytes // each job's memory per server
		asked        bool         // whether scontrol was run
	}{
		{name: "cpus per gpu", squeue: pending, set: map[int]string{fieldCPUsPerTRES: "gres:gpu:2"},
			want: []size.Bytes{1200 * mib, 1000 * mib, 500 * mib, 200 * mib, 150 * mib}, asked: true},
		{name: "no cpus per gpu", squeue: pending, set: map[int]string{},
			want: []size.Bytes{300 * mib, 1000 * mib, 500 * mib, 100 * mib, 150 * mib}},
		{name: "held", squeue: pending, set: map[int]string{fieldCPUsPerTRES: "gres:gpu:2", fieldPriority: "0"},
			want: []size.Bytes{300 * mib, 1000 * mib, 500 * mib, 100 * mib, 150 * mib}},
		// two servers, two gpus and two cpus on each
		{name: "over two servers", squeue: job("22", "2", "cpu=2,mem=600M,node=2,billing=2", "gres:gpu:4"),
			set: map[int]string{fieldCPUsPerTRES: "gres:gpu:1"}, want: []size.Bytes{600 * mib}, asked: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			queue, err := ParseJobs(squeueWith(tc.squeue, tc.set), time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			asked := false
			c := Client{Run: func(_ context.Context, name string, args ...string) ([]byte, error) {
				if name != "scontrol" || strings.Join(args, " ") != "show job -o" {
					t.Fatalf("ran %s %q", name, args)
				}
				asked = true
				return slurmclitest.ReadRecorded(t, "show-job.txt"), nil
			}}
			if err := c.WithMemoryPerCPU(context.Background(), queue); err != nil {
				t.Fatal(err)
			}
			for i, j := range queue {
				if j.Memory != tc.want[i] {
					t.Errorf("job %s: memory %d MiB, want %d MiB", j.ID, j.Memory/mib, tc.want[i]/mib)
				}
			}
			if asked != tc.asked {
				t.Errorf("scontrol run: %v, want %v", asked, tc.asked)
			}
		})
	}
}

// TestWithMemoryPerCPUFails: a failed or unreadable scontrol fails the read and changes no job.
func TestWithMemoryPerCPUFails(t *testing.T) {
	line := "22|gpu|PENDING|1|1|1|1|cpu=1,mem=300M,node=1|N/A|gres:gpu:2|N/A|1|(null)|2026-12-05T02:00:54||Resources\n"
	for name, run := range map[string]Runner{
		"failed": func(context.Context, string, ...string) ([]byte, error) {
			return nil, errors.New("slurm_load_jobs error")
		},
		"unreadable": func(context.Context, string, ...string) ([]byte, error) {
			return []byte("JobId=22 MinCPUsNode=1\n"), nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			queue, err := ParseJobs(squeueWith(line, map[int]string{fieldCPUsPerTRES: "gres:gpu:2"}), time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			if err := (Client{Run: run}).WithMemoryPerCPU(context.Background(), queue); err == nil || queue[0].Memory != 300*mib {
				t.Fatalf("WithMemoryPerCPU: %v, memory %d; want an error and 300 MiB", err, queue[0].Memory/mib)
			}
		})
	}
}

// FuzzParseMemoryPerCPU: any input parses or fails with ErrUnexpected, never panics; every job
// read has an id that passes CheckJobID.
func FuzzParseMemoryPerCPU(f *testing.F) {
	f.Add(slurmclitest.ReadRecorded(f, "show-job.txt"))
	f.Add([]byte("No jobs in the system\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMemoryPerCPU(b)
		if err != nil {
			if !errors.Is(err, ErrUnexpected) {
				t.Fatalf("error %v is not ErrUnexpected", err)
			}
			return
		}
		for id := range m {
			if CheckJobID(id) != nil {
				t.Fatalf("job id %q", id)
			}
		}
	})
}
