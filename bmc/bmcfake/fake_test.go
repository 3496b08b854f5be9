package bmcfake

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rotahq/rota/bmc"
)

type instantClock struct{ slept time.Duration }

func (c *instantClock) Now() time.Time { return time.Unix(0, 0).Add(c.slept) }
func (c *instantClock) Sleep(ctx context.Context, d time.Duration) error {
	c.slept += d
	return ctx.Err()
}

func TestFake(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		start   bmc.State
		script  func(f *Fake)
		op      func(f *Fake) error
		wantErr error
		want    bmc.State
		cmds    string
	}{
		{"on from off", bmc.StateOff, nil, func(f *Fake) error { return f.On(ctx, "n") }, nil, bmc.StateOn, "[{n on}]"},
		{"on when on sends nothing", bmc.StateOn, nil, func(f *Fake) error { return f.On(ctx, "n") }, nil, bmc.StateOn, "[]"},
		{"graceful off", bmc.StateOn, nil, func(f *Fake) error { return f.Off(ctx, "n", true) }, nil, bmc.StateOff, "[{n off_graceful}]"},
		{"cycle always sends", bmc.StateOn, nil, func(f *Fake) error { return f.Cycle(ctx, "n") }, nil, bmc.StateOn, "[{n cycle}]"},
		{"unknown state sends nothing", bmc.StateUnknown, nil, func(f *Fake) error { return f.On(ctx, "n") }, bmc.ErrStateUnknown, bmc.StateUnknown, "[]"},
		{"scripted auth error", bmc.StateOff, func(f *Fake) { f.FailNext("n", &bmc.AuthError{Node: "n"}) }, func(f *Fake) error { return f.On(ctx, "n") }, bmc.ErrAuth, bmc.StateOff, "[]"},
		{"delay passes through transitioning", bmc.StateOff, func(f *Fake) { f.SetDelay("n", time.Minute) }, func(f *Fake) error { return f.On(ctx, "n") }, nil, bmc.StateOn, "[{n on}]"},
		{"unknown node", bmc.StateOff, nil, func(f *Fake) error { return f.On(ctx, "other") }, bmc.ErrUnknownNode, bmc.StateOff, "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &instantClock{}
			f := New(clock, map[string]bmc.State{"n": tt.start})
			if tt.script != nil {
				tt.script(f)
			}
			err := tt.op(f)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			st, _ := f.State(ctx, "n")
			if st != tt.want {
				t.Errorf("state %s, want %s", st, tt.want)
			}
			if got := fmt.Sprint(f.Commands()); got != tt.cmds && !(tt.cmds == "[]" && got == "[]") {
				t.Errorf("commands %s, want %s", got, tt.cmds)
			}
		})
	}
}
