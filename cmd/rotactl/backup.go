package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/rotahq/rota/scaler/store"
)

type backupFlags struct {
	api    *apiFlags
	output string
}

// registerBackup adds `rotactl backup --output FILE`.
func registerBackup(app *kingpin.Application, cmds map[string]command) {
	f := &backupFlags{}
	c := app.Command("backup", "Copy the running rota's store to a file: a consistent snapshot, checked to open as a store before it is kept.")
	f.api = addAPIFlags(c)
	c.Flag("output", "File to write (replaced only once the copy is whole and opens).").Required().StringVar(&f.output)
	cmds[c.FullCommand()] = func(ctx context.Context, e env) int {
		c, err := f.api.client()
		if err != nil {
			return apiFailed(e, err)
		}
		tmp, err := os.CreateTemp(filepath.Dir(f.output), "."+filepath.Base(f.output)+".*")
		if err != nil {
			fmt.Fprintln(e.stderr, "rotactl:", err)
			return 1
		}
		defer os.Remove(tmp.Name()) // gone after the rename; removes a failed copy
		n, err := c.Backup(ctx, tmp)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return apiFailed(e, err)
		}
		nodes, err := checkStore(tmp.Name())
		if err == nil {
			err = os.Rename(tmp.Name(), f.output)
		}
		if err != nil {
			fmt.Fprintln(e.stderr, "rotactl: backup not kept:", err)
			return 1
		}
		fmt.Fprintf(e.stdout, "backed up %d bytes (%d node records) to %s\n", n, nodes, f.output)
		return 0
	}
}

// checkStore opens the copy at path as a store and reads every node record, and returns how
// many there are. The copy is checked before it is mapped (a copy cut short is an error, not a
// crash that would leave the temporary file behind).
func checkStore(path string) (int, error) {
	s, err := store.Open(path, store.Options{LockTimeout: time.Second, ReadOnly: true})
	var de *store.DamagedError
	if errors.As(err, &de) {
		return 0, fmt.Errorf("the copy received is not a whole store: %s", de.Problem)
	}
	if err != nil {
		return 0, err
	}
	nodes, err := s.Nodes()
	return len(nodes), errors.Join(err, s.Close())
}
