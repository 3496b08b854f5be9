package main

import (
	"context"
	"fmt"

	"github.com/alecthomas/kingpin/v2"
)

type forgetFlags struct {
	api  *apiFlags
	node string
	note string
}

// registerForget adds `rotactl forget NODE [--note]`.
func registerForget(app *kingpin.Application, cmds map[string]command) {
	f := &forgetFlags{}
	c := app.Command("forget", "Delete the record of a server taken out of the config once rota has settled it (status then no longer lists it); refused while it is in the config, an action is under way or unfinished on it, or it is pinned or in maintenance.")
	f.api = addAPIFlags(c)
	c.Flag("note", "Why (recorded with your user name).").StringVar(&f.note)
	c.Arg("node", "Name of a server no longer in the config.").Required().StringVar(&f.node)
	cmds[c.FullCommand()] = func(ctx context.Context, e env) int {
		c, err := f.api.client()
		if err != nil {
			return apiFailed(e, err)
		}
		n, err := c.Forget(ctx, f.node, withUser(f.note))
		if err != nil {
			return apiFailed(e, err)
		}
		fmt.Fprintf(e.stdout, "%s forgotten (it was %s since %s): rota no longer lists it; its history stays in the store\n", f.node, n.State, n.Since.Format("2006-01-02T15:04:05Z07:00"))
		return 0
	}
}
