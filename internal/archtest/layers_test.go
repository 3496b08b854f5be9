package archtest

import (
	"fmt"
	"testing"
)

// layer is one floor of the design: its packages may import their own floor's and those
// below, never one above.
type layer struct {
	name     string
	packages []string // patterns, as in go list ("x/..." is x and every package below it)
}

// layers are the design's floors, from the ground up (ARCHITECTURE: config and fleet at the
// bottom, then the planner, then the executor and the adapters, then the loop and the API).
// A new package must be placed here; the test says so.
var layers = []layer{
	{"shared helpers", []string{
		"bmc/spec", "internal/archtest", "internal/atomicfile", "internal/clock", "internal/cmdline", "internal/doccmd", "internal/errtext",
		"internal/etcdtest", "internal/freeport", "internal/ipmisim", "internal/jobclass", "internal/kubelab",
		"internal/flagname", "internal/logflags", "internal/output", "internal/secretfile",
		"internal/size", "internal/slurmlab", "internal/strictjson", "internal/testutil", "internal/webconfig",
	}},
	{"config", []string{"scaler/config"}},
	{"fleet", []string{"scaler/fleet", "scaler/learn"}},
	{"planner", []string{"scaler/plan", "alerts", "scaler/cost", "scaler/inventory", "scaler/sim/trace"}},
	{"adapters", []string{
		"bmc", "bmc/redfishemu", "exporter", "exporter/gpufake", "internal/slurmcli/...",
		"scaler/cost/report", "scaler/jobs/...", "scaler/promfacts", "scaler/store/...",
	}},
	{"executor", []string{"scaler/executor/..."}},
	{"loop and API", []string{"scaler/loop", "scaler/api/...", "scaler/ha", "scaler/sim", "scaler/sim/report"}},
	{"binaries' libraries", []string{"exporter/app", "internal/wire", "lab"}},
	{"binaries and their tests", []string{"cmd/...", "deploy", "e2e"}},
}

// floor returns the index of the layer that holds package path (short form), or -1.
func floor(path string) int {
	for i, l := range layers {
		for _, p := range l.packages {
			if matches(p, path) {
				return i
			}
		}
	}
	return -1
}

// TestLayering: no package imports one above it in the design's layering, and every package
// has its place.
func TestLayering(t *testing.T) {
	g := load(t)
	for _, path := range g.own() {
		from := short(path)
		f := floor(from)
		if f < 0 {
			t.Errorf("%s has no layer: place it in layers (internal/archtest/layers_test.go)", from)
			continue
		}
		for _, imp := range g[path].Imports {
			if !matches(module+"/...", imp) {
				continue
			}
			to := short(imp)
			ti := floor(to)
			if ti <= f {
				continue
			}
			t.Errorf("%s (%s) imports %s (%s): a package imports only its own layer and those below", from, layers[f].name, to, describe(ti))
		}
	}
}

func describe(i int) string {
	if i < 0 {
		return "no layer"
	}
	return fmt.Sprintf("%s, above", layers[i].name)
}
