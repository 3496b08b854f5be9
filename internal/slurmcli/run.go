package slurmcli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// ErrTimeout is wrapped by the error of a Slurm command that did not answer within the
// configured timeout (jobs.timeout).
var ErrTimeout = errors.New("slurm command timed out")

// Runner runs one Slurm command (sinfo, squeue, scontrol) and returns its standard output. An
// error says why it failed, with what the command printed on standard error.
type Runner func(ctx context.Context, name string, args ...string) ([]byte, error)

// Commands runs Slurm's own commands from BinDir (empty: PATH) with SLURM_CONF set to Conf
// (empty: Slurm's default), each bounded by Timeout.
type Commands struct {
	Conf    string
	BinDir  string
	Timeout time.Duration
}

// Run implements Runner.
func (c Commands) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	path := name
	if c.BinDir != "" {
		path = filepath.Join(c.BinDir, name)
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = os.Environ()
	if c.Conf != "" {
		cmd.Env = append(cmd.Env, "SLURM_CONF="+c.Conf)
	}
	// A command killed at the deadline must not keep Wait blocked on its pipes.
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, fmt.Errorf("%s: %w: %w", name, ErrTimeout, ctx.Err())
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%s: %w", name, ctx.Err())
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 512 {
			msg = msg[:512] + "..."
		}
		return nil, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, msg)
	}
	return stdout.Bytes(), nil
}
