package redfishemu

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when goroutines outlive them (listeners, transition
// timers, hooks).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
