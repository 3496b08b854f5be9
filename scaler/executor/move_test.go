package executor

import (
	"context"
	"errors"
	"testing"

	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs"
	"github.com/rotahq/rota/scaler/jobs/none"
)

// A move drains the server first, then moves its jobs through the job manager, leaves it
// Draining and empty, and spends the move budget; the power-off that follows re-checks
// allocation as any other (safety invariant 1 unchanged).
func TestMoveEmptiesTheServerFirst(t *testing.T) {
	f := newFx(t, true, nil)
	f.busyWith("cpu01")
	if err := f.ex.run(context.Background(), act(fleet.Move, "cpu01")); err != nil {
		t.Fatal(err)
	}
	if got := f.world.Commands(); len(got) != 2 || got[0].Op != "drain" || got[1].Op != "move" {
		t.Fatalf("commands %v, want drain then move", got)
	}
	s, n := f.world.Get("cpu01"), f.node("cpu01")
	if s.Jobs != 0 || !s.DrainedByRota || n.State != fleet.StateDraining || n.Intent != nil || !n.DrainedByRota {
		t.Fatalf("after the move: world %+v, store %+v; want empty, drained by rota, Draining", s, n)
	}
	if g, _ := f.st.Global(); len(g.Moves) != 1 {
		t.Errorf("moves recorded %v, want one", g.Moves)
	}
	if r := f.lastAudit("cpu01"); r != auditSucceeded {
		t.Errorf("audit %q, want %q", r, auditSucceeded)
	}
	// A job lands before the power-off: it is called off, as for any drained server.
	f.world.Set("cpu01", func(s *executortest.Server) { s.Jobs = 1 })
	if err := f.ex.run(context.Background(), act(fleet.PowerOff, "cpu01")); !errors.Is(err, ErrAborted) {
		t.Fatalf("power-off after a job landed: %v, want ErrAborted", err)
	}
	if u := f.world.Unsafe(); len(u) > 0 {
		t.Errorf("unsafe: %v", u)
	}
}

// A job the job manager may not requeue stays where it is: the move moves nothing of it.
func TestMoveLeavesWhatMayNotBeRequeued(t *testing.T) {
	f := newFx(t, true, nil)
	f.busyWith("cpu01")
	f.world.Set("cpu01", func(s *executortest.Server) { s.Requeueable = nil })
	if err := f.ex.run(context.Background(), act(fleet.Move, "cpu01")); err != nil {
		t.Fatal(err)
	}
	if s := f.world.Get("cpu01"); s.Jobs != 1 {
		t.Fatalf("%d jobs left, want the one that may not be requeued", s.Jobs)
	}
}

// A job manager that cannot move work makes no move and changes nothing.
func TestMoveNeedsAMover(t *testing.T) {
	f := newFx(t, true, nil)
	f.busyWith("cpu01")
	ex, err := New(Options{Store: f.st, Power: f.world, Jobs: none.Manager{}, Config: f.cfg, Clock: f.clock, Log: f.ex.log})
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.run(context.Background(), act(fleet.Move, "cpu01")); !errors.Is(err, jobs.ErrCannotMove) {
		t.Fatalf("move with adapter none: %v, want ErrCannotMove", err)
	}
	if n := f.node("cpu01"); n.State != fleet.StateOn || n.Intent != nil {
		t.Errorf("store %+v, want it untouched", n)
	}
}

// A move that gives a department its quota back keeps the server in service: no drain, On.
func TestMoveForAQuotaKeepsTheServerOn(t *testing.T) {
	f := newFx(t, true, nil)
	f.busyWith("cpu01")
	a := act(fleet.Move, "cpu01")
	a.Reason, a.Move.Drain = fleet.ReasonQuota, false
	if err := f.ex.run(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if got := f.world.Commands(); len(got) != 1 || got[0].Op != "move" {
		t.Fatalf("commands %v, want the move alone", got)
	}
	if s, n := f.world.Get("cpu01"), f.node("cpu01"); s.Jobs != 0 || s.Drained || n.State != fleet.StateOn || n.DrainedByRota || n.Intent != nil {
		t.Fatalf("world %+v, store %+v; want it On, not drained", s, n)
	}
}

// A move that left work it took off the server waiting on it (a Slurm release that failed:
// jobs held) stays in flight: its intent kept, repair calls Move again at each pass until the
// work is let go. It used to be recorded failed, its intent dropped, and the jobs held for good.
func TestMoveLeftUnfinishedStaysInFlight(t *testing.T) {
	f := newFx(t, true, nil)
	f.busyWith("cpu01")
	f.world.Set("cpu01", func(s *executortest.Server) { s.MoveUnfinished = 2 })
	if err := f.ex.run(context.Background(), act(fleet.Move, "cpu01")); !errors.Is(err, jobs.ErrMoveUnfinished) {
		t.Fatalf("move: %v, want ErrMoveUnfinished", err)
	}
	for i, want := range []int{1, 0} { // jobs still held after each repair
		n := f.node("cpu01")
		if n.Intent == nil || n.Intent.Kind != fleet.Move || n.Intent.Move == nil || n.State != fleet.StateDraining {
			t.Fatalf("after %d repairs: store %+v, want Draining with the move in flight", i, n)
		}
		if r := f.lastAudit("cpu01"); r != auditFailed {
			t.Errorf("after %d repairs: audit %q, want %q", i, r, auditFailed)
		}
		f.repair()
		if s := f.world.Get("cpu01"); len(s.Held) != want {
			t.Fatalf("after %d repairs: held %v, want %d", i+1, s.Held, want)
		}
	}
	if n := f.node("cpu01"); n.Intent != nil || n.State != fleet.StateDraining || !n.DrainedByRota {
		t.Fatalf("finished: store %+v, want Draining, drained by rota, nothing in flight", n)
	}
	if r := f.lastAudit("cpu01"); r != auditSucceeded {
		t.Errorf("finished: audit %q, want %q", r, auditSucceeded)
	}
	if g, _ := f.st.Global(); len(g.Moves) != 1 {
		t.Errorf("moves recorded %v, want one: repair spends no budget", g.Moves)
	}
}
