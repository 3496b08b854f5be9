package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/rotahq/rota/scaler/api"
)

// clearScreen moves the cursor home and clears a terminal (ANSI).
const clearScreen = "\033[H\033[2J"

type statusFlags struct {
	api      *apiFlags
	output   string
	watch    bool
	interval time.Duration
}

// registerStatus adds `rotactl status [--watch] [--output table|json]`.
func registerStatus(app *kingpin.Application, cmds map[string]command) {
	f := &statusFlags{}
	c := app.Command("status", "Show the fleet as rota last saw it: servers, states, reasons, and spend per hour against every server on.")
	f.api = addAPIFlags(c)
	outputFlag(c, &f.output)
	c.Flag("watch", "Refresh every --watch.interval until Ctrl-C (the screen is redrawn on a terminal).").Short('w').BoolVar(&f.watch)
	positiveDuration(c.Flag("watch.interval", "Time between refreshes with --watch.").Default("5s"), &f.interval)
	cmds[c.FullCommand()] = func(ctx context.Context, e env) int { return runStatus(ctx, e, f) }
}

func runStatus(ctx context.Context, e env, f *statusFlags) int {
	c, err := f.api.client()
	if err != nil {
		return apiFailed(e, err)
	}
	show := func() error {
		st, err := c.Status(ctx)
		if err != nil {
			return err
		}
		if f.output == "json" {
			return writeJSON(e.stdout, st)
		}
		return writeStatus(e.stdout, st)
	}
	if !f.watch {
		if err := show(); err != nil {
			return apiFailed(e, err)
		}
		return 0
	}
	if f.interval <= 0 {
		fmt.Fprintln(e.stderr, "rotactl: --watch.interval must be positive")
		return 2
	}
	ticker := time.NewTicker(f.interval)
	defer ticker.Stop()
	watch(ctx, e, ticker.C, stdoutIsTerminal(e.stdout), show)
	return 0
}

// watch calls show at once and on every tick until ctx ends, clearing a terminal before each
// draw; a failed call is reported and retried on the next tick.
func watch(ctx context.Context, e env, ticks <-chan time.Time, tty bool, show func() error) {
	for {
		if tty {
			fmt.Fprint(e.stdout, clearScreen)
		}
		if err := show(); err != nil {
			fmt.Fprintln(e.stderr, "rotactl:", err)
		}
		if !tty {
			fmt.Fprintln(e.stdout)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
	}
}

func stdoutIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}

// writeStatus prints the status as a summary and two tables, pools and servers.
func writeStatus(w io.Writer, st api.Status) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if st.HA != nil {
		fmt.Fprintf(tw, "leader\t%s\n", leaderLine(*st.HA))
	}
	// A rota that does not lead makes no pass: the telemetry and the job manager it would
	// report unread are the leader's to read.
	follows := st.HA != nil && !st.HA.Leading
	fmt.Fprintf(tw, "last pass\t%s\n", passLine(st))
	if !follows {
		fmt.Fprintf(tw, "telemetry\t%s\tjob manager\t%s\n", okOr(st.Telemetry, "missing: nothing is scaled down"), okOr(st.JobsKnown, "unreadable: nothing is scaled"))
	}
	if st.JobsError != "" {
		fmt.Fprintf(tw, "job manager error\t%s\n", oneLine(st.JobsError))
	}
	fmt.Fprintf(tw, "paused\t%s\tdry run\t%s\n", yesNo(st.Paused)+noteText(st.PauseNote), yesNo(st.DryRun))
	fmt.Fprintf(tw, "spend\t%s/h of %s/h with every server on (saving %s/h%s)\n",
		money(st.SpendPerHour, st.Currency), money(st.AllOnPerHour, st.Currency),
		money(st.AllOnPerHour-st.SpendPerHour, st.Currency), share(st.AllOnPerHour-st.SpendPerHour, st.AllOnPerHour))
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "POOL\tSERVERS\tPOWERED\tDESIRED")
	for _, p := range st.Pools {
		desired := strconv.Itoa(p.Desired)
		if follows {
			desired = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", p.Name, p.Servers, p.Powered, desired)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tPOOL\tSTATE\tSINCE\tPOWER\tPINNED\tCOST/H\tREASON\tDETAIL")
	for _, n := range st.Nodes {
		cost := money(n.CostPerHour, n.Currency)
		if n.LeftConfig != "" {
			cost = "-" // in no pool: no cost is known
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, orDash(n.Pool), n.State, timestamp(n.Since),
			orDash(n.Power), yesNo(n.Pinned), cost, orDash(string(n.Reason)), orDash(nodeDetail(n)))
	}
	return tw.Flush()
}

// nodeDetail is the action under way on the server, if any, what rota does with a server no
// longer in the config, the last pass's detail and the notes of its pin and maintenance.
func nodeDetail(n api.NodeStatus) string {
	var parts []string
	for _, p := range []string{inFlightText(n.InFlight), n.LeftConfig, oneLine(n.Detail), handsOffText(n)} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "; ")
}

// handsOffText gives the notes of a server's pin and maintenance ("" when neither has one).
func handsOffText(n api.NodeStatus) string {
	var parts []string
	if n.Pinned && n.PinNote != "" {
		parts = append(parts, "pinned"+noteText(n.PinNote))
	}
	if n.Maintenance && n.MaintenanceNote != "" {
		parts = append(parts, "maintenance"+noteText(n.MaintenanceNote))
	}
	return strings.Join(parts, "; ")
}

// noteText is an operator's note as it follows what it was given with (" (note: ...)"), or
// "" when none was.
func noteText(note string) string {
	if note == "" {
		return ""
	}
	return " (note: " + oneLine(note) + ")"
}

// inFlightText says what action is under way ("" when none is).
func inFlightText(f *api.InFlight) string {
	if f == nil {
		return ""
	}
	return fmt.Sprintf("in flight: %s (%s) since %s", f.Kind, f.Reason, timestamp(f.Since))
}

// leaderLine says who leads, as the rota that answered sees it, and why it does not.
func leaderLine(h api.HAStatus) string {
	var line string
	switch {
	case h.Leading:
		line = h.Self + " (this rota, since " + timestamp(h.Since) + ")"
		if h.Backend == "bbolt" {
			line = h.Self + " (one rota on a bbolt file)"
		}
	case h.Leader != "":
		line = h.Leader
		if h.LeaderURL != "" {
			line += " at " + h.LeaderURL
		}
		line += "; " + h.Self + ", which answered, follows"
	default:
		line = "none: no rota plans or acts, and the fleet stays as it is"
	}
	if h.Problem != "" {
		line += " (" + h.Self + ": " + oneLine(h.Problem) + ")"
	}
	return line
}

func passLine(st api.Status) string {
	switch {
	case st.LastPass.IsZero() && st.LastError != "":
		return "none in this term (" + oneLine(st.LastError) + ")"
	case st.LastPass.IsZero() && st.HA != nil && !st.HA.Leading:
		return "none here: this rota does not lead (the leader's status shows its passes, telemetry and job manager)"
	case st.LastPass.IsZero():
		return "none yet"
	case !st.LastPassOK:
		return fmt.Sprintf("%s (failed: %s)", timestamp(st.LastPass), orDash(oneLine(st.LastError)))
	}
	return timestamp(st.LastPass) + " (ok)"
}

func timestamp(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}

func okOr(ok bool, otherwise string) string {
	if ok {
		return "ok"
	}
	return otherwise
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func money(v float64, currency string) string { return fmt.Sprintf("%.2f %s", v, currency) }

func share(part, whole float64) string {
	if whole <= 0 {
		return ""
	}
	return fmt.Sprintf(", %.1f%%", 100*part/whole)
}
