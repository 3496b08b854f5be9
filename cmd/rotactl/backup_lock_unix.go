//go:build unix

package main

import (
	"errors"
	"os"
	"syscall"
)

// lockedByProcess reports whether a process holds path's lock as bbolt takes it (flock): a
// running rota holds its store's. A path that is not a regular file holds no store.
func lockedByProcess(path string) (bool, error) {
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		return false, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); {
	case errors.Is(err, syscall.EWOULDBLOCK):
		return true, nil
	case err != nil:
		return false, err
	}
	return false, syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
