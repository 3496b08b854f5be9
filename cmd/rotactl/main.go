// Command rotactl is rota's operator CLI. Each verb lives in its own file and registers its
// kingpin command in commands() below.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"

	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/flagname"
)

// env is what every verb gets: its output streams, whether stderr is a terminal, and the clock.
type env struct {
	stdout, stderr io.Writer
	stderrTTY      bool
	clock          clock.Real
}

// command is a parsed verb ready to run; it returns the process exit code.
type command func(ctx context.Context, e env) int

// commands registers every verb on app; the one the user chose is returned by full name.
func commands(app *kingpin.Application) map[string]command {
	cmds := map[string]command{}
	registerPower(app, cmds)
	registerValidate(app, cmds)
	registerStatus(app, cmds)
	registerExplain(app, cmds)
	registerPlan(app, cmds)
	registerPin(app, cmds)
	registerMaintenance(app, cmds)
	registerForget(app, cmds)
	registerBackup(app, cmds)
	registerStore(app, cmds)
	registerPause(app, cmds)
	registerSimulate(app, cmds)
	registerRules(app, cmds)
	registerInventory(app, cmds)
	registerSlurm(app, cmds)
	registerReport(app, cmds)
	return cmds
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], env{stdout: os.Stdout, stderr: os.Stderr, stderrTTY: isTerminal(os.Stderr)})
	stop()
	os.Exit(code)
}

// newApp declares rotactl's command line; cmds holds each verb by its full command name.
func newApp(e env) (app *kingpin.Application, cmds map[string]command) {
	app = kingpin.New("rotactl", "The operator's CLI for rota.")
	app.Version(version.Print("rotactl"))
	app.HelpFlag.Short('h')
	app.UsageWriter(e.stderr)
	app.ErrorWriter(e.stderr)
	cmds = commands(app)
	flagname.Wrap(app)
	return app, cmds
}

func run(ctx context.Context, args []string, e env) int {
	app, cmds := newApp(e)
	// --help and --version print inside Parse, then call terminate; kingpin would exit the
	// process there, which tests cannot survive, so record it and stop before running a verb.
	terminated := false
	app.Terminate(func(int) { terminated = true })
	if len(args) == 0 {
		app.Usage(nil)
		fmt.Fprintln(e.stderr, "rotactl: a command is required")
		return 2
	}
	chosen, err := app.Parse(joinNegativeValues(app, args))
	if terminated {
		return 0
	}
	if err != nil {
		fmt.Fprintln(e.stderr, "rotactl:", err)
		return 2
	}
	cmd, ok := cmds[chosen]
	if !ok {
		fmt.Fprintln(e.stderr, "rotactl: a command is required (see rotactl --help)")
		return 2
	}
	return cmd(ctx, e)
}

// isTerminal reports whether f is a character device (a terminal, not a file or a pipe).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
