package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSlurmWeights: the weights follow the pools' hourly cost, cheapest first, as slurm.conf
// settings (applying them on a real cluster is TestRealSlurm's).
func TestSlurmWeights(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "rota.yml")
	if err := os.WriteFile(cfg, []byte(`server: {webhook_auth_disabled: true}
jobs: {adapter: slurm}
pools:
  - name: gpu
    profile: {cpu_cores: 64, gpus: 8}
    cost: {hourly: 24}
    nodes: [{name: g1, bmc: {protocol: ipmi, host: h, username: u, password_env: P}}]
  - name: cpu
    profile: {cpu_cores: 32}
    cost: {hourly: 0.14}
    nodes:
      - {name: c1, bmc: {protocol: ipmi, host: h, username: u, password_env: P}}
      - {name: c2, bmc: {protocol: ipmi, host: h, username: u, password_env: P}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := rotactlInProcess("slurm", "--config.file", cfg, "weights")
	if want := "NodeName=c1,c2 Weight=14\nNodeName=g1 Weight=2400\n"; code != 0 || out != want {
		t.Fatalf("exit %d, stdout %q (stderr %q), want %q", code, out, errOut, want)
	}
}
