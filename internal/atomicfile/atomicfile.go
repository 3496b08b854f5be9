// Package atomicfile replaces files that other programs read while rota writes them (the rule
// files and file_sd targets Prometheus loads, a store's backup) through renameio: a reader
// sees the old file or the new one whole, and the new one is synced before the rename, so a
// crash never leaves an empty or partial file in its place (a rule file cut short would drop
// every rota alert on Prometheus's next reload). The temporary file is made beside the file,
// named "." + its name + digits (never in a shared temporary folder, which a store's backup
// could fill), so a glob such as targets/*.json does not match it.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"
)

// Write replaces path with data, readable by every user (Prometheus usually runs as its own).
func Write(path string, data []byte) error {
	return named(path, renameio.WriteFile(path, data, 0o644, renameio.WithTempDir(filepath.Dir(path)), renameio.WithStaticPermissions(0o644)))
}

// Pending is a file that replaces path once its CloseAtomicallyReplace is called (its Cleanup
// removes it otherwise), private to its owner (0600). A path that is a folder is refused here,
// before anything is written into the pending file.
func Pending(path string) (*renameio.PendingFile, error) {
	if isFolder(path) {
		return nil, named(path, fs.ErrExist)
	}
	f, err := renameio.NewPendingFile(path, renameio.WithTempDir(filepath.Dir(path)), renameio.WithStaticPermissions(0o600))
	return f, named(path, err)
}

// named says which file could not be written (renameio's errors name its temporary file), and
// a missing folder, or a folder where the file would go, in those words.
func named(path string, err error) error {
	if err == nil {
		return nil
	}
	dir := filepath.Dir(path)
	if _, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
		return fmt.Errorf("writing %s: no folder %s", path, dir)
	}
	if isFolder(path) {
		return fmt.Errorf("writing %s: it is a folder; name a file", path)
	}
	return fmt.Errorf("writing %s: %w", path, err)
}

func isFolder(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
