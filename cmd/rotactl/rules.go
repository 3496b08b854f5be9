package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/alecthomas/kingpin/v2"

	"github.com/rotahq/rota/alerts"
	"github.com/rotahq/rota/internal/atomicfile"
	"github.com/rotahq/rota/scaler/config"
)

// registerRules adds `rotactl rules generate [--config.file=F] [--output=FILE] [--tests.output=DIR]`.
func registerRules(app *kingpin.Application, cmds map[string]command) {
	var file, output, tests string
	rules := app.Command("rules", "Prometheus rules made from rota's policy.")
	c := rules.Command("generate", "Write rota's recording and alerting rules (Prometheus rule file YAML), with every threshold and window from the config's policy and pools.")
	c.Flag("config.file", "rota's config file; without it, the documented defaults.").StringVar(&file)
	c.Flag("output", "File to write the rules to (replaced whole); default standard output.").StringVar(&output)
	c.Flag("tests.output", "Folder to write promtool tests of the alerts into, derived from the same policy (promtool test rules DIR/*.test.yml); needs --output.").StringVar(&tests)
	cmds[c.FullCommand()] = func(_ context.Context, e env) int {
		if tests != "" && output == "" {
			fmt.Fprintln(e.stderr, "rotactl: rules generate: --tests.output needs --output (the tests read the rule file)")
			return 2
		}
		cfg, source := config.Default(), "defaults"
		if file != "" {
			var err error
			if cfg, err = config.Load(file); err != nil {
				fmt.Fprintln(e.stderr, "rotactl:", err)
				return 1
			}
			source = file
		}
		b, err := alerts.Generate(cfg, source)
		if err == nil {
			if output == "" {
				_, err = e.stdout.Write(b)
			} else {
				err = atomicfile.Write(output, b)
			}
		}
		if err == nil && tests != "" {
			err = writeRuleTests(cfg, output, tests)
		}
		if err != nil {
			fmt.Fprintln(e.stderr, "rotactl: rules generate:", err)
			return 1
		}
		if note := alerts.ScrapeNote(cfg); note != "" {
			fmt.Fprintln(e.stderr, "rotactl: warning:", note)
		}
		return 0
	}
}

// writeRuleTests writes the promtool tests of the rules at rulesFile into dir (made if missing).
func writeRuleTests(cfg *config.Config, rulesFile, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	abs, err := filepath.Abs(rulesFile)
	if err != nil {
		return err
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(absDir, abs)
	if err != nil {
		return err
	}
	files, err := alerts.GenerateTests(cfg, rel)
	if err != nil {
		return err
	}
	for name, b := range files {
		if err := atomicfile.Write(filepath.Join(dir, name), b); err != nil {
			return err
		}
	}
	return nil
}
