// Package clock is the wall clock, in one place. Library packages never read time themselves:
// they take a clock interface of their own (Now, Sleep, After, AfterFunc: whichever they need),
// and cmd/ and tests that run real components pass Real, which satisfies all of them.
package clock

import (
	"context"
	"sync"
	"time"
)

// Real is the wall clock.
type Real struct{}

// Now returns the current time.
func (Real) Now() time.Time { return time.Now() }

// Sleep waits d, or until ctx ends (then it returns ctx.Err()).
func (Real) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// After returns a channel that receives the time after d.
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }

// AfterFunc calls f in its own goroutine after d; the returned stop cancels it.
func (Real) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	return time.AfterFunc(d, f).Stop
}

// Manual is a clock a test moves by hand (Now and Advance only). Safe for concurrent use.
type Manual struct {
	mu  sync.Mutex
	now time.Time
}

// NewManual returns a clock reading now.
func NewManual(now time.Time) *Manual { return &Manual{now: now} }

// Now returns the clock's time.
func (c *Manual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Manual) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
