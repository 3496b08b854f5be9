package slurmcli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/rotahq/rota/internal/output"
)

// ErrTimeout is wrapped by the error of a Slurm command that did not answer within the
// configured timeout (jobs.timeout).
var ErrTimeout = errors.New("slurm command timed out")

// Runner runs one Slurm command (sinfo, squeue, scontrol) and returns its standard output. An
// error says why it failed, with what the command printed on standard error.
type Runner func(ctx context.Context, name string, args ...string) ([]byte, error)

// MaxOutput caps what one Slurm command may print: past it the command's pipe is closed and
// the read fails. squeue prints most, one line per job (array tasks apart): the lab's recorded
// lines are under 200 bytes, and the design's largest queue is 100,000 jobs
// (BenchmarkQueue100k). At 256 MiB each of those may print 2.6 KiB, thirteen times a recorded
// line, for long comments, constraints, requested and allocated node lists; a million array
// tasks at the recorded length fit too. Only a runaway or hostile program prints more, and the
// parse holds about three times what it reads, so reading on would only grow rota's memory.
const MaxOutput = 256 << 20

// stderrTail is how much of a failed command's standard error its error quotes.
const stderrTail = 512

// Commands runs Slurm's own commands from BinDir (empty: PATH) with SLURM_CONF set to Conf
// (empty: Slurm's default), each bounded by Timeout and what it prints by MaxOutput (0:
// the constant MaxOutput).
type Commands struct {
	Conf      string
	BinDir    string
	Timeout   time.Duration
	MaxOutput int64
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
	limit := c.MaxOutput
	if limit <= 0 {
		limit = MaxOutput
	}
	stdout := &output.Capped{Max: limit}
	stderr := &output.Tail{Max: stderrTail}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, fmt.Errorf("%s: %w: %w", name, ErrTimeout, ctx.Err())
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%s: %w", name, ctx.Err())
	case stdout.Over():
		return nil, fmt.Errorf("%s: printed more than %d bytes, the cap on a Slurm command's output: %w", name, limit, output.ErrTooMuch)
	case err != nil:
		return nil, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}
