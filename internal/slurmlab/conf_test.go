package slurmlab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConfWrite: what each side chooses lands in slurm.conf and gres.conf, and a missing
// port is an error rather than a cluster that cannot start.
func TestConfWrite(t *testing.T) {
	dir := t.TempDir()
	c := Conf{Dir: dir, LogDir: filepath.Join(dir, "log"), Port: 6817, CredExpire: 5 * time.Second,
		BackfillInterval: time.Second, JobCompLog: "/lab/jobcomp.log", Extra: []string{"SuspendTime=5"},
		Nodes: []Node{
			{Name: "cpu1", Partition: "cpu", CPUs: 2, MemoryMB: 1000, Port: 7001},
			{Name: "gpu1", Partition: "gpu", CPUs: 4, MemoryMB: 2000, GPUs: 2, Port: 7002},
			{Name: "cpu2", Partition: "cpu", CPUs: 2, MemoryMB: 1000, Port: 7003},
		}}
	if err := c.Write(); err != nil {
		t.Fatal(err)
	}
	conf, _ := os.ReadFile(c.Path())
	for _, want := range []string{
		"SlurmctldPort=6817\n", "AuthInfo=cred_expire=5\n", "SchedulerParameters=bf_interval=1\n",
		"SlurmctldLogFile=" + dir + "/log/slurmctld.log\n", "JobCompLoc=/lab/jobcomp.log\n",
		"NodeName=gpu1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=7002 CPUs=4 RealMemory=2000 Gres=gpu:2 State=UNKNOWN\n",
		"PartitionName=cpu Nodes=cpu1,cpu2 MaxTime=INFINITE State=UP Default=YES\n",
		"PartitionName=gpu Nodes=gpu1 MaxTime=INFINITE State=UP Default=NO\n",
		"SuspendTime=5\n",
	} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("no %q in slurm.conf:\n%s", want, conf)
		}
	}
	gres, _ := os.ReadFile(filepath.Join(dir, "gres.conf"))
	if want := "NodeName=gpu1 Name=gpu File=" + dir + "/dev/gpu1-gpu0," + dir + "/dev/gpu1-gpu1\n"; string(gres) != want {
		t.Errorf("gres.conf %q, want %q", gres, want)
	}

	bare := Conf{Dir: t.TempDir(), Port: 6817, Nodes: []Node{{Name: "n1", Partition: "batch", CPUs: 1, MemoryMB: 100, Port: 7001}}}
	if err := bare.Write(); err != nil {
		t.Fatal(err)
	}
	conf, _ = os.ReadFile(bare.Path())
	for _, absent := range []string{"AuthInfo", "SchedulerParameters", "JobComp", "/log/"} {
		if strings.Contains(string(conf), absent) {
			t.Errorf("%s in slurm.conf without being asked for:\n%s", absent, conf)
		}
	}

	for name, bad := range map[string]Conf{
		"no controller port": {Dir: t.TempDir()},
		"no slurmd port":     {Dir: t.TempDir(), Port: 6817, Nodes: []Node{{Name: "n1", Partition: "batch"}}},
	} {
		if err := bad.Write(); err == nil {
			t.Errorf("%s: Write succeeded", name)
		}
	}
}
