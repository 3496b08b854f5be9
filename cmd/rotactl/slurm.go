package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/alecthomas/kingpin/v2"

	"github.com/rotahq/rota/internal/logflags"
	"github.com/rotahq/rota/scaler/jobs/slurm"
)

// registerSlurm adds `rotactl slurm resume|suspend HOSTLIST`, the programs Slurm's own power
// saving runs (slurm.conf ResumeProgram and SuspendProgram, through a two-line wrapper script
// that adds --config.file, since Slurm passes the hostlist as the only argument). Power goes
// through the same BMC controller as `rotactl power`: confirmed by reading the state back,
// never sent while the state is unknown, one command at a time per BMC, bmc.concurrency at
// once. The per-node table goes to standard error (Slurm keeps no standard output); the exit
// code is 1 when any node failed, 2 when the hostlist or the config cannot be read.
func registerSlurm(app *kingpin.Application, cmds map[string]command) {
	f := &powerFlags{output: "table"}
	var hostlist string
	s := app.Command("slurm", "Slurm power saving: the ResumeProgram and SuspendProgram for slurm.conf.")
	s.Flag("config.file", "rota's config file (pools and nodes with their bmc endpoints).").Default("/etc/rota/rota.yml").StringVar(&f.configFile)
	positiveDuration(s.Flag("timeout", "Bound on each node's operation, confirmation included (default: bmc.operation_timeout of the config); keep it under Slurm's ResumeTimeout/SuspendTimeout."), &f.timeout)
	logflags.Add(s, &f.log, "warn") // BMC details on stderr
	for _, v := range []struct{ name, verb, help string }{
		{"resume", "on", "Power on the servers Slurm resumes (ResumeProgram) and wait until their BMCs report on."},
		{"suspend", "off", "Shut down the servers Slurm suspends (SuspendProgram), gracefully with a hard off after bmc.graceful_timeout, and wait until off."},
	} {
		c := s.Command(v.name, v.help)
		c.Arg("hostlist", "Slurm hostlist of node names from the config (node[1-3],gpu01).").Required().StringVar(&hostlist)
		cmds[c.FullCommand()] = func(ctx context.Context, e env) int {
			nodes, err := slurm.ExpandHostlist(hostlist)
			if err == nil && len(nodes) == 0 {
				err = errors.New("empty hostlist")
			}
			if err != nil {
				fmt.Fprintf(e.stderr, "rotactl: slurm %s: %v\n", v.name, err)
				return 2
			}
			f.nodes = nodes
			return runPower(ctx, env{stdout: e.stderr, stderr: e.stderr, clock: e.clock}, v.verb, f)
		}
	}
}
