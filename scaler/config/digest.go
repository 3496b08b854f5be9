package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// FleetDigest is a short digest of what decides what rota does to the fleet: the policy, the
// classes, the pools (nodes and their BMCs included), the accounting, the telemetry sources,
// the BMC limits and the fleet label rota's queries select (prometheus.fleet: two rotas
// selecting different labels read different servers' telemetry; left out where empty, so
// configs without it keep their digest). Rotas of one fleet in HA publish it, so a follower whose config would
// change the fleet's behaviour at a failover can say so. What each rota may set for its own
// host (the listener, the store's connection, Prometheus' URL, the job manager's commands) is
// left out. Secrets never enter it: a config holds only where they are.
func (c *Config) FleetDigest() string {
	b, err := json.Marshal(struct {
		Policy           Policy
		Classes          []Class
		Pools            []Pool
		Accounting       Accounting
		TelemetrySources []TelemetrySource
		BMC              BMCLimits
		PrometheusFleet  string `json:",omitempty"`
	}{c.Policy, c.Classes, c.Pools, c.Accounting, c.TelemetrySources, c.BMC, c.Prometheus.Fleet})
	if err != nil {
		// Every field is plain data; a type that cannot be marshalled is a programming error.
		panic("config: digest: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}
