package app

import (
	"io"
	"testing"

	"github.com/rotahq/rota/internal/doccmd"
)

// TestDocCommandsParse: every rota-exporter command line of README.md and docs/ (and of
// rota-lab-exporter, which takes the same flags) parses as rota-exporter parses it, and every
// mention names flags it has.
func TestDocCommandsParse(t *testing.T) {
	for _, program := range []string{"rota-exporter", "rota-lab-exporter"} {
		t.Run(program, func(t *testing.T) {
			app, _ := newApp(io.Discard, io.Discard)
			doccmd.Check(t, program, app.Model(), func(args []string) error {
				_, err := parse(args, io.Discard, io.Discard)
				return err
			})
		})
	}
}
