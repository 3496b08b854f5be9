package bmc

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when goroutines outlive them (bmclib clients, emulator
// listeners, hooks, ipmitool waits).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
