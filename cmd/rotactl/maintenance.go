package main

import (
	"context"
	"fmt"

	"github.com/alecthomas/kingpin/v2"
)

type maintenanceFlags struct {
	api  *apiFlags
	node string
	mode string
	note string
}

// settledIfLeft says what ending a pin or maintenance does to a server taken out of the config
// (which rotactl cannot tell from the answer): rota settles it, as status's note then says.
const settledIfLeft = "or, if it left the config, settles it: see rotactl status"

// registerMaintenance adds `rotactl maintenance NODE on|off [--note]`.
func registerMaintenance(app *kingpin.Application, cmds map[string]command) {
	f := &maintenanceFlags{}
	c := app.Command("maintenance", "Put a server in maintenance (rota neither acts on it nor finishes an action a crash left on it) or take it out.")
	f.api = addAPIFlags(c)
	c.Flag("note", "Why (recorded with your user name).").StringVar(&f.note)
	c.Arg("node", "Node name from the inventory.").Required().StringVar(&f.node)
	c.Arg("mode", "on or off.").Required().EnumVar(&f.mode, "on", "off")
	cmds[c.FullCommand()] = func(ctx context.Context, e env) int {
		c, err := f.api.client()
		if err != nil {
			return apiFailed(e, err)
		}
		on := f.mode == "on"
		if err := c.SetMaintenance(ctx, f.node, on, withUser(f.note)); err != nil {
			return apiFailed(e, err)
		}
		if on {
			fmt.Fprintf(e.stdout, "%s in maintenance: rota leaves it alone until `rotactl maintenance %s off`\n", f.node, f.node)
		} else {
			fmt.Fprintf(e.stdout, "%s out of maintenance: rota manages it again (%s)\n", f.node, settledIfLeft)
		}
		return 0
	}
}
