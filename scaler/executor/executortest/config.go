package executortest

import (
	"testing"

	"github.com/rotahq/rota/scaler/config"
)

// fleetYAML is a small fleet: two cheap CPU servers and two expensive GPU servers.
const fleetYAML = `
server:
  webhook_auth_disabled: true
jobs: {adapter: slurm}
policy:
  drain: {timeout: 30m}
  failure: {backoff: 10m, max_backoff: 1h}
  disruption: {max_concurrent: 8}
pools:
  - name: cpu
    profile: {cpu_cores: 32}
    cost: {hourly: 1.5, currency: EUR}
    boot_timeout: 10m
    labels: {region: eu, department: platform}
    nodes:
      - {name: cpu01, bmc: {protocol: ipmi, host: b1, username: u, password_env: P}}
      - {name: cpu02, bmc: {protocol: ipmi, host: b2, username: u, password_env: P}}
  - name: gpu
    profile: {cpu_cores: 96, gpus: 8}
    cost: {hourly: 24, currency: EUR}
    boot_timeout: 10m
    labels: {region: eu, department: research}
    nodes:
      - {name: gpu01, bmc: {protocol: redfish, host: g1, username: u, password_env: P}}
      - {name: gpu02, bmc: {protocol: redfish, host: g2, username: u, password_env: P}}
`

// Config returns the test fleet's config, validated, after mod (may be nil) changed it.
func Config(t testing.TB, mod func(*config.Config)) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(fleetYAML))
	if err != nil {
		t.Fatal(err)
	}
	if mod != nil {
		mod(cfg)
	}
	return cfg
}

// NodeNames lists the config's nodes in inventory order.
func NodeNames(cfg *config.Config) []string {
	var out []string
	for _, p := range cfg.Pools {
		for _, n := range p.Nodes {
			out = append(out, n.Name)
		}
	}
	return out
}
