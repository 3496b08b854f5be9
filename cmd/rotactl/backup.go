package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/rotahq/rota/internal/atomicfile"
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
		if err := notALiveStore(f.output); err != nil {
			fmt.Fprintln(e.stderr, "rotactl:", err)
			return 1
		}
		tmp, err := atomicfile.Pending(f.output)
		if err != nil {
			fmt.Fprintln(e.stderr, "rotactl:", err)
			return 1
		}
		defer tmp.Cleanup() // a no-op once it replaced the output; removes a failed copy
		n, err := c.Backup(ctx, tmp)
		if err != nil {
			return apiFailed(e, err)
		}
		nodes, err := checkStore(tmp.Name())
		if err == nil {
			err = notALiveStore(f.output)
		}
		if err == nil {
			err = tmp.CloseAtomicallyReplace()
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

// notALiveStore refuses an output a running process (a rota) holds locked: renaming the copy
// over a live store (--output=/var/lib/rota/rota.db) would leave that rota writing to a file
// no longer there, its pins and intents lost at its next start, and its lock no longer
// guarding the path: a second rota, or rotactl slurm resume acting alone, would take it.
func notALiveStore(path string) error {
	locked, err := store.Locked(path)
	switch {
	case err != nil:
		return fmt.Errorf("checking %s: %w", path, err)
	case locked:
		return fmt.Errorf("%s is locked by a running process (a rota's store?): not replaced; write the backup elsewhere", path)
	}
	return nil
}
