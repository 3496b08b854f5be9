package inventory

import (
	"encoding/json"
	"fmt"

	"github.com/rotahq/rota/alerts"
	"github.com/rotahq/rota/scaler/config"
)

// TargetGroup is one entry of a file_sd JSON file.
type TargetGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// Targets returns one group per rota-exporter node, in the config's order. Each carries node,
// pool, tier (the pool's name: a pool is a tier), fleet when prometheus.fleet is set, and,
// when set on the node or its pool, region and department. A node without an exporter address is an error: it would be a server rota
// cannot see. The pools that read another telemetry source (node_exporter, dcgm-exporter) run
// no rota-exporter and have no target here: their exporters are scraped as the fleet already
// scrapes them.
func Targets(cfg *config.Config) ([]TargetGroup, error) {
	var groups []TargetGroup
	for i := range cfg.Pools {
		p := &cfg.Pools[i]
		if p.Source() != config.RotaExporter {
			continue
		}
		for j := range p.Nodes {
			ref := config.NodeRef{Pool: p, Node: &p.Nodes[j]}
			if ref.Node.Exporter == "" {
				return nil, fmt.Errorf("pools[%d].nodes[%d] (%s): no exporter address", i, j, ref.Node.Name)
			}
			labels := map[string]string{"node": ref.Node.Name, "pool": p.Name, "tier": p.Name}
			if f := cfg.Prometheus.Fleet; f != "" {
				labels[alerts.FleetLabel] = f
			}
			for _, key := range []string{"region", "department"} {
				if v := ref.Label(key); v != "" {
					labels[key] = v
				}
			}
			groups = append(groups, TargetGroup{Targets: []string{ref.Node.Exporter}, Labels: labels})
		}
	}
	return groups, nil
}

// Marshal renders groups as file_sd JSON: one group per line, so a diff shows the servers that
// changed.
func Marshal(groups []TargetGroup) ([]byte, error) {
	out := []byte("[\n")
	for i, g := range groups {
		b, err := json.Marshal(g)
		if err != nil {
			return nil, fmt.Errorf("encoding targets: %w", err)
		}
		out = append(out, "  "...)
		out = append(out, b...)
		if i < len(groups)-1 {
			out = append(out, ',')
		}
		out = append(out, '\n')
	}
	return append(out, "]\n"...), nil
}
