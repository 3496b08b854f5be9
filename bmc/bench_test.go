package bmc

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.uber.org/goleak"

	"github.com/rotahq/rota/bmc/redfishemu"
	"github.com/rotahq/rota/internal/clock"
)

// BenchmarkPowerOn1000 powers on 1,000 emulated Redfish servers (one TLS listener each, 200 ms
// transitions) through bmclib with a concurrency cap of 64, and reports the wall time against
// held: one server's power-on time x ceil(1000 / 64), the time were each power-on to hold a slot
// from start to end (as until 2026-12-05); below 1, power-ons overlap in their waits. Run with
//
//	go test -run '^$' -bench PowerOn1000 -benchtime 1x ./bmc/
func BenchmarkPowerOn1000(b *testing.B) {
	const n, limit = 1000, 64
	// The benchmark runner's own goroutines are there before and after: only new ones leak.
	before := goleak.IgnoreCurrent()
	servers := make([]redfishemu.ServerConfig, n)
	for i := range servers {
		servers[i] = redfishemu.ServerConfig{
			Name: fmt.Sprintf("node%04d", i), Listen: "127.0.0.1:0", Username: "admin", Password: emuPassword,
			TransitionDelay: redfishemu.Duration(200 * time.Millisecond),
		}
	}
	emu, c := benchController(b, servers, limit, func(*Options) {})
	allOff := func() {
		for _, s := range servers {
			if err := emu.Server(s.Name).SetPower("Off"); err != nil {
				b.Fatal(err)
			}
		}
	}
	// One server alone: the per-server latency held is made of.
	start := time.Now()
	if err := c.On(context.Background(), servers[0].Name); err != nil {
		b.Fatal(err)
	}
	single := time.Since(start)
	held := single * time.Duration((n+limit-1)/limit)

	var wall time.Duration
	for b.Loop() {
		b.StopTimer()
		allOff()
		b.StartTimer()
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for _, s := range servers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				if err := c.On(ctx, s.Name); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		wall = time.Since(start)
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	for _, s := range servers {
		if p := emu.Server(s.Name).Power(); p != "On" {
			b.Fatalf("%s is %s after a confirmed power-on", s.Name, p)
		}
	}
	b.ReportMetric(single.Seconds(), "single_s")
	b.ReportMetric(wall.Seconds(), "wall_s")
	b.ReportMetric(held.Seconds(), "held_s")
	b.ReportMetric(wall.Seconds()/held.Seconds(), "wall/held")
	emu.Close()
	goleak.VerifyNone(b, before)
}

// BenchmarkPowerOnDuringShutdowns times a power-on (from the call to the emulated server's
// power turning On, its transition instant) while 100 other emulated Redfish servers shut down
// gracefully under a cap of 2 slots, each answer 10 ms late: the shutdowns' polls, every 100 ms,
// keep both slots busy and a queue waiting. The peer is the same power-on with nothing else
// under way, in the same run; during/alone is what the queue costs work waiting for a server.
// Run with
//
//	go test -run '^$' -bench PowerOnDuringShutdowns -benchtime 5x ./bmc/
func BenchmarkPowerOnDuringShutdowns(b *testing.B) {
	const n, limit = 100, 2
	before := goleak.IgnoreCurrent()
	late := redfishemu.Faults{Latency: redfishemu.Duration(10 * time.Millisecond)}
	servers := []redfishemu.ServerConfig{{Name: "wanted", Listen: "127.0.0.1:0", Username: "admin", Password: emuPassword, Faults: late}}
	held := late
	held.StuckTransition, held.HideTransitions = true, true
	for i := range n {
		servers = append(servers, redfishemu.ServerConfig{
			Name: fmt.Sprintf("idle%03d", i), Listen: "127.0.0.1:0", Username: "admin", Password: emuPassword,
			TransitionDelay: redfishemu.Duration(time.Millisecond), Faults: held,
		})
	}
	emu, c := benchController(b, servers, limit, func(o *Options) { o.GracePeriod = time.Hour })
	wanted := emu.Server("wanted")
	// powerOn powers wanted on from off and returns the time until it is on.
	powerOn := func() time.Duration {
		if err := wanted.SetPower("Off"); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- c.On(context.Background(), "wanted") }()
		for wanted.Power() != "On" {
			time.Sleep(time.Millisecond)
		}
		took := time.Since(start)
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		return took
	}
	var alone, during time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		alone += powerOn()
		var wg sync.WaitGroup
		for _, s := range servers[1:] {
			if err := emu.Server(s.Name).SetPower("On"); err != nil {
				b.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.Off(context.Background(), s.Name, true); err != nil {
					b.Error(err)
				}
			}()
		}
		// Every server asked to shut down: the shutdowns are polling.
		for asked := 0; asked < n; {
			time.Sleep(10 * time.Millisecond)
			asked = 0
			for _, s := range servers[1:] {
				asked += len(emu.Server(s.Name).Stats().Resets)
			}
		}
		b.StartTimer()
		during += powerOn()
		b.StopTimer()
		for _, s := range servers[1:] {
			if err := emu.Server(s.Name).SetFaults(late); err != nil {
				b.Fatal(err)
			}
		}
		wg.Wait()
		for _, s := range servers[1:] {
			if err := emu.Server(s.Name).SetFaults(held); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(alone.Seconds()/float64(b.N), "alone_s")
	b.ReportMetric(during.Seconds()/float64(b.N), "during_s")
	b.ReportMetric(during.Seconds()/alone.Seconds(), "during/alone")
	emu.Close()
	goleak.VerifyNone(b, before)
}

// benchController starts the servers in an emulator that logs nothing and returns it with a
// Controller for them (realOptions, limit slots, then tweak); the caller closes the emulator.
func benchController(b *testing.B, servers []redfishemu.ServerConfig, limit int, tweak func(*Options)) (*redfishemu.Emulator, *Controller) {
	b.Helper()
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	log := quiet.WithField("component", "bmc")
	emu, err := redfishemu.Start(redfishemu.Config{Servers: servers}, clock.Real{}, log)
	if err != nil {
		b.Fatal(err)
	}
	ca := writeCA(b, emu)
	eps := map[string]Endpoint{}
	for _, s := range servers {
		eps[s.Name] = redfishEndpoint(b, emu, s.Name, ca)
	}
	opts := realOptions(Options{Logger: log, MaxConcurrent: limit})
	tweak(&opts)
	c, err := NewController(eps, opts)
	if err != nil {
		b.Fatal(err)
	}
	return emu, c
}

// BenchmarkShutdownCohort is a cohort of graceful power-offs larger than the cap serves at
// once, on a time scale of 1/10: 64 emulated Redfish servers under 1 slot (4,096 under the
// default 64), each OS taking 6 s to shut down (60 s), polled every 200 ms (2 s), with a
// 12 s grace period (2 min) and a 30 s operation timeout (5 min), each request answered late by
// 20, 50 or 70 ms (a BMC's 0.2, 0.5, 0.7 s). It reports the median and longest operation
// against one alone in the same run, and how many of the 64 were asked to shut down, failed,
// and were forced off. Run with
//
//	go test -run '^$' -bench ShutdownCohort -benchtime 1x ./bmc/
func BenchmarkShutdownCohort(b *testing.B) {
	for _, late := range []time.Duration{20 * time.Millisecond, 50 * time.Millisecond, 70 * time.Millisecond} {
		b.Run(fmt.Sprintf("request=%s", late), func(b *testing.B) { shutdownCohort(b, late) })
	}
}

func shutdownCohort(b *testing.B, late time.Duration) {
	const n = 64
	before := goleak.IgnoreCurrent()
	var servers []redfishemu.ServerConfig
	for i := range n {
		servers = append(servers, redfishemu.ServerConfig{
			Name: fmt.Sprintf("s%02d", i), Listen: "127.0.0.1:0", Username: "admin", Password: emuPassword,
			TransitionDelay: redfishemu.Duration(6 * time.Second),
			Faults:          redfishemu.Faults{Latency: redfishemu.Duration(late), HideTransitions: true},
		})
	}
	emu, c := benchController(b, servers, 1, func(o *Options) {
		o.PollInterval, o.GracePeriod, o.OperationTimeout, o.ConfirmTimeout = 200*time.Millisecond, 12*time.Second, 30*time.Second, 30*time.Second
	})
	// off shuts the servers down at once and returns each operation's time, and how many failed.
	off := func(servers []redfishemu.ServerConfig) ([]time.Duration, int) {
		var mu sync.Mutex
		var took []time.Duration
		failed := 0
		var wg sync.WaitGroup
		for _, s := range servers {
			if err := emu.Server(s.Name).SetPower("On"); err != nil {
				b.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				err := c.Off(context.Background(), s.Name, true)
				mu.Lock()
				defer mu.Unlock()
				took = append(took, time.Since(start))
				if err != nil {
					failed++
				}
			}()
		}
		wg.Wait()
		slices.Sort(took)
		return took, failed
	}
	var alone, median, longest time.Duration
	var failed int
	for range b.N {
		one, _ := off(servers[:1])
		alone = one[0]
		var all []time.Duration
		all, failed = off(servers)
		median, longest = all[n/2], all[n-1]
	}
	// asked: the cohort's shutdowns sent (the run alone sent one more).
	asked, forced := -1, 0
	for _, s := range servers {
		for _, r := range emu.Server(s.Name).Stats().Resets {
			switch r {
			case "GracefulShutdown":
				asked++
			case "ForceOff":
				forced++
			}
		}
	}
	b.ReportMetric(alone.Seconds(), "alone_s")
	b.ReportMetric(median.Seconds(), "median_s")
	b.ReportMetric(longest.Seconds(), "longest_s")
	b.ReportMetric(float64(asked), "asked/64")
	b.ReportMetric(float64(failed), "failed/64")
	b.ReportMetric(float64(forced), "forced/64")
	emu.Close()
	goleak.VerifyNone(b, before)
}
