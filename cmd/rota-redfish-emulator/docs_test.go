package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rotahq/rota/internal/doccmd"
)

// TestDocCommandsParse: every rota-redfish-emulator command line of README.md and docs/
// parses as the emulator parses it, in a folder that holds the config file it names
// (--config.file must name a file that exists).
func TestDocCommandsParse(t *testing.T) {
	dir := t.TempDir()
	app, _ := newApp()
	doccmd.Check(t, "rota-redfish-emulator", app.Model(), func(args []string) error {
		args = append([]string(nil), args...)
		for i, a := range args {
			if file, ok := strings.CutPrefix(a, "--config.file="); ok && !filepath.IsAbs(file) {
				args[i] = "--config.file=" + filepath.Join(dir, file)
				if err := os.WriteFile(filepath.Join(dir, file), nil, 0o600); err != nil {
					return err
				}
			}
		}
		app, _ := newApp()
		return doccmd.ParseArgs(app, args)
	})
}
