package kubernetes_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/rotahq/rota/internal/testutil"
)

// TestClientStaysWhereItBelongs: the Kubernetes libraries are linked by rota's
// adapter alone. The exporter, the planner, the config and the fleet types link none, and the
// adapter's parser (kubeview) links no client.
func TestClientStaysWhereItBelongs(t *testing.T) {
	deps := func(pkg string) string {
		t.Helper()
		cmd := exec.Command("go", "list", "-deps", pkg)
		cmd.Dir = testutil.RepoRoot(t)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		return string(out)
	}
	if !strings.Contains(deps("./cmd/rota"), "k8s.io/client-go/kubernetes\n") {
		t.Fatal("rota does not link client-go: the list does not look like a dependency list")
	}
	for pkg, banned := range map[string]string{
		"./cmd/rota-exporter":               "k8s.io/",
		"./scaler/plan":                     "k8s.io/",
		"./scaler/config":                   "k8s.io/",
		"./scaler/fleet":                    "k8s.io/",
		"./scaler/jobs/kubernetes/kubeview": "k8s.io/client-go",
	} {
		for _, dep := range strings.Split(deps(pkg), "\n") {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("%s links %s", pkg, dep)
			}
		}
	}
}
