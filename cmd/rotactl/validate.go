package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/rotahq/rota/scaler/config"
)

// registerValidate adds `rotactl validate --config.file`.
func registerValidate(app *kingpin.Application, cmds map[string]command) {
	var file string
	c := app.Command("validate", "Load and validate a config file offline; print every problem with its path (exit 1), or a summary (exit 0).")
	c.Flag("config.file", "rota's config file.").Default("/etc/rota/rota.yml").StringVar(&file)
	cmds[c.FullCommand()] = func(_ context.Context, e env) int {
		cfg, err := config.Load(file)
		if err != nil {
			// A *config.ValidationError names every problem with its path, one per line.
			fmt.Fprintln(e.stderr, "rotactl:", err)
			return 1
		}
		writeSummary(e.stdout, file, cfg)
		return 0
	}
}

// writeSummary says what the valid file describes.
func writeSummary(w io.Writer, file string, cfg *config.Config) {
	servers := 0
	pools := make([]string, 0, len(cfg.Pools))
	for _, p := range cfg.Pools {
		servers += len(p.Nodes)
		pools = append(pools, fmt.Sprintf("%s (%d)", p.Name, len(p.Nodes)))
	}
	classes := make([]string, 0, len(cfg.Classes))
	for _, c := range cfg.Classes {
		classes = append(classes, c.Name)
	}
	fmt.Fprintf(w, "%s: valid\n", file)
	fmt.Fprintf(w, "  %d servers in %d pools: %s\n", servers, len(cfg.Pools), strings.Join(pools, ", "))
	fmt.Fprintf(w, "  classes: %s\n", strings.Join(classes, ", "))
	fmt.Fprintf(w, "  jobs adapter: %s; dry run: %s; %d schedule(s), %d quota(s)\n",
		cfg.Jobs.Adapter, yesNo(cfg.Policy.DryRun), len(cfg.Policy.Schedules), len(cfg.Policy.Quotas))
}
