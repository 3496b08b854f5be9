package redfishemu

import (
	"context"
	"time"
)

// Clock is the emulator's time source (cmd/rota-redfish-emulator passes the real one).
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d; stop cancels it.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
	// Sleep waits d, or until ctx ends.
	Sleep(ctx context.Context, d time.Duration) error
}
