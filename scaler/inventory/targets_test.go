package inventory

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/config"
)

var update = flag.Bool("update", false, "rewrite the golden file deploy/prometheus/targets/rota.json")

func exampleConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Load(filepath.Join(testutil.RepoRoot(t), "deploy", "rota", "rota.yml"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestExampleGolden: the targets of deploy/rota/rota.yml, byte for byte, are the example file
// deploy/prometheus installs as targets/rota.json, the file `rotactl inventory targets
// --output=/etc/prometheus/targets/rota.json` then replaces (an example under another name
// would stay beside it, and Prometheus would scrape its servers too).
func TestExampleGolden(t *testing.T) {
	groups, err := Targets(exampleConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Marshal(groups)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join(testutil.RepoRoot(t), "deploy", "prometheus", "targets", "rota.json")
	checkGolden(t, golden, got)
}

// TestFleetGolden: with prometheus.fleet set, the example config's targets each carry the
// fleet, byte for byte as testdata/fleet.json (-update rewrites it).
func TestFleetGolden(t *testing.T) {
	cfg := exampleConfig(t)
	cfg.Prometheus.Fleet = "site-a"
	groups, err := Targets(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Marshal(groups)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "fleet.json")
	checkGolden(t, golden, got)
}

func TestTargetsLabels(t *testing.T) {
	pool := func(labels map[string]string, nodes ...config.Node) config.Pool {
		return config.Pool{Name: "gpu", Labels: labels, Nodes: nodes}
	}
	tests := []struct {
		name    string
		pools   []config.Pool
		fleet   string // prometheus.fleet
		want    []TargetGroup
		wantErr string
	}{
		{
			name:  "pool labels apply to the node",
			pools: []config.Pool{pool(map[string]string{"region": "eu", "department": "ml"}, config.Node{Name: "g1", Exporter: "g1:10090"})},
			want: []TargetGroup{{Targets: []string{"g1:10090"}, Labels: map[string]string{
				"node": "g1", "pool": "gpu", "tier": "gpu", "region": "eu", "department": "ml"}}},
		},
		{
			name: "a node's own label wins",
			pools: []config.Pool{pool(map[string]string{"region": "eu", "department": "ml"},
				config.Node{Name: "g1", Exporter: "g1:10090", Labels: map[string]string{"department": "infra"}})},
			want: []TargetGroup{{Targets: []string{"g1:10090"}, Labels: map[string]string{
				"node": "g1", "pool": "gpu", "tier": "gpu", "region": "eu", "department": "infra"}}},
		},
		{
			name:  "unset region and department are left out",
			pools: []config.Pool{pool(nil, config.Node{Name: "g1", Exporter: "g1:10090", Labels: map[string]string{"rack": "r7"}})},
			want: []TargetGroup{{Targets: []string{"g1:10090"}, Labels: map[string]string{
				"node": "g1", "pool": "gpu", "tier": "gpu"}}},
		},
		{
			name: "a pool reading another telemetry source has no targets",
			pools: []config.Pool{pool(nil, config.Node{Name: "g1", Exporter: "g1:10090"}),
				{Name: "dgx", TelemetrySource: "fleet", Nodes: []config.Node{{Name: "dgx1"}}}},
			want: []TargetGroup{{Targets: []string{"g1:10090"}, Labels: map[string]string{
				"node": "g1", "pool": "gpu", "tier": "gpu"}}},
		},
		{
			name:  "prometheus.fleet is each target's fleet",
			pools: []config.Pool{pool(map[string]string{"region": "eu"}, config.Node{Name: "g1", Exporter: "g1:10090"})},
			fleet: "site-a",
			want: []TargetGroup{{Targets: []string{"g1:10090"}, Labels: map[string]string{
				"node": "g1", "pool": "gpu", "tier": "gpu", "region": "eu", "fleet": "site-a"}}},
		},
		{
			name:    "a node without an exporter is an error",
			pools:   []config.Pool{pool(nil, config.Node{Name: "g1", Exporter: "g1:10090"}, config.Node{Name: "g2"})},
			wantErr: "pools[0].nodes[1] (g2): no exporter address",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Targets(&config.Config{Pools: tt.pools, Prometheus: config.Prometheus{Fleet: tt.fleet}})
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// checkGolden compares got with the golden file (written instead with -update).
func checkGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("targets differ from %s (run with -update to accept):\n%s", golden, got)
	}
}
