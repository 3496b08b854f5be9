package main

import (
	"context"
	"fmt"

	"github.com/alecthomas/kingpin/v2"

	"github.com/rotahq/rota/internal/atomicfile"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/inventory"
)

// registerInventory adds `rotactl inventory targets --config.file [--output]`.
func registerInventory(app *kingpin.Application, cmds map[string]command) {
	var file, output string
	inv := app.Command("inventory", "rota's inventory for other tools.")
	c := inv.Command("targets", "Write Prometheus file-based service discovery JSON: one target per server (its exporter), labelled node, pool, tier, region, department, and fleet where prometheus.fleet is set.")
	c.Flag("config.file", "rota's config file.").Default("/etc/rota/rota.yml").StringVar(&file)
	c.Flag("output", "File to write, replaced atomically (for file_sd_configs, e.g. /etc/prometheus/targets/rota.json); standard output when unset.").StringVar(&output)
	cmds[c.FullCommand()] = func(_ context.Context, e env) int {
		cfg, err := config.Load(file)
		if err != nil {
			fmt.Fprintln(e.stderr, "rotactl:", err)
			return 1
		}
		groups, err := inventory.Targets(cfg)
		if err == nil {
			err = writeTargets(e, output, groups)
		}
		if err != nil {
			fmt.Fprintln(e.stderr, "rotactl:", err)
			return 1
		}
		return 0
	}
}

func writeTargets(e env, output string, groups []inventory.TargetGroup) error {
	b, err := inventory.Marshal(groups)
	if err != nil {
		return err
	}
	if output == "" {
		_, err = e.stdout.Write(b)
		return err
	}
	return atomicfile.Write(output, b)
}
