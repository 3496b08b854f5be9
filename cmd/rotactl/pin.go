package main

import (
	"context"
	"fmt"

	"github.com/alecthomas/kingpin/v2"
)

type pinFlags struct {
	api  *apiFlags
	node string
	note string
}

// registerPin adds `rotactl pin NODE [--note]` and `rotactl unpin NODE`.
func registerPin(app *kingpin.Application, cmds map[string]command) {
	for _, pinned := range []bool{true, false} {
		f := &pinFlags{}
		var c *kingpin.CmdClause
		if pinned {
			c = app.Command("pin", "Pin a server: rota never drains, powers off or powers on a pinned server until it is unpinned.")
		} else {
			c = app.Command("unpin", "Unpin a server: rota manages it again from the next pass.")
		}
		f.api = addAPIFlags(c)
		c.Flag("note", "Why (recorded with your user name).").StringVar(&f.note)
		c.Arg("node", "Node name from the inventory.").Required().StringVar(&f.node)
		cmds[c.FullCommand()] = func(ctx context.Context, e env) int {
			c, err := f.api.client()
			if err != nil {
				return apiFailed(e, err)
			}
			if err := c.SetPinned(ctx, f.node, pinned, withUser(f.note)); err != nil {
				return apiFailed(e, err)
			}
			if pinned {
				fmt.Fprintf(e.stdout, "pinned %s: rota leaves it alone until `rotactl unpin %s`\n", f.node, f.node)
			} else {
				fmt.Fprintf(e.stdout, "unpinned %s: rota manages it again (%s)\n", f.node, settledIfLeft)
			}
			return 0
		}
	}
}
