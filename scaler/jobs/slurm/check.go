package slurm

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/scaler/config"
)

// CheckProfiles compares what each pool's profile says its servers offer with what Slurm
// reports for each of its nodes: the node is known, its CPUs, memory, GPUs and GPU type, and
// its partitions and features include the profile's. It returns one line per difference,
// "pool/node: ..."; none when they agree. The planner matches work to pools by the profile, so
// a difference means rota may wake a server a job cannot use, or leave one it could.
func CheckProfiles(cfg *config.Config, nodes []Node) []string {
	byName := map[string]Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	var out []string
	for _, p := range cfg.Pools {
		pr := p.Profile
		for _, cn := range p.Nodes {
			add := func(format string, args ...any) {
				out = append(out, p.Name+"/"+cn.Name+": "+fmt.Sprintf(format, args...))
			}
			n, ok := byName[cn.Name]
			if !ok {
				add("not a node of slurm")
				continue
			}
			if n.CPUs != pr.CPUCores {
				add("slurm has %d cpus, the profile %d", n.CPUs, pr.CPUCores)
			}
			if mib := int(pr.Memory >> 20); pr.Memory > 0 && n.MemoryMB > mib {
				add("slurm has %d MiB of memory, more than the profile's %d", n.MemoryMB, mib)
			}
			if n.GPUs != pr.GPUs {
				add("slurm has %d gpus, the profile %d", n.GPUs, pr.GPUs)
			}
			if n.GPUType != "" && !strings.Contains(strings.ToLower(pr.GPUModel), strings.ToLower(n.GPUType)) {
				add("slurm's gpu type %s is not in the profile's gpu_model %s", errtext.Quote(n.GPUType), errtext.Quote(pr.GPUModel))
			}
			for _, part := range pr.Partitions {
				if !slices.Contains(n.Partitions, part) {
					add("not in partition %s (slurm: %s)", part, strings.Join(n.Partitions, ","))
				}
			}
			for _, f := range pr.Features {
				if !slices.ContainsFunc(n.Features, func(s string) bool { return strings.EqualFold(s, f) }) {
					add("lacks feature %s (slurm: %s)", f, strings.Join(n.Features, ","))
				}
			}
		}
	}
	return out
}

// Check reads every node and compares it with the config's profiles (CheckProfiles).
func (m *Manager) Check(ctx context.Context, cfg *config.Config) ([]string, error) {
	nodes, err := m.cli.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	return CheckProfiles(cfg, nodes), nil
}
