package e2e

import (
	"testing"
	"time"

	"github.com/rotahq/rota/lab"
)

// TestKubernetesLabWakesTheRightTier: the lab's Kubernetes profile (a real control plane, rota
// under the role of deploy/kubernetes/rbac.yaml, the lab playing the kubelets) with only the
// CPU floor on: light pods the scheduler cannot place wake CPU servers and no GPU server; GPU
// pods then wake GPU servers and no CPU server; every pod runs to its end.
func TestKubernetesLabWakesTheRightTier(t *testing.T) {
	l := startLab(t, "floor", false, func(o *lab.Options) { o.Profile = lab.ProfileKubernetes })

	t0 := time.Now()
	submit(t, l, repeat(6, lab.Light(20*time.Second))...)
	waitJobsFinished(t, l, 6, 4*time.Minute)
	cpu, gpu := tiers(l, poweredOnSince(t, l, t0))
	if len(cpu) == 0 || len(gpu) != 0 {
		t.Errorf("light pods powered on CPU servers %v and GPU servers %v; want CPU servers only", cpu, gpu)
	}

	t1 := time.Now()
	submit(t, l, repeat(3, lab.Heavy(20*time.Second))...)
	waitJobsFinished(t, l, 9, 4*time.Minute)
	cpu, gpu = tiers(l, poweredOnSince(t, l, t1))
	if len(gpu) == 0 || len(cpu) != 0 {
		t.Errorf("GPU pods powered on GPU servers %v and CPU servers %v; want GPU servers only", gpu, cpu)
	}
}
