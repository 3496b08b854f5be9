// Package testutil holds what rota's tests share when they run real components: finding a
// binary built by `make tools` (skipping locally with the install command, failing under
// CI=true), free loopback ports, polling for readiness, and processes stopped by pid at cleanup.
package testutil
