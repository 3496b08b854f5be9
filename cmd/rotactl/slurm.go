package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/rotahq/rota/internal/logflags"
	"github.com/rotahq/rota/internal/slurmcli"
	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

// wakeNote is the note a resume through rota carries (log, audit).
const wakeNote = "slurm resume"

// slurmFlags are the options of `rotactl slurm resume|suspend`.
type slurmFlags struct {
	power powerFlags
	// rota is the running rota resume asks; unreachable says what to do when it does not answer.
	rota        apiFlags
	unreachable string
}

// registerSlurm adds `rotactl slurm resume|suspend HOSTLIST`, the programs Slurm's own power
// saving runs (slurm.conf ResumeProgram and SuspendProgram, through a two-line wrapper script
// that adds --config.file, since Slurm passes the hostlist as the only argument).
//
// resume asks the running rota to power the servers on (POST /api/v1/wake, with the API token):
// rota's next pass does it, under its own gate, and answers per server. Only when rota cannot
// be reached at all (no connection) does resume act alone, and then only with the same checks:
// rota's store must be readable, writable and not held by a rota (its pause, pins and
// maintenance are honoured, and each power-on is recorded there first, as rota's own), and power
// goes through the BMC controller as `rotactl power on` does. suspend
// acts alone, through the same controller: confirmed by reading the state back, never sent
// while the state is unknown, one command at a time per BMC, bmc.concurrency at once.
//
// The per-node table goes to standard error (Slurm keeps no standard output); the exit code
// is 1 when any node failed or was refused, 2 when the hostlist or the config cannot be read.
func registerSlurm(app *kingpin.Application, cmds map[string]command) {
	f := &slurmFlags{power: powerFlags{output: "table"}}
	var hostlist string
	s := app.Command("slurm", "Slurm: the ResumeProgram and SuspendProgram for slurm.conf's power saving, the node weights, and a check of the pools against Slurm.")
	s.Flag("config.file", "rota's config file (pools and nodes with their bmc endpoints).").Default("/etc/rota/rota.yml").StringVar(&f.power.configFile)
	positiveDuration(s.Flag("timeout", "Bound on each node's operation when rotactl powers servers itself, confirmation included (default: bmc.operation_timeout of the config); keep it under Slurm's ResumeTimeout/SuspendTimeout."), &f.power.timeout)
	logflags.Add(s, &f.power.log, "warn") // BMC details on stderr
	registerSlurmTiers(s, &f.power, cmds)
	for _, v := range []struct{ name, verb, help string }{
		{"resume", "on", "Have rota power on the servers Slurm resumes (ResumeProgram): a pass of the running rota does it; rotactl acts alone only when rota cannot be reached."},
		{"suspend", "off", "Shut down the servers Slurm suspends (SuspendProgram), gracefully with a hard off after bmc.graceful_timeout, and wait until off."},
	} {
		c := s.Command(v.name, v.help)
		c.Arg("hostlist", "Slurm hostlist of node names from the config (node[1-3],gpu01).").Required().StringVar(&hostlist)
		if v.name == "resume" {
			checkedValue(c.Flag("rota.url", "URL of the running rota (default: http:// and the config's server.listen_address, on loopback when it listens on every address)."), &f.rota.url, api.CheckURL)
			c.Flag("rota.token-file", "File holding the operator API token (default: the config's server.api_token_file).").Envar("ROTA_TOKEN_FILE").StringVar(&f.rota.tokenFile)
			c.Flag("rota.ca-file", "PEM file of the CA that signs rota's certificate, for an https --rota.url (default: the system's CAs).").StringVar(&f.rota.caFile)
			positiveDuration(c.Flag("rota.timeout", "Bound on the call to rota (it answers after its next pass).").Default("1m"), &f.rota.timeout)
			c.Flag("rota.unreachable", "When rota cannot be reached: power the servers on alone, after checking rota's store (power), or fail (fail).").Default("power").EnumVar(&f.unreachable, "power", "fail")
		}
		cmds[c.FullCommand()] = func(ctx context.Context, e env) int {
			nodes, err := slurmcli.ExpandHostlist(hostlist)
			if err == nil && len(nodes) == 0 {
				err = errors.New("empty hostlist")
			}
			if err != nil {
				fmt.Fprintf(e.stderr, "rotactl: slurm %s: %v\n", v.name, err)
				return 2
			}
			e = env{stdout: e.stderr, stderr: e.stderr, clock: e.clock}
			f.power.nodes = dedupe(nodes)
			if v.name == "resume" {
				return slurmResume(ctx, e, f)
			}
			return runPower(ctx, e, v.verb, &f.power)
		}
	}
}

// slurmResume asks rota to power the nodes on, or acts alone when rota cannot be reached.
func slurmResume(ctx context.Context, e env, f *slurmFlags) int {
	cfg, err := config.Load(f.power.configFile)
	if err != nil {
		fmt.Fprintln(e.stderr, "rotactl:", err)
		return 2
	}
	c, err := f.rotaClient(cfg)
	if err != nil {
		fmt.Fprintln(e.stderr, "rotactl:", err)
		return 2
	}
	res, err := wakeOnceLed(ctx, e, c, f.power.nodes, f.rota.timeout)
	switch {
	case err == nil:
		return printWake(e, res)
	case !unreachable(err):
		return apiFailed(e, err)
	case f.unreachable == "fail":
		fmt.Fprintf(e.stderr, "rotactl: rota cannot be reached (%v); not powering on alone (--rota.unreachable=fail)\n", err)
		return 1
	}
	fmt.Fprintf(e.stderr, "rotactl: rota cannot be reached (%v); powering on alone\n", err)
	return resumeAlone(ctx, e, cfg, &f.power)
}

// wakeOnceLed asks rota to wake the nodes; while no rota leads (a failover: the rota asked
// follows, and the leader it names, just crashed, cannot be reached or none is named) it asks
// again every second, within timeout: the next leader comes within twice the lease TTL, and
// a resume that fails costs the work Slurm placed on the servers.
func wakeOnceLed(ctx context.Context, e env, c *api.Client, nodes []string, timeout time.Duration) ([]api.WakeResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		res, err := c.Wake(ctx, nodes, wakeNote)
		var se *api.StatusError
		if !errors.Is(err, api.ErrLeaderUnreachable) && !(errors.As(err, &se) && se.NoLeader) {
			return res, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no leader could be reached within --rota.timeout: %w", err)
		case <-e.clock.After(time.Second):
		}
	}
}

// rotaClient is the client for the running rota: --rota.url, else the config's listen address
// (on loopback when it listens on every address); --rota.token-file, else the config's
// server.api_token_file.
func (f *slurmFlags) rotaClient(cfg *config.Config) (*api.Client, error) {
	a := f.rota
	if a.url == "" {
		host, port, err := net.SplitHostPort(cfg.Server.ListenAddress)
		if err != nil {
			return nil, fmt.Errorf("server.listen_address: %w", err)
		}
		switch host {
		case "", "0.0.0.0":
			host = "127.0.0.1"
		case "::":
			host = "::1"
		}
		a.url = "http://" + net.JoinHostPort(host, port)
	}
	if a.tokenFile == "" {
		a.tokenFile = cfg.Server.APITokenFile
	}
	return a.client()
}

// unreachable reports whether a call failed before reaching rota (no connection could be
// made): only then may resume act alone. A call that reached rota and then failed or timed
// out may have been taken; rota keeps such a request.
func unreachable(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// printWake prints rota's answer per node and returns 0 when rota has every node on, on its
// way or in hand, else 1.
func printWake(e env, res []api.WakeResult) int {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tRESULT\tREASON\tDETAIL")
	code := 0
	for _, r := range res {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Node, r.Result, orDash(string(r.Reason)), orDash(r.Detail))
		if !r.OK() {
			code = 1
		}
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintln(e.stderr, "rotactl:", err)
		return 2
	}
	return code
}

// resumeAlone powers the nodes on without rota, honouring what rota's store says: nothing while
// paused, nothing on a pinned server or one in maintenance. A store that cannot be read or
// written, or that a rota holds (a rota runs but does not answer), stops it: rotactl never acts
// beside a running rota, nor without its facts. Before any command it records each power-on in
// the store as rota begins its own (recordResume), so rota, back, takes it up as its own.
func resumeAlone(ctx context.Context, e env, cfg *config.Config, f *powerFlags) int {
	ctl, timeout, err := controller(e, cfg, f)
	if err != nil {
		fmt.Fprintln(e.stderr, "rotactl:", err)
		return 2
	}
	refused, err := recordResume(ctx, e, cfg, f.nodes)
	if err != nil {
		fmt.Fprintf(e.stderr, "rotactl: cannot check rota's store and record the power-ons there, so not powering on alone: %v\n", err)
		return 1
	}
	var allowed []string
	for _, n := range f.nodes {
		if _, no := refused[n]; !no {
			allowed = append(allowed, n)
		}
	}
	done := map[string]powerResult{}
	for _, r := range powerAll(ctx, ctl, "on", true, allowed, timeout, progress(e)) {
		done[r.Node] = r
	}
	results := make([]powerResult, len(f.nodes))
	for i, n := range f.nodes {
		r, ok := done[n]
		if !ok {
			r = powerResult{Node: n, Reason: refused[n], Error: "refused: " + refused[n] + " in rota's store"} // state not read
		}
		results[i] = r
	}
	return printPower(e, f.output, withNodeHints(results, cfg, f.configFile))
}

// recordResume opens rota's store while no rota holds it (openStopped) and, in one
// transaction, names per node why rota would refuse to power it on (paused, pinned,
// maintenance) and records the power-on of each other inventory node rota records as not on
// (off, failed, unknown or never seen) with no action of its own under way, as rota begins one
// (executor.BeginPowerOn, reason requested): the intent, before the command. Rota's repair then
// finishes it as its own, when it starts: it confirms the boot, or sends the command again if
// this one did not land; it is never a change outside rota. A node on, or with rota's action
// under way, is left as recorded (rota's repair settles that action from the BMC's state).
func recordResume(ctx context.Context, e env, cfg *config.Config, nodes []string) (map[string]string, error) {
	st, closeStore, err := openStopped(ctx, e, cfg)
	if err != nil {
		return nil, err
	}
	defer closeStore()
	refused := map[string]string{}
	now := e.clock.Now()
	err = st.Update(func(tx *store.Tx) error {
		g, err := tx.Global()
		if err != nil {
			return err
		}
		for _, n := range nodes {
			rec, err := tx.Node(n)
			ref, known := cfg.Node(n)
			switch {
			case err != nil:
				return err
			case g.Paused:
				refused[n] = "paused"
			case rec.Pinned:
				refused[n] = "pinned"
			case rec.Maintenance:
				refused[n] = "maintenance"
			case known && rec.Intent == nil && slices.Contains([]fleet.State{"", fleet.StateOff, fleet.StateFailed, fleet.StateUnknown}, rec.State):
				a := fleet.Action{Kind: fleet.PowerOn, Node: n, Pool: ref.Pool.Name, Reason: fleet.ReasonRequested,
					Detail: "the job manager placed work on it: " + wakeNote + "; rotactl powered it on alone, rota could not be reached"}
				if err := executor.BeginPowerOn(tx, a, now); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return refused, nil
}
