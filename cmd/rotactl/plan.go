package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/alecthomas/kingpin/v2"

	"github.com/rotahq/rota/scaler/fleet"
)

type planFlags struct {
	api    *apiFlags
	output string
}

// registerPlan adds `rotactl plan`: a dry-run pass now.
func registerPlan(app *kingpin.Application, cmds map[string]command) {
	f := &planFlags{}
	c := app.Command("plan", "Observe and plan now, as a dry run: print the actions rota would take and why it would leave each other server alone. Nothing is done.")
	f.api = addAPIFlags(c)
	outputFlag(c, &f.output)
	cmds[c.FullCommand()] = func(ctx context.Context, e env) int {
		c, err := f.api.client()
		if err != nil {
			return apiFailed(e, err)
		}
		d, err := c.Plan(ctx)
		if err != nil {
			return apiFailed(e, err)
		}
		if f.output == "json" {
			err = writeJSON(e.stdout, d)
		} else {
			err = writePlan(e.stdout, d)
		}
		if err != nil {
			return apiFailed(e, err)
		}
		return 0
	}
}

func writePlan(w io.Writer, d fleet.Decision) error {
	fmt.Fprintf(w, "dry run: nothing was done. %d action(s), %d server(s) left alone.\n\n", len(d.Actions), len(d.Skips))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(d.Actions) > 0 {
		fmt.Fprintln(tw, "ACTION\tNODE\tPOOL\tREASON\tDETAIL")
		for _, a := range d.Actions {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.Kind, a.Node, a.Pool, a.Reason, orDash(oneLine(a.Detail)))
		}
		fmt.Fprintln(tw)
	}
	if len(d.Skips) > 0 {
		fmt.Fprintln(tw, "LEFT ALONE\tPOOL\tREASON\tDETAIL")
		for _, s := range d.Skips {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Node, s.Pool, s.Reason, orDash(oneLine(s.Detail)))
		}
		fmt.Fprintln(tw)
	}
	pools := make([]string, 0, len(d.Desired))
	for p := range d.Desired {
		pools = append(pools, p)
	}
	slices.Sort(pools)
	fmt.Fprintln(tw, "POOL\tDESIRED ON")
	for _, p := range pools {
		fmt.Fprintf(tw, "%s\t%d\n", p, d.Desired[p])
	}
	return tw.Flush()
}
