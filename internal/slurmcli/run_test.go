package slurmcli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/output"
)

// TestCommandsTimeout: a Slurm command that does not answer within the timeout is ended and
// reported as ErrTimeout.
func TestCommandsTimeout(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\nexec sleep 30\n"
	if err := os.WriteFile(filepath.Join(dir, "sinfo"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	run := Commands{BinDir: dir, Timeout: 100 * time.Millisecond}.Run
	if _, err := run(context.Background(), "sinfo"); !errors.Is(err, ErrTimeout) {
		t.Fatalf("got %v, want ErrTimeout", err)
	}
}

// TestCommandsFailure: a failing command's error carries what it printed on stderr, and
// SLURM_CONF reaches it.
func TestCommandsFailure(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"no controller for $SLURM_CONF\" >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "squeue"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Commands{BinDir: dir, Conf: "/etc/lab.conf", Timeout: 10 * time.Second}.Run(context.Background(), "squeue")
	if err == nil || !strings.Contains(err.Error(), "no controller for /etc/lab.conf") {
		t.Fatalf("got %v", err)
	}
}

// TestCommandsOutputCap: a command that prints past the cap is stopped and its read fails with
// an error naming the command and the cap; one that prints a flood on stderr before it fails
// is quoted by its last bytes only.
func TestCommandsOutputCap(t *testing.T) {
	dir := t.TempDir()
	for name, script := range map[string]string{
		"squeue": "#!/bin/sh\nexec yes 1\n",
		"sinfo":  "#!/bin/sh\nhead -c 1000000 /dev/zero | tr '\\0' x >&2\necho >&2\necho 'sinfo: error: the last line' >&2\nexit 1\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := Commands{BinDir: dir, Timeout: 10 * time.Second, MaxOutput: 4096}.Run
	out, err := run(context.Background(), "squeue")
	if !errors.Is(err, output.ErrTooMuch) || !strings.Contains(err.Error(), "squeue: printed more than 4096 bytes") || out != nil {
		t.Fatalf("got %d bytes, %v; want output.ErrTooMuch naming squeue and 4096 bytes", len(out), err)
	}
	_, err = run(context.Background(), "sinfo")
	if err == nil || !strings.HasSuffix(err.Error(), "sinfo: error: the last line") || len(err.Error()) > 1024 {
		t.Fatalf("got an error of %d bytes ending %q", len(err.Error()), err.Error()[max(0, len(err.Error())-80):])
	}
}
