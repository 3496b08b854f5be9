package e2e

import (
	"testing"

	"github.com/rotahq/rota/lab"
)

// TestKubernetesLabWakesTheRightTier is TestBacklogWakesTheRightTier on the lab's Kubernetes
// profile (a real control plane, rota under the role of deploy/kubernetes/rbac.yaml, the lab
// playing the kubelets), with only the CPU floor on: light pods the scheduler cannot place
// wake CPU servers and no GPU server; GPU pods then wake GPU servers and no CPU server; every
// pod runs to its end.
func TestKubernetesLabWakesTheRightTier(t *testing.T) {
	t.Parallel()
	wakesTheRightTier(t, startLab(t, "floor", false, func(o *lab.Options) { o.Profile = lab.ProfileKubernetes }), "pods")
}
