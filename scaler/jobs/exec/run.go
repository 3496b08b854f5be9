package exec

import (
	"context"
	"errors"
	"fmt"
	osexec "os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/rotahq/rota/internal/output"
)

// Error is a program that failed: it could not start, exited non-zero, ran past its timeout,
// printed too much or printed something that is not the documented JSON.
type Error struct {
	// Command is the config key (state_command, demand_command, ...); Program its first word.
	Command string
	Program string
	// Problem says what was wrong, for humans.
	Problem string
	Err     error
}

func (e *Error) Error() string {
	return fmt.Sprintf("jobs exec %s (%s): %s", e.Command, e.Program, e.Problem)
}

func (e *Error) Unwrap() error { return e.Err }

// stderrTail is how much of a failed program's stderr its error quotes.
const stderrTail = 512

// program is one configured command.
type program struct {
	key  string   // config key, e.g. state_command
	argv []string // split command line
}

// run runs p with extra arguments, bounded by timeout, and returns its stdout.
func (m *Manager) run(ctx context.Context, p program, extra ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	args := append(append([]string{}, p.argv[1:]...), extra...)
	cmd := osexec.CommandContext(ctx, p.argv[0], args...)
	// Its own process group, killed whole: a script's children die with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	stdout := &output.Capped{Max: m.maxOutput}
	stderr := &output.Tail{Max: stderrTail}
	cmd.Stdout, cmd.Stderr = stdout, stderr

	err := cmd.Run()
	fail := func(problem string, err error) error {
		return &Error{Command: p.key, Program: p.argv[0], Problem: problem, Err: err}
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && err != nil:
		return nil, fail(fmt.Sprintf("no answer within %s (killed)", m.timeout), ctx.Err())
	case ctx.Err() != nil && err != nil:
		return nil, fail("cancelled", ctx.Err())
	case stdout.Over():
		return nil, fail(fmt.Sprintf("printed more than %d bytes", m.maxOutput), output.ErrTooMuch)
	case err != nil:
		msg := err.Error()
		if s := strings.TrimSpace(stderr.String()); s != "" {
			msg += ": " + lastLine(s)
		}
		return nil, fail(msg, err)
	}
	return stdout.Bytes(), nil
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
