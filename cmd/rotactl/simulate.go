package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/sim"
	"github.com/rotahq/rota/scaler/sim/report"
	"github.com/rotahq/rota/scaler/sim/trace"
)

// simulateFlags are the `rotactl simulate` options.
type simulateFlags struct {
	trace, config, format, out, fleet string
	idle, boot, shutdown, maxWait     time.Duration
	watchDelay                        time.Duration
	gpusPerNode                       int
	sweep                             bool
	requeueAll                        bool
}

// registerSimulate adds `rotactl simulate --trace FILE --config FILE`.
func registerSimulate(app *kingpin.Application, cmds map[string]command) {
	f := &simulateFlags{}
	c := app.Command("simulate", "Replay a workload trace against a fleet: rota's planner under the config's policy, always-on and an idle timeout, and the lower bound, side by side.")
	c.Flag("trace", "Trace file: ITP GPU CSV, Standard Workload Format (.swf) or generic CSV; plain, gzip or bzip2.").Required().StringVar(&f.trace)
	c.Flag("config", "rota config giving the pools (profile, cost, boot_timeout) and the policy under test.").Required().StringVar(&f.config)
	c.Flag("format", "Trace format when it cannot be told from the file: itp, swf or csv.").EnumVar(&f.format, "itp", "swf", "csv")
	c.Flag("out", "Folder for <trace>-results.csv, -results.json and PNG plots (none when empty).").StringVar(&f.out)
	nonNegativeDuration(c.Flag("idle-timeout", "The idle-timeout baseline's SuspendTime (0: power off as soon as idle), and the timeout rota's rows are judged against (with --sweep, replayed among its timeouts).").Default("600s"), &f.idle)
	positiveDuration(c.Flag("boot", "Boot time of every server (default: each pool's boot_timeout)."), &f.boot)
	nonNegativeDuration(c.Flag("shutdown", "Time from power-off to off (0: at once).").Default("1m"), &f.shutdown)
	positiveCount(c.Flag("gpus-per-node", "GPUs per server for ITP traces (default: the config's GPU pool's profile.gpus, the largest where they differ; 8 when no pool has GPUs)."), &f.gpusPerNode)
	checkedValue(c.Flag("fleet", "Fleet size: auto (the machine the trace's header states, e.g. SWF MaxNodes, else peak), trace (that machine), peak or p95 of the servers the trace needs, a count (one pool), or config (the nodes listed).").Default("auto"), &f.fleet, sim.CheckFleet)
	positiveDuration(c.Flag("max-wait", "Give up on a job (and report it) after it waited this long.").Default("168h"), &f.maxWait)
	c.Flag("sweep", "Run the idle timeout at 1, 2, 5, 10, 20, 30 and 60 minutes, and rota under the config's policy and with its knobs moved (spares.quantile, break_even.wear_time, break_even.idle_periods), for the frontier plot.").BoolVar(&f.sweep)
	signedDuration(c.Flag("watch-delay", "How long after a job arrives rota's planner runs for it (the job manager's pending-work watch); negative: only at evaluation intervals.").Default("1s"), &f.watchDelay)
	c.Flag("requeue-all", "Take every job of the trace as requeueable (rebalancing may move it), whatever the trace says.").BoolVar(&f.requeueAll)
	cmds[c.FullCommand()] = func(ctx context.Context, e env) int {
		if err := runSimulate(ctx, e, f); err != nil {
			fmt.Fprintln(e.stderr, "rotactl:", err)
			return 1
		}
		return 0
	}
}

func runSimulate(ctx context.Context, e env, f *simulateFlags) error {
	if f.out != "" {
		// made before the replay, so that a folder that cannot be is said at once, not once a
		// sweep of minutes is done
		if err := os.MkdirAll(f.out, 0o755); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	cfg, err := config.LoadFor(f.config, config.Replay)
	if err != nil {
		return err
	}
	gpus, gpusNote := sim.ITPServerGPUs(cfg, f.gpusPerNode)
	tr, err := readTrace(f, gpus)
	if err != nil {
		return err
	}
	if tr.Format == trace.ITP && gpusNote != "" {
		tr.Notes = append(tr.Notes, gpusNote)
		if f.gpusPerNode > 0 {
			fmt.Fprintln(e.stderr, "rotactl: warning:", gpusNote)
		}
	}
	if len(tr.Jobs) == 0 {
		return fmt.Errorf("%s: the trace has no jobs (%d record(s) skipped as unusable)", f.trace, len(tr.Skipped))
	}
	senv, err := sim.NewEnv(cfg, tr, sim.Options{Boot: f.boot, Shutdown: f.shutdown, Fleet: f.fleet, MaxWait: f.maxWait, RequeueAll: f.requeueAll, WatchDelay: f.watchDelay, Context: ctx})
	var row trace.LineError
	if errors.As(err, &row) {
		return fmt.Errorf("%s: %w", f.trace, err) // a row the config rejects
	}
	if err != nil {
		return err
	}
	policies := []sim.Policy{sim.AlwaysOn(), sim.IdleTimeout(f.idle), sim.Rota("rota")}
	if f.sweep {
		policies = append([]sim.Policy{sim.AlwaysOn()}, sim.SweepPolicies(senv, f.idle)...)
	}
	if cfg.Policy.Moves.Enabled {
		// Rebalancing is measured against the same planner without it.
		policies = append(policies, sim.RotaWithoutMoves("rota-no-moves"))
	}
	var progress func(string) sim.Progress
	if e.stderrTTY {
		progress = func(name string) sim.Progress { return bar(e.stderr, name) }
	}
	results, err := sim.Compare(ctx, senv, policies, progress)
	if err != nil {
		return err
	}
	name := traceName(f.trace)
	notes := []string{fmt.Sprintf("boot %s, shutdown %s, policy from %s", bootText(senv), f.shutdown, f.config)}
	if n := sim.SparesNote(senv, f.sweep); n != "" {
		notes = append(notes, n)
	}
	rep := report.New(name, senv, results, notes...)
	rep.Judge(sim.IdleTimeout(f.idle).Name())
	if err := rep.Table(e.stdout); err != nil {
		return err
	}
	reportNotRun(e.stderr, senv, results)
	if f.out == "" {
		return nil
	}
	files, err := rep.Write(f.out, name)
	for _, p := range files {
		fmt.Fprintln(e.stdout, "wrote", p)
	}
	return err
}

// readTrace reads the trace, an ITP one split into servers of gpus GPUs.
func readTrace(f *simulateFlags, gpus int) (*trace.Trace, error) {
	file, err := os.Open(f.trace)
	if err != nil {
		return nil, fmt.Errorf("opening trace: %w", err)
	}
	defer file.Close()
	tr, err := trace.Read(file, trace.Format(f.format), trace.Options{GPUsPerNode: gpus})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.trace, err)
	}
	return tr, nil
}

// reportNotRun says on stderr which jobs did not run, beside the JSON's full list: those no
// server of the fleet can hold once, then, per policy, those it gave up on or never started.
func reportNotRun(w io.Writer, e *sim.Env, results []sim.Result) {
	say := func(what string, n []sim.NotRun) {
		if len(n) == 0 {
			return
		}
		fmt.Fprintf(w, "rotactl: %d job(s) %s; the first, line %d: %s", len(n), what, n[0].Line, n[0].Reason)
		if len(n) > 1 {
			fmt.Fprint(w, " (all in --out's results.json)")
		}
		fmt.Fprintln(w)
	}
	say("cannot run on this fleet and are left out of every row", e.Unrunnable)
	for _, r := range results {
		say("not run by "+r.Policy, r.NotRun[len(e.Unrunnable):])
	}
}

// traceName is the file's name without folders and extensions (cluster04, NASA-iPSC-1993-3.1-cln).
func traceName(path string) string {
	base := filepath.Base(path)
	for _, ext := range []string{".gz", ".bz2", ".csv", ".swf"} {
		base = strings.TrimSuffix(base, ext)
	}
	return base
}

func bootText(e *sim.Env) string {
	var parts []string
	for _, p := range e.Pools {
		parts = append(parts, fmt.Sprintf("%s %s", p.Name, time.Duration(p.Boot)*time.Second))
	}
	return strings.Join(parts, ", ")
}

// bar draws a one-line progress bar on a terminal.
func bar(w io.Writer, name string) sim.Progress {
	return func(done, total int) {
		const width = 30
		n := done * width / max(total, 1)
		fmt.Fprintf(w, "\r%-14s [%s%s] %3d%%", name, strings.Repeat("=", n), strings.Repeat(" ", width-n), done*100/max(total, 1))
		if done >= total {
			fmt.Fprint(w, "\r\033[K")
		}
	}
}
