package main

import (
	"io"
	"testing"

	"github.com/rotahq/rota/internal/doccmd"
)

// TestDocCommandsParse: every rota command line of README.md and docs/ parses as rota parses
// its command line.
func TestDocCommandsParse(t *testing.T) {
	doccmd.Check(t, "rota", nil, func(args []string) error {
		_, err := parse(args, io.Discard, io.Discard)
		return err
	})
}
