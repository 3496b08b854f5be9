package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/internal/logflags"
	"github.com/rotahq/rota/internal/wire"
	"github.com/rotahq/rota/scaler/config"
)

// powerFlags are the `rotactl power` options.
type powerFlags struct {
	configFile string
	output     string
	hard       bool
	timeout    time.Duration
	log        logflags.Config
	nodes      []string
}

// registerPower adds `rotactl power status|on|off|cycle NODE...`.
func registerPower(app *kingpin.Application, cmds map[string]command) {
	f := &powerFlags{}
	power := app.Command("power", "Read or change servers' power through their BMCs (IPMI or Redfish), as the inventory in the config file describes them.")
	power.Flag("config.file", "rota's config file (pools and nodes with their bmc endpoints).").Default("/etc/rota/rota.yml").StringVar(&f.configFile)
	power.Flag("output", "Output format: table or json.").Short('o').Default("table").EnumVar(&f.output, "table", "json")
	positiveDuration(power.Flag("timeout", "Bound on each node's operation, confirmation included (default: bmc.operation_timeout of the config)."), &f.timeout)
	logflags.Add(power, &f.log, "error") // BMC details on stderr
	verbs := []struct{ name, help string }{
		{"status", "Read the power state (on, off, transitioning, unknown)."},
		{"on", "Power on and wait until the BMC reports on."},
		{"off", "Shut down gracefully (hard off after bmc.graceful_timeout) and wait until off."},
		{"cycle", "Power cycle a node that is on (a node that is off is powered on)."},
	}
	for _, v := range verbs {
		c := power.Command(v.name, v.help)
		if v.name == "off" {
			c.Flag("hard", "Cut the power at once instead of a graceful shutdown.").BoolVar(&f.hard)
		}
		c.Arg("node", "Node names from the config.").Required().StringsVar(&f.nodes)
		cmds[c.FullCommand()] = func(ctx context.Context, e env) int { return runPower(ctx, e, v.name, f) }
	}
}

// powerResult is one node's outcome, as printed.
type powerResult struct {
	Node   string    `json:"node"`
	State  bmc.State `json:"state,omitempty"` // empty: not read
	OK     bool      `json:"ok"`
	Reason string    `json:"reason,omitempty"`
	Error  string    `json:"error,omitempty"`
}

func runPower(ctx context.Context, e env, verb string, f *powerFlags) int {
	cfg, err := config.Load(f.configFile)
	if err != nil {
		fmt.Fprintln(e.stderr, "rotactl:", err)
		return 2
	}
	ctl, timeout, err := controller(e, cfg, f)
	if err == nil && verb == "off" && !f.hard {
		err = gracefulWithin(cfg, timeout)
	}
	if err != nil {
		fmt.Fprintln(e.stderr, "rotactl:", err)
		return 2
	}
	results := powerAll(ctx, ctl, verb, !f.hard, dedupe(f.nodes), timeout, progress(e))
	return printPower(e, f.output, withNodeHints(results, cfg, f.configFile))
}

// withNodeHints adds to the error of each node the config does not name where names come from
// and the name probably meant: "unknown node" alone left a typo to be found by eye.
func withNodeHints(results []powerResult, cfg *config.Config, file string) []powerResult {
	for i, r := range results {
		if r.Reason != bmc.Reason(bmc.ErrUnknownNode) {
			continue
		}
		hint := "no node of " + file + "'s pools"
		if near := cfg.NearestNode(r.Node); near != "" {
			hint += "; did you mean " + near + "?"
		}
		results[i].Error += " (" + hint + ")"
	}
	return results
}

// controller builds the BMC controller for every node of the config, and the bound on each
// node's operation (--timeout, else bmc.operation_timeout).
func controller(e env, cfg *config.Config, f *powerFlags) (*bmc.Controller, time.Duration, error) {
	timeout := f.timeout
	if timeout == 0 {
		timeout = time.Duration(cfg.BMC.OperationTimeout)
	}
	ctl, err := wire.Power(cfg, f.log.New(e.stderr).WithField("component", "bmc"), e.clock, prometheus.NewRegistry(), timeout)
	return ctl, timeout, err
}

// gracefulWithin refuses a bound on a graceful power-off that leaves no time for its hard off,
// as the config refuses bmc.graceful_timeout not shorter than bmc.operation_timeout: a --timeout
// of 30s under a graceful_timeout of 5m sent the soft off, gave up at 30s and reported a failure,
// and a server whose OS ignored the request stayed on.
func gracefulWithin(cfg *config.Config, timeout time.Duration) error {
	if grace := time.Duration(cfg.BMC.GracefulTimeout); timeout <= grace {
		return fmt.Errorf("--timeout: %s is not longer than bmc.graceful_timeout (%s): the hard off after it would never be sent; give a longer --timeout or --hard", timeout, grace)
	}
	return nil
}

// printPower prints the results and returns the exit code: 0 when every node succeeded, 1 when
// one failed, 2 when the table could not be written.
func printPower(e env, format string, results []powerResult) int {
	if err := printResults(e.stdout, format, results); err != nil {
		fmt.Fprintln(e.stderr, "rotactl:", err)
		return 2
	}
	for _, r := range results {
		if !r.OK {
			return 1
		}
	}
	return 0
}

func dedupe(nodes []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range nodes {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// powerAll runs the verb on every node in parallel (the Controller applies the concurrency
// cap) and returns the results in the order the nodes were given.
func powerAll(ctx context.Context, p bmc.Power, verb string, graceful bool, nodes []string, timeout time.Duration, done func(finished, failed, total int)) []powerResult {
	results := make([]powerResult, len(nodes))
	var (
		wg               sync.WaitGroup
		mu               sync.Mutex
		finished, failed int
	)
	for i, node := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			octx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			results[i] = powerOne(octx, p, verb, graceful, node)
			mu.Lock()
			finished++
			if !results[i].OK {
				failed++
			}
			done(finished, failed, len(nodes))
			mu.Unlock()
		}()
	}
	wg.Wait()
	return results
}

func powerOne(ctx context.Context, p bmc.Power, verb string, graceful bool, node string) powerResult {
	var err error
	st := bmc.StateUnknown
	switch verb {
	case "status":
		st, err = p.State(ctx, node)
	case "on":
		err, st = p.On(ctx, node), bmc.StateOn
	case "off":
		err, st = p.Off(ctx, node, graceful), bmc.StateOff
	case "cycle":
		err, st = p.Cycle(ctx, node), bmc.StateOn
	}
	if err != nil {
		return powerResult{Node: node, State: bmc.StateUnknown, Reason: bmc.Reason(err), Error: err.Error()}
	}
	return powerResult{Node: node, State: st, OK: true}
}

// progress returns the progress reporter: a line rewritten in place on a terminal, nothing
// otherwise (a log file or a pipe gets only the final table).
func progress(e env) func(finished, failed, total int) {
	if !e.stderrTTY {
		return func(int, int, int) {}
	}
	return func(finished, failed, total int) {
		fmt.Fprintf(e.stderr, "\r%d/%d done, %d failed", finished, total, failed)
		if finished == total {
			fmt.Fprintln(e.stderr)
		}
	}
}

func printResults(w io.Writer, format string, results []powerResult) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATE\tRESULT\tREASON\tERROR")
	for _, r := range results {
		result := "ok"
		if !r.OK {
			result = "failed"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Node, orDash(string(r.State)), result, orDash(r.Reason), orDash(oneLine(r.Error)))
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine folds bmclib's multi-line errors so each node stays on one table row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
