package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rotahq/rota/internal/testutil"
)

// withSource is minimal with a telemetry source "fleet" (settings src) read by a second pool.
func withSource(src string) string {
	return minimal + `  - name: dgx
    telemetry_source: fleet
    profile: {cpu_cores: 8, gpus: 8}
    cost: {hourly: 20}
    nodes:
      - name: dgx1
        bmc: {protocol: ipmi, host: 127.0.0.2, username: admin, password_env: PW}
telemetry_sources:
  - name: fleet
` + src
}

func TestTelemetryDefaults(t *testing.T) {
	c, err := Parse([]byte(withSource("")))
	if err != nil {
		t.Fatal(err)
	}
	want := TelemetrySource{
		Name:         "fleet",
		NodeExporter: NodeExporterSeries{NodeLabel: NodeLabel{"instance", DefaultNodeRegex}, CPUSeconds: "node_cpu_seconds_total"},
		DCGM: DCGMSeries{NodeLabel: NodeLabel{"Hostname", DefaultNodeRegex}, Utilization: "DCGM_FI_DEV_GPU_UTIL",
			SMActive: "DCGM_FI_PROF_SM_ACTIVE", MemoryUsed: "DCGM_FI_DEV_FB_USED", MemoryFree: "DCGM_FI_DEV_FB_FREE",
			Power: "DCGM_FI_DEV_POWER_USAGE"},
	}
	if got := *c.TelemetrySource("fleet"); !reflect.DeepEqual(got, want) {
		t.Errorf("source = %+v\nwant %+v", got, want)
	}
	if c.Pools[0].TelemetrySource != RotaExporter || c.Policy.GPUSignal != SignalAuto {
		t.Errorf("pool source %q, gpu signal %q; want %s and %s", c.Pools[0].TelemetrySource, c.Policy.GPUSignal, RotaExporter, SignalAuto)
	}
	if got := c.SourcesInUse(); !reflect.DeepEqual(got, []string{RotaExporter, "fleet"}) {
		t.Errorf("SourcesInUse = %v", got)
	}
	if got := c.PoolsOf("fleet"); !reflect.DeepEqual(got, []string{"dgx"}) {
		t.Errorf("PoolsOf(fleet) = %v", got)
	}
	// A pool built in Go, without defaults, reads rota-exporter.
	if got := (&Pool{}).Source(); got != RotaExporter {
		t.Errorf("Source of a bare pool = %q", got)
	}
}

// The default node regex takes the host part of an instance label, or a whole host name, the
// way Prometheus's label_replace anchors it.
func TestDefaultNodeRegex(t *testing.T) {
	re := regexp.MustCompile(anchor(DefaultNodeRegex))
	for in, want := range map[string]string{"dgx1:9100": "dgx1", "dgx1": "dgx1", "gpu01.example.internal:9400": "gpu01.example.internal"} {
		if m := re.FindStringSubmatch(in); m == nil || m[1] != want {
			t.Errorf("%q -> %v, want %q", in, m, want)
		}
	}
}

func TestTelemetryValidation(t *testing.T) {
	cases := []struct {
		name  string
		yaml  string
		paths []string
	}{
		{"unknown source", strings.Replace(withSource(""), "telemetry_source: fleet", "telemetry_source: dcgm", 1),
			[]string{"pools[1].telemetry_source"}},
		{"bad signal", withSource("") + "policy: {gpu_signal: clocks}\n", []string{"policy.gpu_signal"}},
		{"built-in name and a second fleet", withSource("  - name: rota-exporter\n  - name: fleet\n"),
			[]string{"telemetry_sources[1].name", "telemetry_sources[2].name"}},
		{"labels, regexes and series", withSource(`    node_exporter: {node_label: "host-name", node_regex: "(", cpu_seconds: "node cpu"}
    dcgm_exporter: {node_regex: "[a-z]+", utilization: "1gpu", processes: "x-y"}
`), []string{"telemetry_sources[0].node_exporter.node_label", "telemetry_sources[0].node_exporter.node_regex",
			"telemetry_sources[0].node_exporter.cpu_seconds", "telemetry_sources[0].dcgm_exporter.node_regex",
			"telemetry_sources[0].dcgm_exporter.utilization", "telemetry_sources[0].dcgm_exporter.processes"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := problemList(t, tc.yaml, Daemon)
			for _, want := range tc.paths {
				if !slices.ContainsFunc(got, func(p Problem) bool { return p.Path == want }) {
					t.Errorf("no problem reported at %s; got:\n%v", want, got)
				}
			}
			if len(got) != len(tc.paths) {
				t.Errorf("%d problems, want %d:\n%v", len(got), len(tc.paths), got)
			}
		})
	}
}

// TestFuzzSeedParses keeps the telemetry seed of FuzzParse a valid config, so the fuzzer
// starts from one that reaches the telemetry checks.
func TestFuzzSeedParses(t *testing.T) {
	b := testutil.Testdata(t, "fuzz", "FuzzParse", "telemetry-sources")
	var seed string
	if _, err := fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[1], "[]byte(%q)", &seed); err != nil {
		t.Fatalf("seed file: %v", err)
	}
	if _, err := Parse([]byte(seed)); err != nil {
		t.Fatal(err)
	}
}

// TestDeployExampleTelemetrySource: the commented telemetry source of deploy/rota/rota.yml,
// uncommented, is a valid config whose pool gpu-h100 reads it.
func TestDeployExampleTelemetrySource(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "deploy", "rota", "rota.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	inBlock := false
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case l == "# telemetry_sources:":
			inBlock = true
			l = "telemetry_sources:"
		case inBlock && strings.HasPrefix(l, "#   "):
			l = strings.TrimPrefix(l, "# ")
		case strings.TrimSpace(l) == "# telemetry_source: fleet-exporters":
			l = strings.Replace(l, "# ", "", 1)
		default:
			inBlock = false
		}
		out = append(out, l)
	}
	c, err := Parse([]byte(strings.Join(out, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	src := c.TelemetrySource("fleet-exporters")
	if src == nil || c.Pool("gpu-h100").Source() != "fleet-exporters" {
		t.Fatalf("the uncommented example has no source fleet-exporters read by gpu-h100: %+v", c.TelemetrySources)
	}
	re := regexp.MustCompile(anchor(src.NodeExporter.Regex))
	if m := re.FindStringSubmatch("gpu01.example.internal:9100"); m == nil || m[1] != "gpu01" {
		t.Errorf("the example node_regex takes %v from gpu01.example.internal:9100, want gpu01", m)
	}
}
