package bmc

import (
	"context"
	"fmt"
	"io"
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
	c, err := NewController(eps, opts)
	if err != nil {
		b.Fatal(err)
	}
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
