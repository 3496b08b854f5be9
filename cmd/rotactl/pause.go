package main

import (
	"context"
	"fmt"

	"github.com/alecthomas/kingpin/v2"
)

type pauseFlags struct {
	api  *apiFlags
	note string
}

// registerPause adds `rotactl pause [--note]` and `rotactl resume [--note]`.
func registerPause(app *kingpin.Application, cmds map[string]command) {
	for _, paused := range []bool{true, false} {
		f := &pauseFlags{}
		var c *kingpin.CmdClause
		if paused {
			c = app.Command("pause", "Pause the scaler: it keeps observing and planning, but takes no action until resumed (actions under way finish).")
		} else {
			c = app.Command("resume", "Resume a paused scaler.")
		}
		f.api = addAPIFlags(c)
		c.Flag("note", "Why (recorded with your user name).").StringVar(&f.note)
		cmds[c.FullCommand()] = func(ctx context.Context, e env) int {
			c, err := f.api.client()
			if err != nil {
				return apiFailed(e, err)
			}
			if err := c.SetPaused(ctx, paused, withUser(f.note)); err != nil {
				return apiFailed(e, err)
			}
			if paused {
				fmt.Fprintln(e.stdout, "paused: rota takes no action until `rotactl resume`")
			} else {
				fmt.Fprintln(e.stdout, "resumed: rota acts again from the next pass")
			}
			return 0
		}
	}
}
