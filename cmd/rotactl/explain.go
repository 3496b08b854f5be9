package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/alecthomas/kingpin/v2"

	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/fleet"
)

type explainFlags struct {
	api    *apiFlags
	output string
	node   string
}

// registerExplain adds `rotactl explain NODE`.
func registerExplain(app *kingpin.Application, cmds map[string]command) {
	f := &explainFlags{}
	c := app.Command("explain", "Say why a server is in its state: what the job manager and Prometheus said of it, the last pass's verdict, and its recent history.")
	f.api = addAPIFlags(c)
	outputFlag(c, &f.output)
	c.Arg("node", "Node name from the inventory.").Required().StringVar(&f.node)
	cmds[c.FullCommand()] = func(ctx context.Context, e env) int {
		c, err := f.api.client()
		if err != nil {
			return apiFailed(e, err)
		}
		x, err := c.Explain(ctx, f.node)
		if err != nil {
			return apiFailed(e, err)
		}
		if f.output == "json" {
			err = writeJSON(e.stdout, x)
		} else {
			err = writeExplanation(e.stdout, x)
		}
		if err != nil {
			return apiFailed(e, err)
		}
		return 0
	}
}

func writeExplanation(w io.Writer, x api.Explanation) error {
	n := x.Node
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	planned := n.LeftConfig == "" && x.Forgotten == nil
	switch {
	case x.Forgotten != nil:
		// Its record deleted (rotactl forget): its history, and who forgot it when.
		fmt.Fprintf(tw, "node\t%s (in no pool, no record: forgotten)\n", n.Name)
		fmt.Fprintf(tw, "forgotten\t%s: %s\n", timestamp(x.Forgotten.Time), oneLine(x.Forgotten.Detail))
	case n.LeftConfig != "":
		// No pass reads it any more: its record, and what rota does with it, is all there is.
		fmt.Fprintf(tw, "node\t%s (in no pool)\n", n.Name)
		fmt.Fprintf(tw, "state\t%s since %s, pinned %s (as last recorded)\n", n.State, timestamp(n.Since), yesNo(n.Pinned))
		fmt.Fprintf(tw, "config\t%s\n", n.LeftConfig)
	default:
		fmt.Fprintf(tw, "node\t%s (pool %s)\n", n.Name, n.Pool)
		fmt.Fprintf(tw, "state\t%s since %s, power %s, pinned %s, %s/h while on\n", n.State, timestamp(n.Since), orDash(n.Power), yesNo(n.Pinned), money(n.CostPerHour, n.Currency))
	}
	if f := inFlightText(n.InFlight); f != "" {
		fmt.Fprintf(tw, "action\t%s\n", f)
	}
	if h := handsOffText(n); h != "" {
		fmt.Fprintf(tw, "hands off\t%s\n", h)
	}
	if planned {
		fmt.Fprintf(tw, "verdict\t%s\n", verdict(x))
		if x.JobsError != "" {
			fmt.Fprintf(tw, "jobs\tjob manager not read last pass (nothing scaled): %s\n", oneLine(x.JobsError))
		} else {
			fmt.Fprintf(tw, "jobs\t%s\n", jobsLine(x.Jobs))
		}
		fmt.Fprintf(tw, "telemetry\t%s\n", telemetryLine(x.Telemetry))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(x.History) == 0 {
		_, err := fmt.Fprintln(w, "\nno recent actions")
		return err
	}
	fmt.Fprintln(w, "\nrecent actions, newest first:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tACTION\tREASON\tRESULT\tDETAIL")
	for _, h := range x.History {
		detail := h.Detail
		if h.Error != "" {
			detail += " (error: " + h.Error + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", timestamp(h.Time), h.Action, h.Reason, h.Result, orDash(oneLine(detail)))
	}
	return tw.Flush()
}

func verdict(x api.Explanation) string {
	switch {
	case x.Action != nil:
		return fmt.Sprintf("%s (%s): %s", x.Action.Kind, x.Action.Reason, orDash(x.Action.Detail))
	case x.Skip != nil:
		return fmt.Sprintf("left alone (%s): %s", x.Skip.Reason, orDash(x.Skip.Detail))
	}
	return "none in the last pass"
}

func jobsLine(j fleet.JobsView) string {
	if !j.Known {
		return "unknown to the job manager (allocation unknown)"
	}
	drain := "not drained"
	switch {
	case j.DrainedByRota:
		drain = "drained by rota"
	case j.Drained:
		drain = "drained by a person (rota never undoes it)"
	}
	agent := "agent responding"
	if !j.Responding {
		agent = "agent NOT responding"
	}
	return fmt.Sprintf("%d jobs, %d CPUs, %d GPUs allocated; %s; %s", j.Jobs, j.CPUs, j.GPUs, drain, agent)
}

func telemetryLine(t fleet.TelemetryView) string {
	var line string
	if t.Present {
		line = fmt.Sprintf("CPU max %.1f%%, GPU max %.1f%%, GPU mean %.1f%%, %d GPU processes (last sample %s)",
			100*t.CPUMax, 100*t.GPUMax, 100*t.GPUMean, t.GPUProcesses, timestamp(t.LastSample))
	} else {
		why := t.Missing
		if why == "" {
			why = "missing or stale"
		}
		line = fmt.Sprintf("%s (last sample %s): never counts as idle", why, timestamp(t.LastSample))
	}
	if t.UnknownTelemetry != "" && !strings.HasPrefix(t.Missing, "unknown telemetry") {
		line += "; unknown telemetry: " + t.UnknownTelemetry
	}
	return line
}
