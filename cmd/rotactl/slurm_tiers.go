package main

import (
	"context"
	"fmt"

	"github.com/alecthomas/kingpin/v2"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/jobs/slurm"
)

// registerSlurmTiers adds `rotactl slurm weights [--apply]` and `rotactl slurm check`: the
// node weights that make Slurm fill the cheapest servers first, and whether the pools'
// profiles say what Slurm reports of their nodes.
func registerSlurmTiers(s *kingpin.CmdClause, f *powerFlags, cmds map[string]command) {
	var apply bool
	w := s.Command("weights", "Print the slurm.conf Weight= settings that make Slurm fill the cheapest pools first (from each pool's hourly cost); with --apply, also set them now with scontrol (Slurm forgets those at its next restart or reconfigure: keep them in slurm.conf).")
	w.Flag("apply", "Set the weights in the running Slurm too.").BoolVar(&apply)
	cmds[w.FullCommand()] = func(ctx context.Context, e env) int {
		cfg, m, code := slurmFromConfig(e, f)
		if m == nil {
			return code
		}
		weights := slurm.Weights(cfg)
		for _, l := range slurm.WeightLines(weights) {
			fmt.Fprintln(e.stdout, l)
		}
		if !apply {
			return 0
		}
		if err := m.SetWeights(ctx, weights); err != nil {
			fmt.Fprintln(e.stderr, "rotactl: slurm weights:", err)
			return 1
		}
		return 0
	}
	c := s.Command("check", "Compare each pool's profile (cpu_cores, memory, gpus, gpu_model, partitions, features) with what Slurm reports of its nodes; exit 1 on any difference.")
	cmds[c.FullCommand()] = func(ctx context.Context, e env) int {
		cfg, m, code := slurmFromConfig(e, f)
		if m == nil {
			return code
		}
		problems, err := m.Check(ctx, cfg)
		if err != nil {
			fmt.Fprintln(e.stderr, "rotactl: slurm check:", err)
			return 2
		}
		for _, p := range problems {
			fmt.Fprintln(e.stdout, p)
		}
		if len(problems) > 0 {
			return 1
		}
		fmt.Fprintln(e.stdout, "every pool's profile agrees with slurm")
		return 0
	}
}

// slurmFromConfig loads the config and builds its Slurm adapter (exit code 2 on failure).
func slurmFromConfig(e env, f *powerFlags) (*config.Config, *slurm.Manager, int) {
	cfg, err := config.Load(f.configFile)
	if err != nil {
		fmt.Fprintln(e.stderr, "rotactl:", err)
		return nil, nil, 2
	}
	return cfg, slurm.NewFromConfig(cfg, f.log.New(e.stderr).WithField("component", "slurm")), 0
}
