package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/lab"
)

// tiers splits servers by pool.
func tiers(l *lab.Lab, names map[string]bool) (cpu, gpu []string) {
	for _, p := range l.Config.Pools {
		for _, n := range p.Nodes {
			if !names[n.Name] {
				continue
			}
			if p.Profile.GPUs > 0 {
				gpu = append(gpu, n.Name)
			} else {
				cpu = append(cpu, n.Name)
			}
		}
	}
	return cpu, gpu
}

// TestBacklogWakesTheRightTier: with only the CPU floor on, a backlog of light jobs powers CPU
// servers on and no GPU server; then a backlog of heavy (GPU) jobs powers GPU servers on and
// no CPU server. Every job completes.
func TestBacklogWakesTheRightTier(t *testing.T) {
	t.Parallel()
	wakesTheRightTier(t, startLab(t, "floor", false), "jobs")
}

// wakesTheRightTier submits six light jobs to lab l (only its CPU floor on) and wants CPU
// servers woken for them and no GPU server, then three heavy ones and wants GPU servers woken
// and no CPU server, every job finished. work names the jobs in messages.
func wakesTheRightTier(t *testing.T, l *lab.Lab, work string) {
	t.Helper()
	t0 := time.Now()
	submit(t, l, repeat(6, lab.Light(20*time.Second))...)
	waitJobsFinished(t, l, 6, 4*time.Minute)
	cpu, gpu := tiers(l, poweredOnSince(t, l, t0))
	if len(cpu) == 0 || len(gpu) != 0 {
		t.Errorf("light %s powered on CPU servers %v and GPU servers %v; want CPU servers only", work, cpu, gpu)
	}

	t1 := time.Now()
	submit(t, l, repeat(3, lab.Heavy(20*time.Second))...)
	waitJobsFinished(t, l, 9, 4*time.Minute)
	cpu, gpu = tiers(l, poweredOnSince(t, l, t1))
	if len(gpu) == 0 || len(cpu) != 0 {
		t.Errorf("heavy %s powered on GPU servers %v and CPU servers %v; want GPU servers only", work, gpu, cpu)
	}
}

// waitFloor waits until exactly each pool's floor is powered (the lab's view of the BMCs) and
// rota reports no server draining or powering off, then checks that no powered server is left
// drained in Slurm.
func waitFloor(t *testing.T, l *lab.Lab, timeout time.Duration) {
	t.Helper()
	testutil.Eventually(t, timeout, "the fleet down to its floors", func() error {
		on := powered(t, l)
		for _, p := range l.Config.Pools {
			if len(on[p.Name]) != p.Min {
				return fmt.Errorf("pool %s: %v on, floor %d", p.Name, on[p.Name], p.Min)
			}
		}
		st, err := status(t, l)
		if err != nil {
			return err
		}
		for _, n := range st.Nodes {
			if s := string(n.State); s != "on" && s != "off" {
				return fmt.Errorf("%s is %s", n.Name, s)
			}
		}
		return nil
	})
	noPoweredServerDrained(t, l)
}

// noPoweredServerDrained fails the test if a powered server is drained in Slurm (a drain rota
// left behind) once Slurm has seen it.
func noPoweredServerDrained(t *testing.T, l *lab.Lab) {
	t.Helper()
	on := powered(t, l)
	testutil.Eventually(t, 30*time.Second, "powered servers in service in Slurm", func() error {
		states, err := slurmNodes(t, l)
		if err != nil {
			return err
		}
		for _, names := range on {
			for _, n := range names {
				if !slices.Contains([]string{"idle", "alloc", "mix"}, states[n]) {
					return fmt.Errorf("%s is %q in Slurm", n, states[n])
				}
			}
		}
		return nil
	})
}

// TestQuietClusterScalesDownToFloor: with every server on and a few jobs running, the idle
// servers are drained and powered off down to the floors; the running jobs all complete; and
// the cost cookbook's queries (docs/rules.md) agree with the lab's power history.
func TestQuietClusterScalesDownToFloor(t *testing.T) {
	t.Parallel()
	l := startLab(t, "all", false)
	submit(t, l, lab.Light(40*time.Second), lab.Light(40*time.Second), lab.Heavy(40*time.Second))
	waitFloor(t, l, 5*time.Minute)
	waitJobsFinished(t, l, 3, time.Minute)
	checkCostQueries(t, l)
}
