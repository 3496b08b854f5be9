package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/alecthomas/kingpin/v2"

	"github.com/rotahq/rota/alerts"
	"github.com/rotahq/rota/scaler/config"
)

// registerRules adds `rotactl rules generate [--config.file=F] [--output=FILE]`.
func registerRules(app *kingpin.Application, cmds map[string]command) {
	var file, output string
	rules := app.Command("rules", "Prometheus rules made from rota's policy.")
	c := rules.Command("generate", "Write rota's recording and alerting rules (Prometheus rule file YAML), with every threshold and window from the config's policy and pools.")
	c.Flag("config.file", "rota's config file; without it, the documented defaults.").StringVar(&file)
	c.Flag("output", "File to write the rules to (replaced whole); default standard output.").StringVar(&output)
	cmds[c.FullCommand()] = func(_ context.Context, e env) int {
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
				err = writeFileAtomic(output, b)
			}
		}
		if err != nil {
			fmt.Fprintln(e.stderr, "rotactl: rules generate:", err)
			return 1
		}
		return 0
	}
}

// writeFileAtomic replaces path with b through a temporary file in the same folder, so
// Prometheus never reads half a rule file.
func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
