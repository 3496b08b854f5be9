//go:build !unix

package main

// lockedByProcess cannot tell here; bbolt's lock is an flock on unix alone.
func lockedByProcess(string) (bool, error) { return false, nil }
