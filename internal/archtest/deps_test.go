package archtest

import (
	"testing"
)

// talksOut names what talks to the outside world: BMC libraries, processes, stores, HTTP
// clients and servers, the Prometheus query API, GPUs, and rota's own adapters, loop and
// binaries. A name ending in "/..." covers the package and every one below it, as in go list.
var talksOut = []string{
	"os/exec", "net/http/...", "net/rpc/...", "net/smtp",
	"github.com/bmc-toolbox/...", "github.com/stmcginnis/gofish/...", "go.etcd.io/...",
	"github.com/prometheus/client_golang/api/...", "github.com/prometheus/exporter-toolkit/...",
	"github.com/NVIDIA/go-nvml/...",
	module + "/bmc", module + "/bmc/redfishemu/...", module + "/cmd/...", module + "/exporter/...",
	module + "/lab/...", module + "/internal/slurmcli/...", module + "/scaler/api/...", module + "/scaler/executor/...",
	module + "/scaler/jobs/...", module + "/scaler/loop/...", module + "/scaler/promfacts/...",
	module + "/scaler/store/...",
}

// httpClientConfig is the one door through which net/http comes in: config.Prometheus holds
// prometheus/common's HTTPClientConfig (auth, TLS, proxy), a type the decision core carries and
// never calls. What that package links is not looked at; anything else that brings net/http
// in fails.
const httpClientConfig = "github.com/prometheus/common/config"

func isIO(path string) bool {
	for _, p := range talksOut {
		if matches(p, path) {
			return true
		}
	}
	return false
}

// TestDecisionCoreLinksNoIO: the planner is pure by construction, not by intent. The config,
// the domain types, what rota learns, the planner and the simulator (and the trace reader it
// replays) link no package that talks to the outside; net/http only as far as
// prometheus/common's client config type brings it.
func TestDecisionCoreLinksNoIO(t *testing.T) {
	g := load(t)
	for _, root := range []string{"scaler/config", "scaler/fleet", "scaler/learn", "scaler/plan", "scaler/sim", "scaler/sim/trace"} {
		t.Run(root, func(t *testing.T) {
			root := module + "/" + root
			if _, ok := g[root]; !ok {
				t.Fatalf("%s is not a package of the module", root)
			}
			stop := func(p string) bool { return p == httpClientConfig || isIO(p) }
			for _, dep := range g.deps(root, stop) {
				if isIO(dep) {
					t.Errorf("links %s: %s", short(dep), g.path(root, dep))
				}
			}
		})
	}
}

// TestExporterLinksNoScaler: rota-exporter runs on every server and knows nothing of the
// scaler; what both need of Slurm lives in internal/slurmcli, what both need of job classes
// in internal/jobclass.
func TestExporterLinksNoScaler(t *testing.T) {
	g := load(t)
	for _, root := range []string{"exporter", "exporter/app", "cmd/rota-exporter"} {
		root := module + "/" + root
		scaler := func(p string) bool { return matches(module+"/scaler/...", p) }
		for _, dep := range g.deps(root, scaler) {
			if scaler(dep) {
				t.Errorf("%s links %s: %s", short(root), short(dep), g.path(root, dep))
			}
		}
	}
}
