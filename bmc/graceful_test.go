package bmc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotahq/rota/bmc/redfishemu"
	"github.com/rotahq/rota/internal/testutil"
)

// TestRedfishGracefulOffIsQuiet: a graceful off that succeeds logs no failure, no warning, and
// counts its request as a success, so an operator has nothing to chase (bmclib's Redfish
// provider, which rota used to send it through, reported every accepted one as failed).
func TestRedfishGracefulOffIsQuiet(t *testing.T) {
	emu, ca := startEmulator(t, emuServer("n", "On", redfishemu.Faults{}))
	log, buf := testLogger()
	reg := prometheus.NewRegistry()
	c, err := NewController(map[string]Endpoint{"n": redfishEndpoint(t, emu, "n", ca)}, redfishOptions(Options{Logger: log, Registerer: reg}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Off(ctx, "n", true); err != nil {
		t.Fatalf("graceful off: %v", err)
	}
	srv := emu.Server("n")
	if got := srv.Power(); got != "Off" {
		t.Fatalf("emulator power %s, want Off", got)
	}
	wantResets(t, srv.Stats(), "GracefulShutdown")
	logs := buf.String()
	for _, noise := range []string{"failed", "level=warning", "level=error"} {
		if strings.Contains(logs, noise) {
			t.Errorf("a graceful off that succeeded logged %q:\n%s", noise, logs)
		}
	}
	if n := metricValue(t, reg, "rota_bmc_requests_total", map[string]string{"operation": actionSoft, "result": "success"}); n != 1 {
		t.Errorf("successful graceful shutdown requests counted %v, want 1", n)
	}
}

// TestRedfishShutdownsOverlapUnderTwoSlots: thirty emulated servers shut down gracefully at once
// through bmclib under MaxConcurrent 2, each OS taking as long as the test holds it (a stuck
// transition, the state read On meanwhile, as a real OS keeps the power on): every one is asked
// to shut down while none has finished, then each goes off within one shutdown time, none
// forced, and the servers never answer more than two requests at once. Holding a slot from the
// first request to the confirmed off (as until 2026-12-05), only two are ever asked.
func TestRedfishShutdownsOverlapUnderTwoSlots(t *testing.T) {
	const n, shutdown = 30, 300 * time.Millisecond
	held := redfishemu.Faults{StuckTransition: true, HideTransitions: true, Latency: redfishemu.Duration(2 * time.Millisecond)}
	var servers []redfishemu.ServerConfig
	for i := range n {
		sc := emuServer(fmt.Sprintf("n%02d", i), "On", held)
		sc.TransitionDelay = redfishemu.Duration(shutdown)
		servers = append(servers, sc)
	}
	emu, ca := startEmulator(t, servers...)
	eps := map[string]Endpoint{}
	for _, s := range servers {
		eps[s.Name] = redfishEndpoint(t, emu, s.Name, ca)
	}
	log, _ := testLogger()
	reg := prometheus.NewRegistry()
	opts := redfishOptions(Options{Logger: log, Registerer: reg, MaxConcurrent: 2})
	opts.GracePeriod = time.Minute
	c, err := NewController(eps, opts)
	if err != nil {
		t.Fatal(err)
	}
	release := func() {
		for _, s := range servers {
			f := held
			f.StuckTransition = false
			if err := emu.Server(s.Name).SetFaults(f); err != nil {
				t.Error(err)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := time.Now()
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- c.Off(ctx, s.Name, true)
		}()
	}
	// On the old code the test fails here: whatever happens, the OSes finish and the
	// operations end before the emulator closes.
	defer func() { release(); wg.Wait() }()
	testutil.Eventually(t, 20*time.Second, "every server asked to shut down while none has finished", func() error {
		asked := 0
		for _, s := range servers {
			if slices.Contains(emu.Server(s.Name).Stats().Resets, "GracefulShutdown") {
				asked++
			}
		}
		if asked < n {
			return fmt.Errorf("%d of %d asked", asked, n)
		}
		return nil
	})
	if v := metricValue(t, reg, "rota_bmc_operations_in_flight", nil); v != n {
		t.Errorf("rota_bmc_operations_in_flight %v while every server shuts down, want %d", v, n)
	}
	allAsked := time.Since(start)
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	t.Logf("%d graceful shutdowns of %s under 2 slots: all asked after %s, all confirmed off after %s more",
		n, shutdown, allAsked.Round(time.Millisecond), (time.Since(start) - allAsked).Round(time.Millisecond))
	for _, s := range servers {
		srv := emu.Server(s.Name)
		if p := srv.Power(); p != "Off" {
			t.Errorf("%s is %s", s.Name, p)
		}
		if r := srv.Stats().Resets; !slices.Equal(r, []string{"GracefulShutdown"}) {
			t.Errorf("%s was sent %q, want one graceful shutdown", s.Name, r)
		}
	}
	t.Logf("at most %d requests answered at once", emu.PeakRequests())
	if p := emu.PeakRequests(); p > 2 || p == 0 {
		t.Errorf("the servers answered %d requests at once, want 1..2 under 2 slots", p)
	}
	for _, g := range []string{"rota_bmc_requests_in_flight", "rota_bmc_operations_in_flight"} {
		if v := metricValue(t, reg, g, nil); v != 0 {
			t.Errorf("%s %v after every operation ended", g, v)
		}
	}
}

// TestReadsDoNotWaitForAShutdown: while a server's OS shuts down (held by a stuck transition,
// the state read On meanwhile), its state and its power draw are read at once: a read sends no
// command, so it takes no turn of the BMC, which the shutdown holds until the server is off (up
// to bmc.graceful_timeout and the hard off after it). Waiting for that turn, every loop pass
// begun during a power-off waited for it to end before planning anything (power-ons for work
// that waits included), as did rotactl power status.
func TestReadsDoNotWaitForAShutdown(t *testing.T) {
	sc := emuServer("n", "On", redfishemu.Faults{StuckTransition: true, HideTransitions: true})
	emu, ca := startEmulator(t, sc)
	log, _ := testLogger()
	c, err := NewController(map[string]Endpoint{"n": redfishEndpoint(t, emu, "n", ca)}, redfishOptions(Options{Logger: log}))
	if err != nil {
		t.Fatal(err)
	}
	srv := emu.Server("n")
	off := make(chan error, 1)
	go func() { off <- c.Off(context.Background(), "n", true) }()
	testutil.Eventually(t, 10*time.Second, "the graceful shutdown sent", func() error {
		if r := srv.Stats().Resets; len(r) == 0 {
			return errors.New("not yet")
		}
		return nil
	})
	// Bounded, so that on the old code the test ends with the reads' failures.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := c.State(ctx, "n")
	if err != nil || st != StateOn {
		t.Errorf("state while the OS shuts down: %s, %v; want on, read beside the shutdown", st, err)
	}
	r, err := c.PowerReading(ctx, "n")
	if err != nil || r.Watts != redfishemu.DefaultOnWatts {
		t.Errorf("power reading while the OS shuts down: %+v, %v; want %d W", r, err, redfishemu.DefaultOnWatts)
	}
	if err := srv.SetFaults(redfishemu.Faults{HideTransitions: true}); err != nil {
		t.Fatal(err)
	}
	if err := <-off; err != nil {
		t.Fatal(err)
	}
	wantResets(t, srv.Stats(), "GracefulShutdown")
}
