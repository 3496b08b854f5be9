package bmc

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
)

// TestSlotsWaitEndsClean: a request whose context ends while it waits for a slot leaves the
// queue (the gauge of those waiting back to 0) and takes no slot, and one given a slot as its
// context ends hands it on: many waiters cancelled at random leave every slot free.
func TestSlotsWaitEndsClean(t *testing.T) {
	waiting := prometheus.NewGauge(prometheus.GaugeOpts{Name: "w"})
	s := newSlots(2, waiting)
	ctx := context.Background()
	for range 2 {
		if err := s.take(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wctx, cancel := context.WithTimeout(ctx, time.Duration(i%7)*time.Millisecond)
			defer cancel()
			if err := s.take(wctx, i%3 == 0); err == nil {
				s.give()
			} else if !errors.Is(err, context.DeadlineExceeded) {
				t.Error(err)
			}
		}()
	}
	time.Sleep(3 * time.Millisecond)
	s.give()
	s.give()
	wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.free != 2 || len(s.urgent)+len(s.normal) != 0 {
		t.Errorf("%d slots free, %d urgent and %d others waiting; want 2 free, none waiting", s.free, len(s.urgent), len(s.normal))
	}
	if v := promtest.ToFloat64(waiting); v != 0 {
		t.Errorf("%v counted waiting", v)
	}
}

// TestSlotWaitNothingSent: an operation whose context ends while its first request waits for
// a slot sends nothing (no connection opened, no request counted) and says so.
func TestSlotWaitNothingSent(t *testing.T) {
	clock := newFakeClock()
	hold := make(chan struct{})
	bmcs := map[string]*fakeBMC{"busy": {clock: clock, hold: hold, script: script{raw: "on"}}, "n": {clock: clock, script: script{raw: "on"}}}
	c, reg := newTestController(t, ProtocolRedfish, bmcs, clock, func(o *Options) { o.MaxConcurrent = 1 })
	done := make(chan error, 1)
	go func() { _, err := c.State(context.Background(), "busy"); done <- err }()
	for metricValue(t, reg, "rota_bmc_requests_in_flight", nil) != 1 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := c.Off(ctx, "n", true)
	// Named as what it is, not as a BMC that could not say its state (it said state_unknown).
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrNoSlot) || Reason(err) != "no_slot" {
		t.Errorf("off whose wait for a slot ran out: %v (reason %s)", err, Reason(err))
	}
	close(hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b := bmcs["n"]; b.dials != 0 || len(b.commands) != 0 {
		t.Errorf("n: %d connections, commands %q; want none", b.dials, b.commands)
	}
	if v := metricValue(t, reg, "rota_bmc_operations_total", map[string]string{"operation": "off_graceful", "result": "no_slot"}); v != 1 {
		t.Errorf("%v graceful offs counted no_slot, want 1", v)
	}
	if v := metricValue(t, reg, "rota_bmc_requests_total", nil); v != 2 {
		t.Errorf("%v requests counted, want busy's two alone (its open, its state read)", v)
	}
	for _, g := range []string{"rota_bmc_requests_waiting", "rota_bmc_requests_in_flight"} {
		if v := metricValue(t, reg, g, nil); v != 0 {
			t.Errorf("%s %v", g, v)
		}
	}
}

// TestCommandWithoutASlotIsNotSpaced: a command whose wait for a slot ran out never went out,
// so the BMC's next command is not spaced from it (min_command_interval): it used to stamp the
// BMC's last command all the same.
func TestCommandWithoutASlotIsNotSpaced(t *testing.T) {
	clock := newFakeClock()
	bmcs := map[string]*fakeBMC{"n": {clock: clock, script: script{raw: "on"}}}
	c, _ := newTestController(t, ProtocolRedfish, bmcs, clock, func(o *Options) { o.MaxConcurrent = 1 })
	if err := c.slots.take(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	n := c.nodes["n"]
	s := &session{c: c, n: n, log: c.opts.Logger}
	// Alive when send looks, ended while it waits for the slot.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := s.send(ctx, actionOff); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("send without a slot: %v", err)
	}
	c.slots.give()
	if len(bmcs["n"].commands) != 0 || !n.bmc.lastCommand.IsZero() {
		t.Errorf("commands %q, last command at %v; want none, never", bmcs["n"].commands, n.bmc.lastCommand)
	}
}
