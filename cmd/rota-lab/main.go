// Command rota-lab runs rota's lab on one machine (package lab): `up` starts the whole fleet
// and rota and runs until Ctrl-C; `workload` submits a burst of light and heavy jobs to a
// running lab; `summary` prints what the run cost and what became of the jobs; `down` ends
// whatever a lab in the folder left running.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"

	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/logflags"
	"github.com/rotahq/rota/lab"
	"github.com/rotahq/rota/scaler/config"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	app := kingpin.New("rota-lab", "rota's lab: a whole fleet (BMCs, Slurm, exporters, Prometheus, Alertmanager) and rota on one machine.")
	app.Version(version.Print("rota-lab"))
	app.HelpFlag.Short('h')
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)
	dir := app.Flag("dir", "The lab folder.").Default(".lab").String()

	up := app.Command("up", "Start the lab and run until SIGINT or SIGTERM, then stop everything it started.")
	root := up.Flag("root", "The repository root (deploy/ is read from there).").Default(".").String()
	binDir := up.Flag("bin", "Folder of rota, rota-lab-exporter and rota-redfish-emulator.").Default("bin").String()
	on := up.Flag("on", "Servers powered on at start: all, floor (each pool's min) or none.").Default("all").Enum("all", "floor", "none")
	noRota := up.Flag("no-rota", "Start the fleet without rota.").Bool()
	rebalance := up.Flag("rebalance", "Let rota move requeueable work (light jobs leave the GPU servers, which then power off) and set Slurm's node weights from cost.").Bool()
	var logs logflags.Config
	logflags.Add(up, &logs, "info")

	wl := app.Command("workload", "Submit a burst of light (CPU) and heavy (GPU) jobs to the running lab.")
	light := wl.Flag("light", "Light jobs (2 CPUs).").Default("8").Int()
	heavy := wl.Flag("heavy", "Heavy jobs (2 CPUs, 1 GPU).").Default("4").Int()
	lightRun := wl.Flag("light.runtime", "How long a light job runs.").Default("40s").Duration()
	heavyRun := wl.Flag("heavy.runtime", "How long a heavy job runs.").Default("60s").Duration()

	app.Command("summary", "Print server-hours and spend against all-on, and Slurm's record of the jobs.")
	app.Command("down", "End every process a lab in --dir left running (by the pids carrying its marker).")

	cmd, err := app.Parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "rota-lab: error: %v, try --help\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch cmd {
	case "up":
		logger := logs.New(stderr)
		return runUp(ctx, lab.Options{Dir: *dir, Root: *root, BinDir: *binDir, On: *on, NoRota: *noRota, Rebalance: *rebalance,
			Clock: clock.Real{}, Log: logger.WithField("component", "lab")}, stdout, stderr)
	case "workload":
		ids, err := lab.Submit(ctx, *dir, lab.Burst(*light, *heavy, *lightRun, *heavyRun)...)
		fmt.Fprintf(stdout, "submitted %d jobs (%d light, %d heavy)\n", len(ids), *light, *heavy)
		if err != nil {
			fmt.Fprintln(stderr, "rota-lab:", err)
			return 1
		}
	case "summary":
		cfg, err := config.Load(filepath.Join(*dir, "rota.yml"))
		if err != nil {
			fmt.Fprintln(stderr, "rota-lab:", err)
			return 1
		}
		s, err := lab.Summarize(cfg, *dir, time.Now())
		if err != nil {
			fmt.Fprintln(stderr, "rota-lab:", err)
			return 1
		}
		s.Write(stdout)
		// Jobs not finished yet, when the lab still runs.
		if out, err := lab.SlurmCommand(ctx, *dir, "squeue", "--noheader", "--format=%i"); err == nil {
			fmt.Fprintf(stdout, "  not finished      %d (queued or running)\n", len(strings.Fields(out)))
		}
	case "down":
		n, err := lab.KillMarked(*dir)
		fmt.Fprintf(stdout, "ended %d lab processes\n", n)
		if err != nil {
			fmt.Fprintln(stderr, "rota-lab:", err)
			return 1
		}
	}
	return 0
}

// runUp starts the lab, writes DIR/env (the addresses, for scripts) and waits for a signal.
func runUp(ctx context.Context, opts lab.Options, stdout, stderr io.Writer) int {
	l, err := lab.Start(ctx, opts)
	if err != nil {
		fmt.Fprintln(stderr, "rota-lab:", err)
		return 1
	}
	defer l.Close()
	env := fmt.Sprintf("ROTA_URL=%s\nROTA_TOKEN_FILE=%s\nPROMETHEUS_URL=%s\nALERTMANAGER_URL=%s\nSLURM_CONF=%s\nREDFISH_CONTROL=%s\n",
		l.RotaURL(), l.APITokenFile(), l.PrometheusURL(), l.AlertmanagerURL(), filepath.Join(l.Dir, "slurm", "slurm.conf"), l.RedfishControl())
	if err := os.WriteFile(filepath.Join(l.Dir, "env"), []byte(env), 0o644); err != nil {
		fmt.Fprintln(stderr, "rota-lab:", err)
		return 1
	}
	fmt.Fprintf(stdout, "lab up in %s (Ctrl-C stops it)\n%s", l.Dir, env)
	<-ctx.Done()
	fmt.Fprintln(stdout, "stopping the lab")
	return 0
}
