package bmc

import (
	"context"
	"time"
)

// Power controls servers' power through their BMCs, by node name; the endpoints are
// registered when the implementation is built.
//
// Guarantees, for every implementation (Controller, executortest.World):
//   - Safe for concurrent use. Operations on one node run one at a time, in call order as far
//     as the lock allows (Controller: one per BMC, which nodes of one blade enclosure's manager
//     share); operations on different BMCs run in parallel up to a cap.
//   - Idempotent: a node already in the target state gets no command and the call succeeds.
//   - Confirmed: On, Off and Cycle return nil only after the BMC reported the target state.
//   - Never blind: when the state cannot be read, no command is sent and the error matches
//     ErrStateUnknown. Authentication failures match ErrAuth and are not retried.
//   - Bounded by ctx: a cancelled or expired ctx ends the call with ctx's error wrapped.
type Power interface {
	// State reads the node's power state. On error the state is StateUnknown.
	State(ctx context.Context, node string) (State, error)
	// On powers the node on and waits until the BMC reports it on.
	On(ctx context.Context, node string) error
	// Off powers the node off and waits until the BMC reports it off. With graceful, the OS is
	// asked to shut down first and the power is cut only after the grace period.
	Off(ctx context.Context, node string, graceful bool) error
	// Cycle turns a node that is on off and on again (a node that is off is powered on), and
	// waits until it is on.
	Cycle(ctx context.Context, node string) error
}

// Clock is the time source the Controller waits and measures with; tests pass a fake one.
type Clock interface {
	Now() time.Time
	// Sleep waits d, or until ctx ends (then it returns ctx.Err()).
	Sleep(ctx context.Context, d time.Duration) error
}
