package slurmcli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
