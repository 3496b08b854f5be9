package loop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

// wake calls Wake as the API does, runs one pass, and returns what the caller got.
func (f *fx) wake(nodes ...string) []api.WakeResult {
	f.t.Helper()
	return f.wakeWith("slurm resume", nodes...)
}

// wakeWith is wake with the caller's note.
func (f *fx) wakeWith(note string, nodes ...string) []api.WakeResult {
	f.t.Helper()
	type answer struct {
		res []api.WakeResult
		err error
	}
	got := make(chan answer, 1)
	go func() {
		res, err := f.loop.Wake(context.Background(), nodes, note)
		got <- answer{res, err}
	}()
	testutilEventually(f.t, func() bool {
		f.loop.wakes.mu.Lock()
		defer f.loop.wakes.mu.Unlock()
		return len(f.loop.wakes.callers) == 1
	})
	f.pass()
	a := <-got
	if a.err != nil {
		f.t.Fatal(a.err)
	}
	return a.res
}

// testutilEventually polls cond for up to 10 s (a goroutine has to get going).
func testutilEventually(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
	}
}

func offNow(f *fx, nodes ...string) {
	f.t.Helper()
	for _, n := range nodes {
		f.world.Set(n, func(s *executortest.Server) { s.Power = "off"; s.Responding = false })
	}
	f.pass()
	for _, n := range nodes {
		if st := f.state(n); st != fleet.StateOff {
			f.t.Fatalf("%s is %s, want off", n, st)
		}
	}
}

func powerOns(f *fx) []string {
	var out []string
	for _, c := range f.world.Commands() {
		if c.Op == "on" {
			out = append(out, c.Node)
		}
	}
	return out
}

// TestWakePowersOnWhatTheJobManagerAsks: an asked-for server that is Off is powered on by the
// next pass with the reason "requested", one already on is left as it is, and one not in the
// inventory is refused; the planner proposed nothing for any of them.
func TestWakePowersOnWhatTheJobManagerAsks(t *testing.T) {
	f := newFx(t, nil, nil)
	f.pass()
	offNow(f, "cpu02", "gpu02")
	res := f.wake("cpu02", "cpu01", "ghost")
	want := []api.WakeResult{
		{Node: "cpu02", Result: api.WakeStarted, Reason: fleet.ReasonRequested, Detail: "the job manager placed work on it: slurm resume"},
		{Node: "cpu01", Result: api.WakePowered, Detail: "on"},
		{Node: "ghost", Result: api.WakeRefused, Reason: fleet.SkipUnknownNode, Detail: "not in the inventory"},
	}
	if !slices.Equal(res, want) {
		t.Fatalf("results:\n got %+v\nwant %+v", res, want)
	}
	if got := powerOns(f); !slices.Equal(got, []string{"cpu02"}) {
		t.Fatalf("powered on %v, want only cpu02", got)
	}
	if s := f.state("cpu02"); s != fleet.StateBooting && s != fleet.StateOn {
		t.Errorf("cpu02 is %s after its power-on", s)
	}
	hist, err := f.st.Audit("cpu02", 5)
	if err != nil || len(hist) == 0 || hist[0].Reason != fleet.ReasonRequested {
		t.Errorf("cpu02's audit: %+v, %v; want the power-on with reason requested", hist, err)
	}
	if got := testutil.ToFloat64(f.loop.metrics.wakes.WithLabelValues(api.WakeStarted)); got != 1 {
		t.Errorf("%v started wakes counted, want 1", got)
	}
	// Answered: the next pass does nothing more for them.
	f.pass()
	if got := powerOns(f); len(got) != 1 {
		t.Errorf("powered on %v after the request was answered", got)
	}
}

// TestWakeKeepsTheGate: the operator's word and the BMC's silence hold against the job
// manager too: paused or pinned or in maintenance is refused, power unknown waits.
func TestWakeKeepsTheGate(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(f *fx)
		result string
		reason fleet.Reason
	}{
		{"paused", func(f *fx) {
			if err := f.loop.SetPaused(context.Background(), true, "incident"); err != nil {
				t.Fatal(err)
			}
		}, api.WakeRefused, fleet.SkipPaused},
		{"pinned", func(f *fx) {
			if err := f.loop.SetPinned(context.Background(), "cpu02", true, "firmware"); err != nil {
				t.Fatal(err)
			}
		}, api.WakeRefused, fleet.SkipPinned},
		{"maintenance", func(f *fx) {
			if err := f.loop.SetMaintenance(context.Background(), "cpu02", true, "disks"); err != nil {
				t.Fatal(err)
			}
		}, api.WakeRefused, fleet.SkipMaintenance},
		{"bmc unreadable", func(f *fx) {
			f.world.Set("cpu02", func(s *executortest.Server) { s.PowerUnknown = true })
		}, api.WakeWaiting, fleet.SkipPowerUnknown},
		{"failed", func(f *fx) {
			if err := f.st.UpdateNode("cpu02", func(n *store.Node) error {
				n.Failed(fleet.PowerOn, f.clock.Now(), time.Hour)
				n.Enter(fleet.StateFailed, f.clock.Now())
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}, api.WakeRefused, fleet.SkipBackoff},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t, nil, nil)
			f.pass()
			offNow(f, "cpu02")
			c.setup(f)
			select {
			case <-f.loop.nudges: // an operator's change asked for a pass: the wake below runs it
			default:
			}
			res := f.wake("cpu02")
			if len(res) != 1 || res[0].Result != c.result || res[0].Reason != c.reason {
				t.Fatalf("result %+v, want %s (%s)", res, c.result, c.reason)
			}
			if got := powerOns(f); len(got) != 0 {
				t.Fatalf("powered on %v", got)
			}
		})
	}
}

// TestWakeWaitsThenActs: a server that cannot be powered on yet (its BMC unreadable) stays
// asked for: one more pass is asked at once, and the first pass that can powers it on. Past
// its pool's boot timeout the request is dropped.
func TestWakeWaitsThenActs(t *testing.T) {
	f := newFx(t, nil, nil)
	f.pass()
	offNow(f, "cpu01", "cpu02")
	for _, n := range []string{"cpu01", "cpu02"} {
		f.world.Set(n, func(s *executortest.Server) { s.PowerUnknown = true })
	}
	if res := f.wake("cpu01", "cpu02"); res[0].Result != api.WakeWaiting || res[1].Result != api.WakeWaiting {
		t.Fatalf("results %+v, want both waiting", res)
	}
	if n := <-f.loop.work; n.trigger != triggerWake {
		t.Fatalf("next pass asked by %q, want %q", n.trigger, triggerWake)
	}
	f.pass() // still unreadable: no second nudge
	if len(f.loop.work) != 0 {
		t.Fatal("a waiting request asked for a pass again")
	}
	f.world.Set("cpu01", func(s *executortest.Server) { s.PowerUnknown = false })
	f.pass()
	if got := powerOns(f); !slices.Equal(got, []string{"cpu01"}) {
		t.Fatalf("powered on %v, want cpu01 once its BMC answers", got)
	}
	bootTimeout := time.Duration(f.cfg.Pool("cpu").BootTimeout)
	f.clock.Advance(bootTimeout + time.Second)
	f.pass() // cpu02's request is dropped
	f.world.Set("cpu02", func(s *executortest.Server) { s.PowerUnknown = false })
	f.pass()
	if got := powerOns(f); !slices.Equal(got, []string{"cpu01"}) {
		t.Fatalf("powered on %v: cpu02's request outlived its pool's boot timeout", got)
	}
}

// TestWakeInDryRun: dry run answers dry_run and sends nothing.
func TestWakeInDryRun(t *testing.T) {
	f := newFx(t, func(c *config.Config) { c.Policy.DryRun = true }, nil)
	f.pass()
	f.world.Set("cpu02", func(s *executortest.Server) { s.Power = "off" })
	f.pass()
	res := f.wake("cpu02")
	if len(res) != 1 || res[0].Result != api.WakeDryRun {
		t.Fatalf("results %+v, want dry_run", res)
	}
	if got := powerOns(f); len(got) != 0 {
		t.Fatalf("dry run powered on %v", got)
	}
}

// TestWakeCallerGone: a caller whose context ends before a pass gets an error; rota keeps the
// request and the next pass acts on it.
func TestWakeCallerGone(t *testing.T) {
	f := newFx(t, nil, nil)
	f.pass()
	offNow(f, "cpu02")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.loop.Wake(ctx, []string{"cpu02"}, "slurm resume"); err == nil {
		t.Fatal("Wake with its context gone returned no error")
	}
	f.pass()
	if got := powerOns(f); !slices.Equal(got, []string{"cpu02"}) {
		t.Fatalf("powered on %v, want cpu02", got)
	}
}

// TestWakeNoteIsCutShort: the caller's note reaches the audit and the answer cut to a few
// dozen bytes, whatever its size.
func TestWakeNoteIsCutShort(t *testing.T) {
	f := newFx(t, nil, nil)
	f.pass()
	offNow(f, "cpu02")
	res := f.wakeWith(strings.Repeat("x", 1<<20), "cpu02")
	if len(res) != 1 || res[0].Result != api.WakeStarted || len(res[0].Detail) > 200 {
		t.Fatalf("result %+v (detail %d bytes), want started with a short detail", res, len(res[0].Detail))
	}
	hist, err := f.st.Audit("cpu02", 1)
	if err != nil || len(hist) != 1 || len(hist[0].Detail) > 200 {
		t.Fatalf("audit %+v, %v: want one record with a short detail", hist, err)
	}
}

// leadership is a settable Leadership: leading, or following the leader named.
type leadership struct {
	mu      sync.Mutex
	leading bool
	leader  string
}

func (l *leadership) set(leading bool, leader string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leading, l.leader = leading, leader
}

func (l *leadership) Leading() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leading
}

func (l *leadership) Status() api.HAStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	return api.HAStatus{Backend: "etcd", Self: "rota-a", Leading: l.leading, Leader: l.leader, LeaderURL: "http://" + l.leader}
}

// A wake taken while this rota led, whose term then ends before a pass took it (the pass in
// flight failed: its writes refused), is answered at once with the leader to ask, not left
// waiting for a pass of a rota that no longer leads (Slurm's resume, lost).
func TestWakeLeftWhenTheTermEndsNamesTheLeader(t *testing.T) {
	f := newFx(t, nil, nil)
	lead := &leadership{leading: true}
	f.loop.o.Leadership = lead
	if err := f.st.Close(); err != nil { // every pass fails before it takes a wake
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f.loop.Run(ctx) }()
	<-f.clock.calls // the first pass done, the loop waits
	type answer struct {
		res []api.WakeResult
		err error
	}
	got := make(chan answer, 1)
	go func() {
		wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer wcancel()
		res, err := f.loop.Wake(wctx, []string{"cpu01"}, "slurm resume")
		got <- answer{res, err}
	}()
	<-f.clock.calls // the wake's pass failed; the loop waits again, the caller too
	lead.set(false, "rota-b")
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	select {
	case a := <-got:
		var nl *api.NotLeaderError
		if !errors.As(a.err, &nl) || nl.Leader != "rota-b" {
			t.Errorf("the caller got %v, %v; want a NotLeaderError naming rota-b", a.res, a.err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the caller still waits for a pass 5s after the term ended")
	}
}

// A wake pending as rota stops is answered "rota is stopping" (api.ErrStopping: 503 with
// Retry-After, where rotactl slurm resume asks again, reaching the next rota or acting alone),
// never with what a pass cut short made of it: the pass in flight at SIGTERM read its BMC as
// unknown and answered "waiting / power_unknown", which resume took as in hand (exit 0) while
// rota then dropped the request; a wake the loop never took was a 500; and one asked after the
// loop ended waited for a pass that never came.
func TestWakeAsRotaStopsIsAskedAgain(t *testing.T) {
	cases := []struct {
		name string
		stop func(f *fx, wake func() <-chan error) error
	}{
		{"the pass in flight is cut short", func(f *fx, wake func() <-chan error) error {
			got := wake()
			f.world.Set("cpu02", func(s *executortest.Server) { s.PowerUnknown = true }) // its read cut short
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_ = f.loop.runPass(ctx)
			f.ex.Wait()
			f.loop.endWakes()
			return answered(t, got)
		}},
		{"no pass took it", func(f *fx, wake func() <-chan error) error {
			got := wake()
			f.loop.endWakes()
			return answered(t, got)
		}},
		{"asked after the loop ended", func(f *fx, wake func() <-chan error) error {
			f.loop.endWakes()
			return answered(t, wake())
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t, nil, nil)
			f.pass()
			offNow(f, "cpu02")
			wake := func() <-chan error {
				got := make(chan error, 1)
				n := len(f.loop.wakes.callers)
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					res, err := f.loop.Wake(ctx, []string{"cpu02"}, "slurm resume")
					if err == nil {
						err = fmt.Errorf("answered %+v", res)
					}
					got <- err
				}()
				testutilEventually(t, func() bool {
					f.loop.wakes.mu.Lock()
					defer f.loop.wakes.mu.Unlock()
					return len(f.loop.wakes.callers) > n || len(got) > 0
				})
				return got
			}
			if err := c.stop(f, wake); !errors.Is(err, api.ErrStopping) {
				t.Errorf("the caller got %v; want api.ErrStopping", err)
			}
		})
	}
}

// answered waits up to 5 s for a caller's answer.
func answered(t *testing.T, got <-chan error) error {
	t.Helper()
	select {
	case err := <-got:
		return err
	case <-time.After(5 * time.Second):
		return errors.New("no answer within 5s")
	}
}
