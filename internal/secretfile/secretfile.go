// Package secretfile reads the files that hold rota's secrets (the API and webhook tokens,
// BMC passwords) by one rule: a file every user may read or write is refused, as ssh refuses
// such a key, since a secret anyone on the machine can read, or replace, guards nothing.
// Errors name the file, never its content.
package secretfile

import (
	"fmt"
	"io"
	"os"
)

// Read returns at most limit bytes of the file at path, which the errors call what ("token
// file", "password_file"). A file open to every user (o+r or o+w) is an error naming its mode
// and the chmod that fixes it; so is one larger than limit.
func Read(what, path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	if perm := st.Mode().Perm(); perm&0o006 != 0 {
		return nil, fmt.Errorf("%s %s is open to every user (mode %04o): chmod o-rw %s", what, path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", what, err)
	case int64(len(b)) > limit:
		return nil, fmt.Errorf("%s %s is larger than %d bytes", what, path, limit)
	}
	return b, nil
}
