package slurmlab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/testutil"
)

// Node is one slurmd of the cluster.
type Node struct {
	Name      string
	Partition string
	CPUs      int
	MemoryMB  int
	// GPUs is how many fake gpu GRES the node has (0: none), of type GPUType ("": untyped).
	GPUs    int
	GPUType string
	// Features are the node's features (what --constraint asks); AlsoIn names partitions
	// the node is in besides Partition.
	Features []string
	AlsoIn   []string
	// Port is its slurmd's port (Start picks a free one when 0).
	Port int
}

// Options shape the cluster.
type Options struct {
	Nodes []Node
	// Extra lines go at the end of slurm.conf (SuspendProgram=..., SuspendTime=...).
	Extra []string
	// Startup bounds how long the cluster may take to show every node idle (default 60s).
	Startup time.Duration
}

// Cluster is a running Slurm cluster.
type Cluster struct {
	// Dir holds slurm.conf, state, spool and logs; Conf is slurm.conf's path.
	Dir  string
	Conf string
	// BinDir holds sinfo, squeue, scontrol, sbatch.
	BinDir string
	Nodes  []Node
	// Controller is slurmctld (stop or pause it to see how clients cope).
	Controller *testutil.Process

	t      testing.TB
	slurmd map[string]*testutil.Process
	sbin   string
}

const install = "apt-get install -y slurmctld slurmd slurm-client (or make tools)"

// Start writes slurm.conf, starts slurmctld and every slurmd, and waits until sinfo shows every
// node idle. Everything is stopped at the test's cleanup. A missing Slurm skips the test locally
// and fails it under CI=true.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	ctld, err := exec.LookPath("slurmctld")
	if err != nil {
		testutil.Missing(t, "slurmctld", install)
	}
	if _, err := exec.LookPath("slurmd"); err != nil {
		testutil.Missing(t, "slurmd", install)
	}
	sinfo, err := exec.LookPath("sinfo")
	if err != nil {
		testutil.Missing(t, "sinfo", install)
	}
	// A short folder: slurmd puts a unix socket under its spool folder, and socket paths are
	// limited to 108 bytes (t.TempDir() is too long for long test names).
	dir, err := os.MkdirTemp("", "slurmlab")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	nodes := make([]Node, len(opts.Nodes))
	for i, n := range opts.Nodes {
		if n.Port == 0 {
			n.Port = testutil.FreePort(t)
		}
		nodes[i] = n
	}
	// Credentials that expire in seconds and a backfill pass every second keep tests quick.
	conf := Conf{Dir: dir, LogDir: filepath.Join(dir, "log"), Port: testutil.FreePort(t), Nodes: nodes,
		CredExpire: 5 * time.Second, BackfillInterval: time.Second, Extra: opts.Extra}
	if err := conf.Write(); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Dir: dir, Conf: conf.Path(), BinDir: filepath.Dir(sinfo),
		Nodes: nodes, t: t, slurmd: map[string]*testutil.Process{}, sbin: filepath.Dir(ctld)}
	// Cleanups run last-in first-out: jobs and their slurmstepd go before the daemons stop.
	c.Controller = testutil.StartEnv(t, c.Env(), ctld, "-D", "-f", c.Conf)
	for _, n := range nodes {
		c.StartNode(n.Name)
	}
	t.Cleanup(c.stopJobs)
	startup := opts.Startup
	if startup == 0 {
		startup = 60 * time.Second
	}
	c.WaitState(startup, "idle")
	return c
}

// Env is the environment Slurm's commands need for this cluster (SLURM_CONF).
func (c *Cluster) Env() []string { return []string{"SLURM_CONF=" + c.Conf} }

// StartNode starts the node's slurmd (a "power on" in the lab). It does not wait. slurmd's -b
// reports the node as just booted: Slurm's power saving accepts a resumed node only when its
// boot time is newer than the resume request, and the lab's "servers" share one host's uptime.
func (c *Cluster) StartNode(name string) {
	c.t.Helper()
	c.slurmd[name] = testutil.StartEnv(c.t, c.Env(), filepath.Join(c.sbin, "slurmd"), "-D", "-b", "-f", c.Conf, "-N", name)
}

// StartDynamicNode starts a slurmd that registers the node itself (slurmd -Z, Slurm's dynamic
// nodes, 22.05 and later), of the given slurm.conf node parameters ("CPUs=2 RealMemory=1000"),
// and does not wait; StopNode stops it. slurm.conf must allow it: a MaxNodeCount above the
// static nodes, and a SlurmdPort (a dynamic node cannot name its own port), both in
// Options.Extra. Only one dynamic node runs at a time: they share that port.
func (c *Cluster) StartDynamicNode(name, params string) {
	c.t.Helper()
	c.slurmd[name] = testutil.StartEnv(c.t, c.Env(), filepath.Join(c.sbin, "slurmd"), "-D", "-b", "-Z", "--conf", params, "-f", c.Conf, "-N", name)
}

// ResumeNode starts the slurmd of a node Slurm's power saving is resuming (a server booting
// after the power-on its ResumeProgram asked for), once the wall clock has passed into the
// second after the call. slurmctld takes a POWERING_UP node's registration only if the node's
// boot time (its own clock less the uptime slurmd reports) is no older than the resume
// request, both in whole seconds; slurmd -b counts uptime from a first reading of the host's
// uptime, whose seconds tick at another phase than the wall clock's, so the boot time read can
// be a second before slurmd started. A registration refused so is not sent again: the node
// stays powering up until ResumeTimeout. A real server boots for minutes; a lab one started in
// the second of the request sometimes hit this. The caller calls after the resume request
// (after the power-on reached the BMC): a slurmd started in a later second reads no older.
func (c *Cluster) ResumeNode(name string) {
	c.t.Helper()
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second).Sub(now))
	c.StartNode(name)
}

// StopNode stops the node's slurmd by pid (a "power off" in the lab) and waits for it to exit.
func (c *Cluster) StopNode(name string) {
	c.t.Helper()
	p := c.slurmd[name]
	if p == nil {
		return
	}
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGTERM)
	testutil.Eventually(c.t, 10*time.Second, "slurmd "+name+" exits", func() error {
		if syscall.Kill(p.Cmd.Process.Pid, 0) == nil {
			return fmt.Errorf("pid %d alive", p.Cmd.Process.Pid)
		}
		return nil
	})
	delete(c.slurmd, name)
}

// Command runs a Slurm client command (sinfo, squeue, scontrol, sbatch, scancel) against the
// cluster and returns its standard output; an error fails the test.
func (c *Cluster) Command(name string, args ...string) string {
	c.t.Helper()
	out, err := c.command(name, args...)
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

func (c *Cluster) command(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(c.BinDir, name), args...)
	cmd.Env = append(os.Environ(), c.Env()...)
	cmd.Dir = c.Dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// Submit runs sbatch with args (--wrap and the job's shape) and returns the job id. The job's
// output goes to /dev/null.
func (c *Cluster) Submit(args ...string) string {
	c.t.Helper()
	out := c.Command("sbatch", append([]string{"--parsable", "--output=/dev/null"}, args...)...)
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	return id
}

// SubmitAs submits as Submit does, for another user (sbatch --uid: the tests run as root, as
// the lab's Slurm does), and returns the job id. The cluster's folders are opened to others
// first: the job's steps run as that user from the cluster's folder and spool (a job that
// cannot enter them ends at once, exit code 13).
func (c *Cluster) SubmitAs(user string, args ...string) string {
	c.t.Helper()
	err := filepath.WalkDir(c.Dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return os.Chmod(path, 0o755)
	})
	if err != nil {
		c.t.Fatal(err)
	}
	return c.Submit(append([]string{"--uid=" + user}, args...)...)
}

// NodeStates returns each node's state as sinfo's StateComplete prints it.
func (c *Cluster) NodeStates() (map[string]string, error) {
	out, err := c.command("sinfo", "--noheader", "--Node", "--Format=NodeList:0|,StateComplete:0")
	if err != nil {
		return nil, err
	}
	states := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if name, state, ok := strings.Cut(l, "|"); ok {
			states[name] = strings.TrimSpace(state)
		}
	}
	return states, nil
}

// WaitState waits until every node named (all when none) shows exactly state.
func (c *Cluster) WaitState(timeout time.Duration, state string, names ...string) {
	c.t.Helper()
	if len(names) == 0 {
		for _, n := range c.Nodes {
			names = append(names, n.Name)
		}
	}
	testutil.Eventually(c.t, timeout, "nodes "+strings.Join(names, ",")+" "+state, func() error {
		states, err := c.NodeStates()
		if err != nil {
			return err
		}
		for _, n := range names {
			if states[n] != state {
				return fmt.Errorf("%s is %q", n, states[n])
			}
		}
		return nil
	})
}

// JobState returns a job's state as squeue prints it (PENDING, RUNNING, ...), "" once gone.
func (c *Cluster) JobState(id string) string {
	c.t.Helper()
	out, err := c.command("squeue", "--noheader", "--jobs="+id, "--Format=State:0")
	if err != nil {
		// squeue fails for a job id it no longer knows.
		return ""
	}
	return strings.TrimSpace(out)
}

// stopJobs cancels every job, waits for the queue to empty, then ends by pid whatever
// process still carries this cluster's SLURM_CONF (slurmstepd and job steps the daemons'
// process groups do not cover).
func (c *Cluster) stopJobs() {
	_, _ = c.command("scancel", "--full", "--quiet", "--user=root")
	for range 100 { // at most about ten seconds
		out, err := c.command("squeue", "--noheader", "--Format=JobID:0")
		if err != nil || strings.TrimSpace(out) == "" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, pid := range c.strays() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// strays lists the pids of processes that are not daemons this package started but whose
// environment holds this cluster's SLURM_CONF.
func (c *Cluster) strays() []int {
	own := map[int]bool{os.Getpid(): true}
	for _, p := range c.slurmd {
		own[p.Cmd.Process.Pid] = true
	}
	want := []byte("SLURM_CONF=" + c.Conf + "\x00")
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || own[pid] {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		if cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); bytes.HasPrefix(cmd, []byte(filepath.Join(c.sbin, "slurm"))) {
			continue // slurmctld and slurmd: stopped by their own cleanup
		}
		pids = append(pids, pid)
	}
	return pids
}
