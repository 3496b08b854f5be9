package slurm

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/internal/slurmcli"
	"github.com/rotahq/rota/internal/slurmcli/slurmclitest"
	"github.com/rotahq/rota/internal/slurmlab"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs"
	"github.com/rotahq/rota/scaler/plan"
)

var record = flag.Bool("record", false, "record sinfo/squeue fixtures from the real cluster into testdata/")

// labNodes: two CPU servers and two GPU servers with fake a100 GPUs, each in its own
// partition and all in partition all.
func labNodes() []slurmlab.Node {
	return []slurmlab.Node{
		{Name: "node1", Partition: "batch", CPUs: 2, MemoryMB: 1000, AlsoIn: []string{"all"}},
		{Name: "node2", Partition: "batch", CPUs: 2, MemoryMB: 1000, AlsoIn: []string{"all"}},
		{Name: "gpu01", Partition: "gpu", CPUs: 4, MemoryMB: 2000, GPUs: 2, GPUType: "a100", Features: []string{"a100", "ib"}, AlsoIn: []string{"all"}},
		{Name: "gpu02", Partition: "gpu", CPUs: 4, MemoryMB: 2000, GPUs: 2, GPUType: "a100", Features: []string{"a100", "ib"}, AlsoIn: []string{"all"}},
	}
}

// labConfig is a rota config of the lab's nodes: pool cpu (node1, node2) at 0.14/h and pool
// gpu (gpu01, gpu02) at 24/h, each profile as Slurm has it.
func labConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(`
server: {webhook_auth_disabled: true}
jobs: {adapter: slurm, slurm: {requeue: true}}
pools:
  - name: cpu
    profile: {cpu_cores: 2, memory: 1000MiB, partitions: [batch, all]}
    cost: {hourly: 0.14}
    nodes:
      - {name: node1, bmc: {protocol: ipmi, host: h, username: u, password_env: P}}
      - {name: node2, bmc: {protocol: ipmi, host: h, username: u, password_env: P}}
  - name: gpu
    profile: {cpu_cores: 4, memory: 2000MiB, gpus: 2, gpu_model: NVIDIA A100, network: ib, partitions: [gpu, all], features: [a100]}
    cost: {hourly: 24}
    nodes:
      - {name: gpu01, bmc: {protocol: ipmi, host: h, username: u, password_env: P}}
      - {name: gpu02, bmc: {protocol: ipmi, host: h, username: u, password_env: P}}
`))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestRealSlurm runs the adapter against one real cluster (slurmctld and four slurmd on
// loopback, Slurm's power saving on with programs that do nothing), shared by its steps.
func TestRealSlurm(t *testing.T) {
	c := slurmlab.Start(t, slurmlab.Options{Nodes: labNodes(), Extra: []string{
		"SuspendProgram=/bin/true", "ResumeProgram=/bin/true", "SuspendTime=3600",
		"SuspendTimeout=5", "ResumeTimeout=30", "SuspendExcNodes=gpu02",
	}})
	cfg := &config.Config{Classes: config.DefaultClasses()}
	m := New(Options{
		Run:      slurmcli.Commands{Conf: c.Conf, BinDir: c.BinDir, Timeout: 20 * time.Second}.Run,
		Classify: cfg.Classify,
		Requeue:  true,
		Log:      logrus.NewEntry(logrus.New()),
	})
	ctx := context.Background()

	t.Run("unknown node", func(t *testing.T) {
		if err := m.Drain(ctx, "ghost", "idle"); !errors.Is(err, ErrUnknownNode) {
			t.Fatalf("Drain: %v, want ErrUnknownNode", err)
		}
	})
	t.Run("demand", func(t *testing.T) { testDemand(ctx, t, c, m) })
	t.Run("drain waits for the running job", func(t *testing.T) { testDrain(ctx, t, c, m) })
	t.Run("drained by a person is left alone", func(t *testing.T) { testPersonDrain(ctx, t, c, m) })
	t.Run("down or failed by a person is left alone", func(t *testing.T) { testPersonDownOrFail(ctx, t, c, m) })
	t.Run("a reserved server is held for its reservation", func(t *testing.T) { testReserved(ctx, t, c, m) })
	t.Run("a reservation's waiting job is demand for its nodes only", func(t *testing.T) { testReservationDemand(ctx, t, c, m) })
	t.Run("a move empties a server, never moves what may not be requeued", func(t *testing.T) { testMove(ctx, t, c, m) })
	t.Run("a move never releases a hold it did not make", func(t *testing.T) { testMoveLeavesOthersHolds(ctx, t, c, m) })
	t.Run("a move takes an array's task alone, never a heterogeneous job", func(t *testing.T) { testMoveArraysAndHetJobs(ctx, t, c, m) })
	t.Run("a move that fails half-way leaves no job held", func(t *testing.T) { testMoveFailsHalfWay(ctx, t, c, m) })
	t.Run("a move never runs again a job that ended as it was moved", func(t *testing.T) { testMoveLeavesEndedJobs(ctx, t, c) })
	t.Run("weights steer new work to the cheap tier", func(t *testing.T) { testWeights(ctx, t, c, m) })
	t.Run("a user's exclusive job fits only beside its user's work", func(t *testing.T) { testUserExclusive(ctx, t, c, m) })
	t.Run("work wakes only servers it can use", func(t *testing.T) { testConstraints(ctx, t, c, m) })
	t.Run("powered off and on", func(t *testing.T) { testPower(ctx, t, c, m) })
	t.Run("a controller that does not answer", func(t *testing.T) { testSlowController(ctx, t, c) })
}

// TestRealSlurmDynamicNode: a node that registers itself as it boots (slurmd -Z, Slurm's
// dynamic nodes), which rota drained and powered off and someone deleted meanwhile (scontrol
// delete nodename: a dynamic node is kept while off, across slurmctld restarts too, until
// deleted), is unknown to Slurm while its server boots: Resume and PoweredOn then fail with
// jobs.ErrNotRegistered, which the executor waits out within the pool's boot_timeout, and once
// its slurmd has registered it again (idle, rota's drain gone with the old node) they succeed.
func TestRealSlurmDynamicNode(t *testing.T) {
	c := slurmlab.Start(t, slurmlab.Options{
		Nodes: []slurmlab.Node{{Name: "node1", Partition: "batch", CPUs: 2, MemoryMB: 1000}},
		// A dynamic node joins the partitions of all nodes (Nodes=ALL) as it registers.
		Extra: []string{"MaxNodeCount=4", fmt.Sprintf("SlurmdPort=%d", testutil.FreePort(t)), "PartitionName=all Nodes=ALL State=UP"},
	})
	m := New(Options{Run: slurmcli.Commands{Conf: c.Conf, BinDir: c.BinDir, Timeout: 20 * time.Second}.Run,
		Log: logrus.NewEntry(logrus.New())})
	ctx := context.Background()
	c.StartDynamicNode("dyn1", "CPUs=2 RealMemory=1000")
	c.WaitState(30*time.Second, "idle+dynamic_norm", "dyn1")
	if err := m.Drain(ctx, "dyn1", "idle"); err != nil {
		t.Fatal(err)
	}
	c.StopNode("dyn1") // powered off
	c.Command("scontrol", "delete", "nodename=dyn1")
	if states, err := c.NodeStates(); err != nil || states["dyn1"] != "" {
		t.Fatalf("dyn1 after its deletion: %q (%v), want unknown", states["dyn1"], err)
	}
	for name, act := range map[string]func(context.Context, string) error{"Resume": m.Resume, "PoweredOn": m.PoweredOn} {
		if err := act(ctx, "dyn1"); !errors.Is(err, jobs.ErrNotRegistered) {
			t.Fatalf("%s of dyn1 before its slurmd registers: %v, want jobs.ErrNotRegistered", name, err)
		}
	}
	c.StartDynamicNode("dyn1", "CPUs=2 RealMemory=1000") // the server boots
	c.WaitState(30*time.Second, "idle+dynamic_norm", "dyn1")
	for name, act := range map[string]func(context.Context, string) error{"Resume": m.Resume, "PoweredOn": m.PoweredOn} {
		if err := act(ctx, "dyn1"); err != nil {
			t.Fatalf("%s of dyn1 registered again: %v", name, err)
		}
	}
}

// testSlowController: with slurmctld paused (SIGSTOP), a read fails with slurmcli.ErrTimeout within the
// timeout instead of hanging; once it runs again, reads work.
func testSlowController(ctx context.Context, t *testing.T, c *slurmlab.Cluster) {
	m := New(Options{Run: slurmcli.Commands{Conf: c.Conf, BinDir: c.BinDir, Timeout: time.Second}.Run,
		Log: logrus.NewEntry(logrus.New())})
	pid := c.Controller.Cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	_, err := m.Nodes(ctx)
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, slurmcli.ErrTimeout) {
		t.Fatalf("Nodes with slurmctld paused: %v, want slurmcli.ErrTimeout", err)
	}
	testutil.Eventually(t, 30*time.Second, "reads work again", func() error {
		_, err := m.Nodes(ctx)
		return err
	})
}

// testDemand holds every node (drained by hand, as if powered off), submits mixed shapes, and
// checks the demand read back.
func testDemand(ctx context.Context, t *testing.T, c *slurmlab.Cluster, m *Manager) {
	c.Command("scontrol", "update", "nodename=node[1-2],gpu[01-02]", "state=drain", "reason=held for the demand test")
	var ids []string
	for _, args := range [][]string{
		{"--partition=batch", "--cpus-per-task=2"},
		{"--partition=batch", "--cpus-per-task=2"},
		{"--partition=batch", "--nodes=2"},
		{"--partition=batch", "--mem=500M"},
		{"--partition=batch", "--array=1-3"},
		{"--partition=batch", "--hold"}, // held: not demand
		{"--partition=gpu", "--gres=gpu:1"},
		{"--partition=gpu", "--nodes=2", "--gpus-per-node=2", "--cpus-per-task=3"},
		{"--partition=gpu", "--gpus=1", "--account=research"},
		{"--partition=gpu", "--gpus=2", "--cpus-per-gpu=2"}, // squeue's NumCPUs says 1
		{"--partition=batch", "--exclusive"},
		// pending, each counts one CPU and its memory for one CPU (DefMemPerCPU=100)
		{"--partition=gpu", "--gpus=1", "--cpus-per-gpu=2", "--mem-per-cpu=300M"},
		{"--partition=gpu", "--gpus=1", "--cpus-per-gpu=2", "--mem=500M"},
		{"--partition=gpu", "--gpus=2", "--cpus-per-gpu=2", "--mem-per-gpu=300M"},
	} {
		ids = append(ids, c.Submit(append(args, "--wrap=sleep 300")...))
	}
	t.Cleanup(func() {
		c.Command("scancel", ids...)
		c.Command("scontrol", "update", "nodename=node[1-2],gpu[01-02]", "state=resume")
		c.WaitState(30*time.Second, "idle")
	})
	if *record {
		recordFixtures(t, c, "pending")
	}
	got, err := m.Demand(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i].Since = time.Time{}
	}
	mib := config.Bytes(1 << 20)
	want := []fleet.Demand{
		{Class: "light", Partition: "batch", Shape: shape("batch", 1, 0, 100*mib), Nodes: 1, Count: 3},
		{Class: "light", Partition: "batch", Shape: shape("batch", 1, 0, 500*mib), Nodes: 1, Count: 1},
		{Class: "light", Partition: "batch", Shape: shape("batch", 1, 0, 100*mib), Nodes: 2, Count: 1},
		{Class: "light", Partition: "batch", Shape: shape("batch", 2, 0, 200*mib), Nodes: 1, Count: 2},
		{Class: "medium", Partition: "gpu", Shape: shape("gpu", 1, 1, 100*mib), Nodes: 1, Count: 1},
		{Class: "medium", Partition: "gpu", Department: "research", Shape: shape("gpu", 1, 1, 100*mib), Nodes: 1, Count: 1},
		{Class: "heavy", Partition: "gpu", Shape: shape("gpu", 3, 2, 300*mib), Nodes: 2, Count: 1},
		{Class: "heavy", Partition: "gpu", Shape: shape("gpu", 4, 2, 400*mib), Nodes: 1, Count: 1},
		{Class: "light", Partition: "batch", Shape: shape("batch", 1, 0, 100*mib), Needs: fleet.Needs{Whole: true}, Nodes: 1, Count: 1},
		{Class: "medium", Partition: "gpu", Shape: shape("gpu", 2, 1, 600*mib), Nodes: 1, Count: 1},
		{Class: "medium", Partition: "gpu", Shape: shape("gpu", 2, 1, 500*mib), Nodes: 1, Count: 1},
		{Class: "heavy", Partition: "gpu", Shape: shape("gpu", 4, 2, 600*mib), Nodes: 1, Count: 1},
	}
	slices.SortFunc(want, compareDemand)
	if !slices.Equal(got, want) {
		t.Errorf("demand:\n got %+v\nwant %+v", got, want)
	}

	// The watch lists the same jobs: every one but the held job, the array's tasks as one.
	waiting, err := m.Waiting(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs := slices.Delete(slices.Clone(ids), 5, 6) // the held job
	slices.Sort(waiting)
	slices.Sort(wantIDs)
	if !slices.Equal(waiting, wantIDs) {
		t.Errorf("waiting: got %q, want %q", waiting, wantIDs)
	}
}

func shape(p string, cpus, gpus int, mem config.Bytes) config.Shape {
	return config.Shape{Partition: p, CPUs: cpus, GPUs: gpus, Memory: mem}
}

// testDrain drains a server with a job running: it stays allocated (not Drained) until the job
// ends, then reads as drained and empty; Resume returns it to service.
func testDrain(ctx context.Context, t *testing.T, c *slurmlab.Cluster, m *Manager) {
	id := c.Submit("--partition=batch", "--nodelist=node1", "--cpus-per-task=2", "--wrap=sleep 300")
	testutil.Eventually(t, 30*time.Second, "job running", func() error { return jobIs(c, id, "RUNNING") })
	if waiting, err := m.Waiting(ctx); err != nil || len(waiting) != 0 {
		t.Fatalf("waiting with one job running: %q, %v; want none", waiting, err)
	}
	if err := m.Drain(ctx, "node1", "idle for 10m"); err != nil {
		t.Fatal(err)
	}
	if err := m.Drain(ctx, "node1", "idle for 10m"); err != nil {
		t.Fatalf("second drain: %v", err)
	}
	if *record {
		recordFixtures(t, c, "draining")
	}
	v := view(ctx, t, m)["node1"]
	if v.Drained || !v.DrainedByRota || v.Jobs != 1 || v.CPUs != 2 || !v.Responding {
		t.Fatalf("draining node1: %+v, want not drained, ours, 1 job, 2 CPUs", v)
	}
	c.Command("scancel", id)
	testutil.Eventually(t, 30*time.Second, "node1 drained and empty", func() error {
		if v := view(ctx, t, m)["node1"]; !v.Drained || v.Allocated() {
			return errors.New("still draining")
		}
		return nil
	})
	if err := m.Resume(ctx, "node1"); err != nil {
		t.Fatal(err)
	}
	c.WaitState(30*time.Second, "idle", "node1")
	if v := view(ctx, t, m)["node1"]; v.Drained || v.DrainedByRota {
		t.Fatalf("resumed node1: %+v", v)
	}
}

// testPersonDrain: a drain without rota's marker is never resumed or taken over.
func testPersonDrain(ctx context.Context, t *testing.T, c *slurmlab.Cluster, m *Manager) {
	c.Command("scontrol", "update", "nodename=node2", "state=drain", "reason=disk replacement (bob)")
	t.Cleanup(func() { c.Command("scontrol", "update", "nodename=node2", "state=resume") })
	if err := m.Resume(ctx, "node2"); !errors.Is(err, jobs.ErrNotOurs) {
		t.Fatalf("Resume: %v, want ErrNotOurs", err)
	}
	if err := m.Drain(ctx, "node2", "idle"); !errors.Is(err, jobs.ErrNotOurs) {
		t.Fatalf("Drain: %v, want ErrNotOurs", err)
	}
	v := view(ctx, t, m)["node2"]
	if !v.Drained || v.DrainedByRota {
		t.Fatalf("node2: %+v, want drained, not by rota", v)
	}
	states, err := c.NodeStates()
	if err != nil || states["node2"] != "idle+drain" {
		t.Fatalf("node2 is %q (%v), want still idle+drain", states["node2"], err)
	}
}

// testPersonDownOrFail: a server a person set FAIL (bad memory) or DOWN (its slurmd gone, a
// bad disk) is theirs as a drain is: rota's Drain, Resume and PoweredOff are refused with
// jobs.ErrNotOurs and change neither state nor reason, and the view reads it drained by a
// person, which the planner leaves alone.
func testPersonDownOrFail(ctx context.Context, t *testing.T, c *slurmlab.Cluster, m *Manager) {
	c.StopNode("node2") // the broken server's slurmd is gone: Slurm keeps the DOWN (ReturnToService=2 would lift it once slurmd registers)
	c.Command("scontrol", "update", "nodename=node1", "state=fail", "reason=bad dimm")
	c.Command("scontrol", "update", "nodename=node2", "state=down", "reason=bad disk")
	t.Cleanup(func() {
		c.Command("scontrol", "update", "nodename=node1", "state=resume")
		c.StartNode("node2")
		c.WaitState(60*time.Second, "idle", "node1", "node2")
	})
	for _, tc := range []struct{ node, state, reason string }{
		{"node1", "idle+fail", "bad dimm"},
		{"node2", "down", "bad disk"},
	} {
		for name, act := range map[string]func(context.Context, string) error{
			"Drain":      func(ctx context.Context, n string) error { return m.Drain(ctx, n, "idle") },
			"Resume":     m.Resume,
			"PoweredOff": m.PoweredOff,
		} {
			if err := act(ctx, tc.node); !errors.Is(err, jobs.ErrNotOurs) {
				t.Fatalf("%s %s: %v, want jobs.ErrNotOurs", name, tc.node, err)
			}
		}
		out := c.Command("sinfo", "--noheader", "--nodes="+tc.node, "--Format=StateComplete:0|,Reason:0")
		state, reason, _ := strings.Cut(strings.TrimSpace(out), "|")
		// Slurm adds not_responding to the DOWN server once it misses its pings.
		if strings.TrimSuffix(state, "+not_responding") != tc.state || reason != tc.reason {
			t.Fatalf("%s after rota's calls: %q, want state %s, reason %s", tc.node, out, tc.state, tc.reason)
		}
		if v := view(ctx, t, m)[tc.node]; !v.Drained || v.DrainedByRota {
			t.Fatalf("%s: %+v, want drained, not by rota", tc.node, v)
		}
	}
}

// testReserved: an active reservation (not a maintenance one) holds its servers for its users.
// Slurm shows an idle one idle+reserved: it is not empty (rota must neither drain it nor power
// it off) and takes no other work, so it reads as out of service by someone else, as a
// maintenance reservation's does; Drain is refused and leaves it as it is. One running the
// reservation's job reads allocated.
func testReserved(ctx context.Context, t *testing.T, c *slurmlab.Cluster, m *Manager) {
	c.Command("scontrol", "create", "reservation", "reservationname=probe", "starttime=now", "duration=60",
		"nodes=node[1-2]", "users=root")
	id := c.Submit("--reservation=probe", "--nodelist=node2", "--cpus-per-task=2", "--wrap=sleep 300")
	t.Cleanup(func() {
		c.Command("scancel", id)
		c.Command("scontrol", "delete", "reservation=probe")
		c.WaitState(30*time.Second, "idle", "node1", "node2")
	})
	testutil.Eventually(t, 30*time.Second, "job running", func() error { return jobIs(c, id, "RUNNING") })
	c.WaitState(30*time.Second, "idle+reserved", "node1")
	if *record {
		recordFixtures(t, c, "reserved")
	}
	v := view(ctx, t, m)
	if v := v["node1"]; !v.Drained || v.DrainedByRota || v.Allocated() {
		t.Fatalf("node1, idle in a reservation: %+v, want drained by someone else, empty", v)
	}
	if v := v["node2"]; v.Drained || v.Jobs != 1 || v.CPUs != 2 {
		t.Fatalf("node2, running the reservation's job: %+v, want 1 job, 2 CPUs, not drained", v)
	}
	if err := m.Drain(ctx, "node1", "idle"); !errors.Is(err, jobs.ErrNotOurs) {
		t.Fatalf("Drain of a reserved node: %v, want jobs.ErrNotOurs", err)
	}
	if states, err := c.NodeStates(); err != nil || states["node1"] != "idle+reserved" {
		t.Fatalf("node1 after Drain is %q (%v), want still idle+reserved", states["node1"], err)
	}
}

// testReservationDemand: with a reservation of node2, of two jobs that name it and each fill a
// server, one runs on node2 and the other waits (Resources). It is demand (the watch lists
// it) only for node2: with every server off, the plan wakes node2, never node1, which Slurm
// would not give it.
func testReservationDemand(ctx context.Context, t *testing.T, c *slurmlab.Cluster, m *Manager) {
	c.Command("scontrol", "create", "reservation", "reservationname=probe2", "starttime=now", "duration=60",
		"nodes=node2", "users=root")
	first := c.Submit("--reservation=probe2", "--partition=batch", "--cpus-per-task=2", "--wrap=sleep 300")
	second := c.Submit("--reservation=probe2", "--partition=batch", "--cpus-per-task=2", "--wrap=sleep 300")
	t.Cleanup(func() {
		c.Command("scancel", first, second)
		c.Command("scontrol", "delete", "reservation=probe2")
		c.WaitState(30*time.Second, "idle", "node1", "node2")
	})
	testutil.Eventually(t, 30*time.Second, "one job running on node2, the other waiting for resources", func() error {
		if err := jobOn(c, first, "node2"); err != nil {
			return err
		}
		if out := c.Command("squeue", "--noheader", "--jobs="+second, "--Format=State:0|,Reason:0"); out != "PENDING|Resources\n" {
			return errors.New("job " + second + ": " + out)
		}
		return nil
	})
	demand, err := m.Demand(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(demand) != 1 || demand[0].Count != 1 || demand[0].Needs.Nodes != "node2" {
		t.Fatalf("demand %+v, want one job for node2 only", demand)
	}
	if waiting, err := m.Waiting(ctx); err != nil || !slices.Equal(waiting, []string{second}) {
		t.Fatalf("waiting %q (%v), want %s", waiting, err, second)
	}
	cfg := labConfig(t)
	var snap fleet.Snapshot
	snap.Telemetry, snap.JobsKnown, snap.Demand = true, true, demand
	for _, p := range cfg.Pools {
		for _, n := range p.Nodes {
			snap.Nodes = append(snap.Nodes, fleet.Node{Name: n.Name, Pool: p.Name, State: fleet.StateOff, Power: bmc.StateOff, Jobs: fleet.JobsView{Known: true}})
		}
	}
	if d := plan.Plan(snap, cfg, time.Now()); len(d.Actions) != 1 || d.Actions[0].Node != "node2" || d.Actions[0].Kind != fleet.PowerOn {
		t.Fatalf("actions %+v, want node2 powered on, the reservation's only node", d.Actions)
	}
}

// testMove: light work on gpu01 is moved (requeued, gpu01 excluded) and starts on gpu02; a
// job that does not allow requeue stays, however it is asked. Once it ends, gpu01 is empty and
// drained: the one safe-to-power-off rule lets rota power it off.
func testMove(ctx context.Context, t *testing.T, c *slurmlab.Cluster, m *Manager) {
	// gpu02 is held while the work starts, so it lands on gpu01.
	c.Command("scontrol", "update", "nodename=gpu02", "state=drain", "reason=steering work to gpu01")
	mover := c.Submit("--partition=gpu", "--requeue", "--time=120", "--wrap=sleep 300")
	stayer := c.Submit("--partition=gpu", "--nodelist=gpu01", "--no-requeue", "--gres=gpu:1", "--wrap=sleep 300")
	t.Cleanup(func() { c.Command("scancel", mover, stayer) })
	for _, id := range []string{mover, stayer} {
		testutil.Eventually(t, 30*time.Second, "job "+id+" running", func() error { return jobIs(c, id, "RUNNING") })
	}
	c.Command("scontrol", "update", "nodename=gpu02", "state=resume")
	if *record {
		recordFixtures(t, c, "running")
	}
	v := view(ctx, t, m)["gpu01"]
	if v.Jobs != 2 || v.GPUs != 1 || v.CPUs != 2 || len(v.Running) != 2 {
		t.Fatalf("gpu01: %+v, want 2 jobs listed, 1 GPU, 2 CPUs", v)
	}
	for _, j := range v.Running {
		if want := j.ID == mover; j.Requeueable != want || j.Started.IsZero() {
			t.Fatalf("job %+v: requeueable %v, want %v, and a start time", j, j.Requeueable, want)
		}
		if j.ID == mover && j.TimeLimit != 2*time.Hour {
			t.Fatalf("job %s time limit %s, want 2h", j.ID, j.TimeLimit)
		}
	}
	if err := m.Drain(ctx, "gpu01", "rebalance"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Resume(ctx, "gpu01") })
	c.Command("scontrol", "update", "jobid="+mover, "admincomment=site: billing 42")
	n, err := m.Move(ctx, "gpu01", []string{mover, stayer}, []string{"gpu01"})
	if err != nil || n != 1 {
		t.Fatalf("Move: %d, %v; want 1 job", n, err)
	}
	testutil.Eventually(t, 90*time.Second, "moved job running on gpu02", func() error {
		if err := jobOn(c, mover, "gpu02"); err != nil {
			return fmt.Errorf("%v: %s", err, c.Command("scontrol", "show", "job", mover))
		}
		return nil
	})
	if out := c.Command("squeue", "--noheader", "--jobs="+mover, "--format=%x"); out != "gpu01\n" {
		t.Errorf("moved job excludes %q, want gpu01", out)
	}
	if out := c.Command("squeue", "--noheader", "--jobs="+mover, "--Format=admin_comment:0"); out != "site: billing 42\n" {
		t.Errorf("moved job's admin comment %q, want its own back", out)
	}
	if err := jobOn(c, stayer, "gpu01"); err != nil {
		t.Fatalf("the job that may not be requeued: %v", err)
	}
	if n, err := m.Move(ctx, "gpu01", []string{stayer}, []string{"gpu01"}); err != nil || n != 0 {
		t.Fatalf("Move of the job that may not be requeued: %d, %v; want 0", n, err)
	}
	if reason, _ := fleet.PowerOffBlock(view(ctx, t, m)["gpu01"], true); reason != fleet.SkipAllocated {
		t.Fatalf("power-off of gpu01 with its job: %q, want allocated", reason)
	}
	c.Command("scancel", stayer)
	testutil.Eventually(t, 30*time.Second, "gpu01 empty and safe to power off", func() error {
		if reason, detail := fleet.PowerOffBlock(view(ctx, t, m)["gpu01"], true); reason != "" {
			return fmt.Errorf("%s: %s", reason, detail)
		}
		return nil
	})
}

// testMoveLeavesOthersHolds: a job a person requeued held (Slurm shows it "job requeued in
// held state", as rota's own hold) is no demand and no new work for the watch, and is not
// released by a move that names it, as after a crash between rota's plan and its move: only a
// hold rota marked is rota's to release.
func testMoveLeavesOthersHolds(ctx context.Context, t *testing.T, c *slurmlab.Cluster, m *Manager) {
	id := c.Submit("--partition=batch", "--nodelist=node1", "--requeue", "--wrap=sleep 300")
	t.Cleanup(func() { c.Command("scancel", id) })
	testutil.Eventually(t, 30*time.Second, "job running", func() error { return jobIs(c, id, "RUNNING") })
	c.Command("scontrol", "requeuehold", id)
	testutil.Eventually(t, 30*time.Second, "job held", func() error { return jobIs(c, id, "PENDING") })
	// Held (squeue says "job requeued in held state", not JobHeld*): no demand, no new work.
	if demand, err := m.Demand(ctx); err != nil || len(demand) != 0 {
		t.Fatalf("demand with only a held job: %+v, %v; want none", demand, err)
	}
	if waiting, err := m.Waiting(ctx); err != nil || len(waiting) != 0 {
		t.Fatalf("waiting with only a held job: %q, %v; want none", waiting, err)
	}
	if n, err := m.Move(ctx, "node1", []string{id}, []string{"node1"}); err != nil || n != 0 {
		t.Fatalf("Move: %d, %v; want 0", n, err)
	}
	out := c.Command("squeue", "--noheader", "--jobs="+id, "--Format=State:0|,Reason:0|,PriorityLong:0")
	if out != "PENDING|job requeued in held state|0\n" {
		t.Fatalf("the person's held job after a move: %q, want still held", out)
	}
}

// testMoveArraysAndHetJobs: squeue's JobID of one of an array's tasks is the array's own id,
// which scontrol takes as the whole array, and a heterogeneous job's first component's is the
// whole job's, its other components on other servers. A move off node2 requeues that task alone
// (its own exclusions kept), and the other task on node2 runs on; a heterogeneous job's
// component is not requeueable, and a move that names it leaves the job running, whole.
func testMoveArraysAndHetJobs(ctx context.Context, t *testing.T, c *slurmlab.Cluster, m *Manager) {
	c.Command("scontrol", "update", "nodename=node1", "state=drain", "reason=steering work to node2")
	arr := c.Submit("--partition=batch", "--array=1-2", "--requeue", "--exclude=gpu01", "--wrap=sleep 300")
	het := c.Submit("--partition=gpu", "--nodelist=gpu01", "--requeue", "--wrap=sleep 300", ":", "--partition=gpu", "--nodelist=gpu02")
	t.Cleanup(func() { c.Command("scancel", arr, het) })
	tasks := func() string {
		return c.Command("squeue", "--noheader", "--array", "--jobs="+arr, "--Format=JobID:0|,JobArrayID:0|,State:0|,NodeList:0|,StartTime:0")
	}
	testutil.Eventually(t, 30*time.Second, "both tasks running on node2", func() error {
		if out := tasks(); strings.Count(out, "|RUNNING|node2|") != 2 {
			return errors.New(out)
		}
		return nil
	})
	components := func() error {
		want := het + "+0|RUNNING|gpu01\n" + het + "+1|RUNNING|gpu02\n"
		if out := c.Command("squeue", "--noheader", "--jobs="+het, "--Format=JobArrayID:0|,State:0|,NodeList:0"); out != want {
			return fmt.Errorf("the heterogeneous job: %q, want %q", out, want)
		}
		return nil
	}
	testutil.Eventually(t, 30*time.Second, "the heterogeneous job running", components)
	c.Command("scontrol", "update", "nodename=node1", "state=resume")
	before := tasks()
	var moved, other string // the task whose id is the array's (as scontrol names it alone), and the other one
	for _, l := range strings.Split(strings.TrimSpace(before), "\n") {
		f := strings.Split(l, "|")
		if f[0] == arr {
			moved = f[1]
		} else {
			other = l
		}
	}
	for _, j := range view(ctx, t, m)["gpu01"].Running {
		if j.ID == het && j.Requeueable {
			t.Errorf("the heterogeneous job's component on gpu01 is requeueable: %+v", j)
		}
	}
	if err := m.Drain(ctx, "node2", "rebalance"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Resume(ctx, "node2") })
	if n, err := m.Move(ctx, "node2", []string{arr}, []string{"node2"}); err != nil || n != 1 {
		t.Fatalf("Move of the array's task: %d, %v; want 1", n, err)
	}
	testutil.Eventually(t, 90*time.Second, "the moved task running on node1", func() error {
		return jobOn(c, moved, "node1")
	})
	if out := tasks(); !strings.Contains(out, other) {
		t.Errorf("the array's other task after the move:\n%s\nwant still %s", out, other)
	}
	if out := c.Command("squeue", "--noheader", "--jobs="+moved, "--format=%x"); out != "gpu01,node2\n" {
		t.Errorf("the moved task's exclusions: %q, want gpu01,node2", out)
	}
	if n, err := m.Move(ctx, "gpu01", []string{het}, []string{"gpu01"}); err != nil || n != 0 {
		t.Fatalf("Move of the heterogeneous job's component: %d, %v; want 0", n, err)
	}
	time.Sleep(2 * time.Second) // a requeue shows at once; give it time to show if it was made
	if err := components(); err != nil {
		t.Errorf("after a move: %v", err)
	}
}

// testMoveFailsHalfWay: a move whose exclusions Slurm refuses (a server of the pool left that
// Slurm does not know) fails, yet the job it requeue-held is released and runs elsewhere, its
// admin comment its own again: the move is recorded failed and never repaired, so a job left
// held would wait for good.
func testMoveFailsHalfWay(ctx context.Context, t *testing.T, c *slurmlab.Cluster, m *Manager) {
	c.Command("scontrol", "update", "nodename=gpu02", "state=drain", "reason=steering work to gpu01")
	id := c.Submit("--partition=gpu", "--requeue", "--wrap=sleep 300")
	t.Cleanup(func() { c.Command("scancel", id) })
	testutil.Eventually(t, 30*time.Second, "job running on gpu01", func() error { return jobOn(c, id, "gpu01") })
	c.Command("scontrol", "update", "nodename=gpu02", "state=resume")
	if err := m.Drain(ctx, "gpu01", "rebalance"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Resume(ctx, "gpu01") })
	n, err := m.Move(ctx, "gpu01", []string{id}, []string{"gpu01", "gpu09"})
	if err == nil || !strings.Contains(err.Error(), "Invalid node name") {
		t.Fatalf("Move with an exclusion Slurm does not know: %v; want Slurm's refusal", err)
	}
	if n != 1 {
		t.Errorf("Move with an exclusion Slurm does not know: %d jobs, want 1", n)
	}
	testutil.Eventually(t, 90*time.Second, "the job running on gpu02", func() error {
		if err := jobOn(c, id, "gpu02"); err != nil {
			return fmt.Errorf("%v: %s", err, c.Command("squeue", "--noheader", "--jobs="+id, "--Format=Reason:0"))
		}
		return nil
	})
	if out := c.Command("squeue", "--noheader", "--jobs="+id, "--Format=admin_comment:0"); strings.TrimSpace(out) != "" {
		t.Errorf("admin comment %q, want none", out)
	}
}

// testMoveLeavesEndedJobs: a job that ends between the move's read of the queue and its
// requeue (here cancelled by its user, through a runner that does so right before the requeue)
// stays ended: Slurm requeues an ended job it still remembers, and would run it again.
func testMoveLeavesEndedJobs(ctx context.Context, t *testing.T, c *slurmlab.Cluster) {
	c.Command("scontrol", "update", "nodename=node2", "state=drain", "reason=steering work to node1")
	id := c.Submit("--partition=batch", "--requeue", "--wrap=sleep 300")
	t.Cleanup(func() { c.Command("scancel", id) })
	testutil.Eventually(t, 30*time.Second, "job running on node1", func() error { return jobOn(c, id, "node1") })
	c.Command("scontrol", "update", "nodename=node2", "state=resume")
	state := func() string {
		return strings.TrimSpace(c.Command("squeue", "--noheader", "--states=all", "--jobs="+id, "--Format=State:0"))
	}
	run := slurmcli.Commands{Conf: c.Conf, BinDir: c.BinDir, Timeout: 20 * time.Second}.Run
	m := New(Options{Requeue: true, Log: logrus.NewEntry(logrus.New()),
		Run: func(ctx context.Context, name string, args ...string) ([]byte, error) {
			if name == "scontrol" && len(args) > 0 && args[0] == "requeuehold" {
				c.Command("scancel", id)
				testutil.Eventually(t, 30*time.Second, "job cancelled", func() error {
					if got := state(); got != "CANCELLED" {
						return errors.New(got)
					}
					return nil
				})
			}
			return run(ctx, name, args...)
		}})
	if err := m.Drain(ctx, "node1", "rebalance"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Resume(ctx, "node1") })
	// Its steps after the requeue fail (the job ended). A requeue shows at once; give it time to
	// show if it was made.
	_, _ = m.Move(ctx, "node1", []string{id}, []string{"node1"})
	time.Sleep(2 * time.Second)
	if got := state(); got != "CANCELLED" {
		t.Fatalf("the job cancelled as it was moved is %s, want CANCELLED", got)
	}
}

// testWeights: with the weights rota sets from the pools' cost, a job that may run on any
// server starts on a cheap one; with the costs the other way round, on a GPU server. The
// weights read back through sinfo.
func testWeights(ctx context.Context, t *testing.T, c *slurmlab.Cluster, m *Manager) {
	cfg := labConfig(t)
	t.Cleanup(func() { c.Command("scontrol", "update", "nodename=node[1-2],gpu[01-02]", "weight=1") })
	for _, tc := range []struct {
		name     string
		cpu, gpu float64
		want     []string
	}{
		{"cpu servers cheaper", 0.14, 24, []string{"node1", "node2"}},
		{"gpu servers cheaper", 24, 0.14, []string{"gpu01", "gpu02"}},
	} {
		cfg.Pools[0].Cost.Hourly, cfg.Pools[1].Cost.Hourly = tc.cpu, tc.gpu
		if err := m.SetWeights(ctx, Weights(cfg)); err != nil {
			t.Fatal(err)
		}
		nodes, err := m.cli.Nodes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			if want := Weights(cfg)[n.Name]; n.Weight != want {
				t.Fatalf("%s: %s weight %d, want %d", tc.name, n.Name, n.Weight, want)
			}
		}
		id := c.Submit("--partition=all", "--wrap=sleep 300")
		testutil.Eventually(t, 30*time.Second, "job "+id+" running", func() error { return jobIs(c, id, "RUNNING") })
		on := strings.TrimSpace(c.Command("squeue", "--noheader", "--jobs="+id, "--format=%N"))
		c.Command("scancel", id)
		if !slices.Contains(tc.want, on) {
			t.Fatalf("%s: the job started on %s, want one of %v", tc.name, on, tc.want)
		}
	}
}

// testConstraints: with every server held (as if off), the demand read from Slurm carries
// what each job can run on, and the planner, given the lab's pools, wakes only servers that
// offer it: a gpu-partition job and an a100 constraint wake a GPU server, never a CPU one;
// light batch work wakes a CPU server, and so does light work that names the gpu partition
// first and batch too (Slurm starts it in either). The lab's profiles agree with what Slurm reports.
func testConstraints(ctx context.Context, t *testing.T, c *slurmlab.Cluster, m *Manager) {
	cfg := labConfig(t)
	if problems, err := m.Check(ctx, cfg); err != nil || len(problems) > 0 {
		t.Fatalf("profiles against slurm: %v, %v", problems, err)
	}
	wrong := labConfig(t)
	wrong.Pools[1].Profile.Features = []string{"h100"}
	if problems, _ := m.Check(ctx, wrong); len(problems) != 2 {
		t.Fatalf("a feature slurm lacks: %v, want one problem per gpu node", problems)
	}
	c.Command("scontrol", "update", "nodename=node[1-2],gpu[01-02]", "state=drain", "reason=held for the constraints test")
	t.Cleanup(func() {
		c.Command("scontrol", "update", "nodename=node[1-2],gpu[01-02]", "state=resume")
		c.WaitState(30*time.Second, "idle")
	})
	for _, tc := range []struct {
		name string
		args []string
		want string // the pool woken
		n    int    // jobs submitted alike, and servers woken (0: one)
	}{
		{"a gpu-partition job", []string{"--partition=gpu"}, "gpu", 0},
		{"an a100 constraint", []string{"--partition=all", "--constraint=a100&ib"}, "gpu", 0},
		{"a typed gpu", []string{"--partition=all", "--gres=gpu:a100:1"}, "gpu", 0},
		{"light batch work", []string{"--partition=batch"}, "cpu", 0},
		{"light work that may run in gpu or batch", []string{"--partition=gpu,batch"}, "cpu", 0},
		{"any server", []string{"--partition=all", "--exclude=node1"}, "cpu", 0},
		// each takes a server whole: two of them never share one
		{"exclusive light work", []string{"--partition=batch", "--exclusive"}, "cpu", 2},
		// one gpu and four cpus each: a gpu server (4 cpus) runs one of them at a time
		{"four cpus per gpu", []string{"--partition=gpu", "--gpus=1", "--cpus-per-gpu=4"}, "gpu", 2},
	} {
		n := max(tc.n, 1)
		var ids []string
		for range n {
			ids = append(ids, c.Submit(append(tc.args, "--wrap=sleep 300")...))
		}
		demand, err := m.Demand(ctx)
		c.Command("scancel", ids...)
		if err != nil {
			t.Fatal(err)
		}
		var snap fleet.Snapshot
		snap.Telemetry, snap.JobsKnown, snap.Demand = true, true, demand
		for _, p := range cfg.Pools {
			for _, n := range p.Nodes {
				snap.Nodes = append(snap.Nodes, fleet.Node{Name: n.Name, Pool: p.Name, State: fleet.StateOff, Power: bmc.StateOff, Jobs: fleet.JobsView{Known: true}})
			}
		}
		d := plan.Plan(snap, cfg, time.Now())
		if len(d.Actions) != n || slices.ContainsFunc(d.Actions, func(a fleet.Action) bool { return a.Pool != tc.want || a.Kind != fleet.PowerOn }) {
			t.Fatalf("%s (demand %+v): actions %+v, want %d power-ons in pool %s", tc.name, demand, d.Actions, n, tc.want)
		}
		if tc.name == "any server" && d.Actions[0].Node != "node2" {
			t.Fatalf("%s: woke %s, want node2 (node1 is excluded)", tc.name, d.Actions[0].Node)
		}
	}
}

// testUserExclusive: a job submitted --exclusive=user shares a server with its user's jobs
// alone, and Slurm keeps it waiting beside another user's job with room to spare; rota then
// wakes a server for it (the old reading, as ordinary work, woke none), and none for a job of
// the user whose work alone runs there, which Slurm starts beside it. The lab's two users are
// root (the tests') and nobody.
func testUserExclusive(ctx context.Context, t *testing.T, c *slurmlab.Cluster, m *Manager) {
	if os.Geteuid() != 0 {
		t.Skip("sbatch --uid needs root, as the lab's Slurm does")
	}
	cfg := labConfig(t)
	c.Command("scontrol", "update", "nodename=node2,gpu[01-02]", "state=drain", "reason=held for the user test")
	t.Cleanup(func() {
		c.Command("scontrol", "update", "nodename=node2,gpu[01-02]", "state=resume")
		c.WaitState(30*time.Second, "idle")
	})
	// decide is what rota decides with node1 on, as Slurm has it, and the others off.
	decide := func(demand []fleet.Demand) fleet.Decision {
		var snap fleet.Snapshot
		snap.Telemetry, snap.JobsKnown, snap.Demand = true, true, demand
		for _, p := range cfg.Pools {
			for _, n := range p.Nodes {
				node := fleet.Node{Name: n.Name, Pool: p.Name, State: fleet.StateOff, Power: bmc.StateOff, Jobs: fleet.JobsView{Known: true}}
				if n.Name == "node1" {
					node.State, node.Power, node.Jobs = fleet.StateOn, bmc.StateOn, view(ctx, t, m)["node1"]
					node.Telemetry = fleet.TelemetryView{Present: true, LastSample: time.Now(), CPUMax: 0.5}
				}
				snap.Nodes = append(snap.Nodes, node)
			}
		}
		return plan.Plan(snap, cfg, time.Now())
	}
	demand := func() []fleet.Demand {
		d, err := m.Demand(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	rootJob := c.Submit("--partition=batch", "--nodelist=node1", "--wrap=sleep 300") // one cpu of two
	testutil.Eventually(t, 30*time.Second, "root's job runs", func() error { return jobIs(c, rootJob, "RUNNING") })
	nobodys := c.SubmitAs("nobody", "--chdir=/", "--partition=batch", "--exclusive=user", "--wrap=sleep 300")
	t.Cleanup(func() { c.Command("scancel", rootJob, nobodys) })
	time.Sleep(2 * time.Second) // backfill passes every second: nobody's job had its chances
	if err := jobIs(c, nobodys, "PENDING"); err != nil {
		t.Fatalf("nobody's exclusive job beside root's work, a cpu free: %v, want it pending", err)
	}
	if jv := view(ctx, t, m)["node1"]; jv.User != "root" || jv.UserOnly {
		t.Fatalf("node1 %+v, want root's work alone", jv)
	}
	d := demand()
	if len(d) != 1 || d[0].Needs.User != "nobody" || d[0].Count != 1 {
		t.Fatalf("demand %+v, want nobody's exclusive job", d)
	}
	if got := decide(d); len(got.Actions) != 1 || got.Actions[0].Node != "node2" || got.Actions[0].Kind != fleet.PowerOn {
		t.Fatalf("for nobody's job beside root's work: actions %+v, want node2 woken", got.Actions)
	}
	// the same waiting job, were it root's, fits beside root's work: nothing woken; and so
	// Slurm has it: root's starts there at once
	d[0].Needs.User = "root"
	if got := decide(d); len(got.Actions) != 0 {
		t.Fatalf("for root's job beside root's work: actions %+v, want none", got.Actions)
	}
	c.Command("scancel", nobodys)
	roots := c.Submit("--partition=batch", "--exclusive=user", "--wrap=sleep 300")
	t.Cleanup(func() { c.Command("scancel", roots) })
	testutil.Eventually(t, 30*time.Second, "root's exclusive job runs", func() error { return jobIs(c, roots, "RUNNING") })
	if jv := view(ctx, t, m)["node1"]; jv.User != "root" || !jv.UserOnly || jv.Jobs != 2 {
		t.Fatalf("node1 %+v, want root's two jobs, one exclusive to root", jv)
	}
}

// testPower: PoweredOff sets the drained node POWER_DOWN (power saving is on here); once the
// server is back (slurmd started) and PoweredOn has run, the node is idle again.
func testPower(ctx context.Context, t *testing.T, c *slurmlab.Cluster, m *Manager) {
	if err := m.Drain(ctx, "node2", "idle"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, "node2 drained", func() error {
		if !view(ctx, t, m)["node2"].Drained {
			return errors.New("not drained")
		}
		return nil
	})
	c.StopNode("node2") // the BMC powered it off
	if err := m.PoweredOff(ctx, "node2"); err != nil {
		t.Fatal(err)
	}
	c.WaitState(30*time.Second, "idle+powered_down", "node2")
	if err := m.PoweredOff(ctx, "node2"); err != nil {
		t.Fatalf("second PoweredOff: %v", err)
	}
	if *record {
		recordFixtures(t, c, "powered-down")
		out := c.Command("scontrol", "show", "config")
		if err := os.WriteFile(filepath.Join(slurmclitest.RecordedDir(t), "show-config.txt"), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if v := view(ctx, t, m)["node2"]; v.Responding || v.Allocated() {
		t.Fatalf("powered down node2: %+v", v)
	}
	c.StartNode("node2") // the server boots
	if err := m.PoweredOn(ctx, "node2"); err != nil {
		t.Fatal(err)
	}
	c.WaitState(60*time.Second, "idle", "node2")
	if v := view(ctx, t, m)["node2"]; !v.Responding || v.Drained {
		t.Fatalf("powered on node2: %+v", v)
	}

	// gpu02 is excluded from Slurm's power saving (SuspendExcNodes): Slurm would never resume
	// it, so it stays drained with rota's reason instead of POWER_DOWN.
	if err := m.Drain(ctx, "gpu02", "idle"); err != nil {
		t.Fatal(err)
	}
	if err := m.PoweredOff(ctx, "gpu02"); err != nil {
		t.Fatal(err)
	}
	out := c.Command("sinfo", "--noheader", "--nodes=gpu02", "--Format=StateComplete:0|,Reason:0")
	if out != "idle+drain|rota: powered off\n" {
		t.Fatalf("gpu02 after PoweredOff: %q", out)
	}
	// Its slurmd gone, Slurm soon sees the server not responding, then DOWN: rota's reason
	// stays on it, so it is still rota's (not a person's DOWN), and PoweredOn resumes it.
	c.StopNode("gpu02")
	testutil.Eventually(t, 60*time.Second, "gpu02 down", func() error {
		if states, err := c.NodeStates(); err != nil || !strings.HasPrefix(states["gpu02"], "down+") {
			return fmt.Errorf("gpu02 is %q (%v)", states["gpu02"], err)
		}
		return nil
	})
	if v := view(ctx, t, m)["gpu02"]; !v.Drained || !v.DrainedByRota || v.Responding {
		t.Fatalf("gpu02 off and down: %+v, want drained by rota, not responding", v)
	}
	c.StartNode("gpu02")
	if err := m.PoweredOn(ctx, "gpu02"); err != nil {
		t.Fatal(err)
	}
	c.WaitState(60*time.Second, "idle", "gpu02")
}

func view(ctx context.Context, t *testing.T, m *Manager) map[string]fleet.JobsView {
	t.Helper()
	v, err := m.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func jobIs(c *slurmlab.Cluster, id, state string) error {
	if got := c.JobState(id); got != state {
		return errors.New("job " + id + " is " + got)
	}
	return nil
}

func jobOn(c *slurmlab.Cluster, id, node string) error {
	out := c.Command("squeue", "--noheader", "--jobs="+id, "--Format=State:0|,NodeList:0")
	if out != "RUNNING|"+node+"\n" {
		return errors.New("job " + id + ": " + out)
	}
	return nil
}

// recordFixtures writes what sinfo and squeue print now, with rota's formats, to
// testdata/<name>.sinfo and testdata/<name>.squeue.
func recordFixtures(t *testing.T, c *slurmlab.Cluster, name string) {
	t.Helper()
	for ext, cmd := range map[string][]string{
		"sinfo":   append([]string{"sinfo"}, slurmcli.SinfoArgs()...),
		"squeue":  append([]string{"squeue"}, slurmcli.SqueueArgs()...),
		"waiting": append([]string{"squeue"}, slurmcli.WaitingArgs()...),
	} {
		out := c.Command(cmd[0], cmd[1:]...)
		if err := os.WriteFile(filepath.Join(slurmclitest.RecordedDir(t), name+"."+ext), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
