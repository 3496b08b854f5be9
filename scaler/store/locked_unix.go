//go:build unix

package store

import (
	"errors"
	"os"
	"syscall"
)

// Locked reports whether a process holds the lock of the store file at path, as bbolt takes it
// (flock), without opening the store: a running rota holds its store's. A path that is not a
// regular file holds no store.
func Locked(path string) (bool, error) {
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
