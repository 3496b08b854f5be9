// Command rota-lab runs rota's lab on one machine (package lab): `up` starts the whole fleet
// (with Slurm, or with Kubernetes: --profile) and rota and runs until Ctrl-C; `workload`
// submits a burst of light and heavy jobs (pods, with Kubernetes) to a running lab; `summary`
// prints what the run cost and what became of the jobs; `down` ends whatever a lab in the
// folder left running.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
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

// flags is rota-lab's command line.
type flags struct {
	dir                string
	up                 lab.Options
	logs               logflags.Config
	light, heavy       int
	lightRun, heavyRun time.Duration
}

// newApp declares rota-lab's command line; parsing fills the flags it returns.
func newApp(stdout, stderr io.Writer) (*kingpin.Application, *flags) {
	f := &flags{}
	app := kingpin.New("rota-lab", "rota's lab: a whole fleet (BMCs, Slurm, exporters, Prometheus, Alertmanager) and rota on one machine.")
	app.Version(version.Print("rota-lab"))
	app.HelpFlag.Short('h')
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)
	app.Flag("dir", "The lab folder.").Default(".lab").StringVar(&f.dir)

	up := app.Command("up", "Start the lab and run until SIGINT or SIGTERM, then stop everything it started.")
	up.Flag("root", "The repository root (deploy/ is read from there).").Default(".").StringVar(&f.up.Root)
	up.Flag("bin", "Folder of rota, rota-lab-exporter and rota-redfish-emulator.").Default("bin").StringVar(&f.up.BinDir)
	up.Flag("on", "Servers powered on at start: all, floor (each pool's min) or none.").Default("all").EnumVar(&f.up.On, "all", "floor", "none")
	up.Flag("no-rota", "Start the fleet without rota.").BoolVar(&f.up.NoRota)
	up.Flag("profile", "The job manager: slurm (a Slurm cluster) or kubernetes (a Kubernetes control plane, the lab playing each server's kubelet).").Default(lab.ProfileSlurm).EnumVar(&f.up.Profile, lab.ProfileSlurm, lab.ProfileKubernetes)
	up.Flag("rebalance", "Let rota move requeueable work (light jobs leave the GPU servers, which then power off) and set Slurm's node weights from cost.").BoolVar(&f.up.Rebalance)
	logflags.Add(up, &f.logs, "info")

	wl := app.Command("workload", "Submit a burst of light (CPU) and heavy (GPU) jobs to the running lab (pods, in the Kubernetes profile).")
	wl.Flag("light", "Light jobs (2 CPUs).").Default("8").IntVar(&f.light)
	wl.Flag("heavy", "Heavy jobs (2 CPUs, 1 GPU).").Default("4").IntVar(&f.heavy)
	wl.Flag("light.runtime", "How long a light job runs.").Default("40s").DurationVar(&f.lightRun)
	wl.Flag("heavy.runtime", "How long a heavy job runs.").Default("60s").DurationVar(&f.heavyRun)

	app.Command("summary", "Print server-hours and spend against all-on, and Slurm's record of the jobs.")
	app.Command("down", "End every process a lab in --dir left running (by the pids carrying its marker).")
	return app, f
}

func run(args []string, stdout, stderr io.Writer) int {
	app, f := newApp(stdout, stderr)
	cmd, err := app.Parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "rota-lab: error: %v, try --help\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch cmd {
	case "up":
		opts := f.up
		opts.Dir, opts.Clock, opts.Log = f.dir, clock.Real{}, f.logs.New(stderr).WithField("component", "lab")
		return runUp(ctx, opts, stdout, stderr)
	case "workload":
		ids, err := lab.Submit(ctx, f.dir, lab.Burst(f.light, f.heavy, f.lightRun, f.heavyRun)...)
		fmt.Fprintf(stdout, "submitted %d jobs (%d light, %d heavy)\n", len(ids), f.light, f.heavy)
		if err != nil {
			fmt.Fprintln(stderr, "rota-lab:", err)
			return 1
		}
	case "summary":
		cfg, err := config.Load(filepath.Join(f.dir, "rota.yml"))
		if err != nil {
			fmt.Fprintln(stderr, "rota-lab:", err)
			return 1
		}
		s, err := lab.Summarize(cfg, f.dir, time.Now())
		if err != nil {
			fmt.Fprintln(stderr, "rota-lab:", err)
			return 1
		}
		s.Write(stdout)
		// Jobs not finished yet, when the lab still runs.
		if n, err := lab.Unfinished(ctx, f.dir); err == nil {
			fmt.Fprintf(stdout, "  not finished      %d (queued or running)\n", n)
		}
	case "down":
		n, err := lab.KillMarked(f.dir)
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
	jm := "SLURM_CONF=" + filepath.Join(l.Dir, "slurm", "slurm.conf")
	if opts.Profile == lab.ProfileKubernetes {
		jm = "KUBECONFIG=" + lab.AdminKubeconfig(l.Dir)
	}
	env := fmt.Sprintf("ROTA_URL=%s\nROTA_TOKEN_FILE=%s\nPROMETHEUS_URL=%s\nALERTMANAGER_URL=%s\n%s\nREDFISH_CONTROL=%s\n",
		l.RotaURL(), l.APITokenFile(), l.PrometheusURL(), l.AlertmanagerURL(), jm, l.RedfishControl())
	if err := os.WriteFile(filepath.Join(l.Dir, "env"), []byte(env), 0o644); err != nil {
		fmt.Fprintln(stderr, "rota-lab:", err)
		return 1
	}
	fmt.Fprintf(stdout, "lab up in %s (Ctrl-C stops it)\n%s", l.Dir, env)
	<-ctx.Done()
	fmt.Fprintln(stdout, "stopping the lab")
	return 0
}
