package slurm

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/scaler/config"
)

// maxWeight keeps weights well inside Slurm's 32-bit field.
const maxWeight = 1_000_000

// Weights is the Slurm weight of every node of the config, from its pool's hourly cost: the
// price in hundredths, at least 1. Slurm starts work on the lowest weight it can, so new work
// fills the cheapest servers first and the dear ones stay empty (and get powered off).
func Weights(cfg *config.Config) map[string]int {
	w := map[string]int{}
	for _, p := range cfg.Pools {
		weight := min(max(int(math.Round(p.Cost.PlanPerHour()*100)), 1), maxWeight)
		for _, n := range p.Nodes {
			w[n.Name] = weight
		}
	}
	return w
}

// SetWeights gives each node its weight with scontrol update, one call per weight. Slurm
// forgets weights set this way when slurmctld restarts or reads slurm.conf again: keep them
// in slurm.conf too (WeightLines).
func (m *Manager) SetWeights(ctx context.Context, weights map[string]int) error {
	for _, g := range byWeight(weights) {
		for _, n := range g.nodes {
			if n == "" || strings.ContainsAny(n, "[],= \"") {
				return fmt.Errorf("setting slurm weights: %w: bad node name %s", ErrUnknownNode, errtext.Quote(n))
			}
		}
		if _, err := m.opts.Run(ctx, "scontrol", "update", "nodename="+strings.Join(g.nodes, ","), "weight="+strconv.Itoa(g.weight)); err != nil {
			return fmt.Errorf("setting slurm weight %d on %s: %w", g.weight, strings.Join(g.nodes, ","), err)
		}
	}
	return nil
}

// WeightLines are the slurm.conf settings that keep the weights: one "NodeName=... Weight=N"
// per weight, lowest first, for the site to merge into its NodeName lines.
func WeightLines(weights map[string]int) []string {
	var out []string
	for _, g := range byWeight(weights) {
		out = append(out, fmt.Sprintf("NodeName=%s Weight=%d", strings.Join(g.nodes, ","), g.weight))
	}
	return out
}

type weightGroup struct {
	weight int
	nodes  []string
}

// byWeight groups nodes by weight, lowest first, each group's nodes by name.
func byWeight(weights map[string]int) []weightGroup {
	groups := map[int][]string{}
	for _, n := range slices.Sorted(maps.Keys(weights)) {
		groups[weights[n]] = append(groups[weights[n]], n)
	}
	out := make([]weightGroup, 0, len(groups))
	for w, nodes := range groups {
		out = append(out, weightGroup{weight: w, nodes: nodes})
	}
	slices.SortFunc(out, func(a, b weightGroup) int { return cmp.Compare(a.weight, b.weight) })
	return out
}
