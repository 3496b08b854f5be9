package main

import (
	"io"
	"testing"

	"github.com/rotahq/rota/internal/doccmd"
)

// TestDocCommandsParse: every rota-lab command line of README.md and docs/ parses as rota-lab
// parses it, and every mention names subcommands and flags it has.
func TestDocCommandsParse(t *testing.T) {
	app, _ := newApp(io.Discard, io.Discard)
	doccmd.Check(t, "rota-lab", app.Model(), func(args []string) error {
		app, _ := newApp(io.Discard, io.Discard)
		return doccmd.ParseArgs(app, args)
	})
}
