package loop

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
)

// TestWatchAsksForAPassOnNewWork drives the watch alone, read by read, and reads its requests
// straight from the loop's queue: work it has not seen asks for one pass, work it has seen (or
// work gone) asks for none, and a failed read changes nothing, so what arrived during it still
// counts as new at the next good read.
func TestWatchAsksForAPassOnNewWork(t *testing.T) {
	f := newFx(t, nil, nil)
	w := &watcher{}
	f.watch = w
	f.restart(nil) // a loop with the watch
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.loop.watch(ctx, f.clock.watchEvery)
	}()
	t.Cleanup(func() { cancel(); <-done })

	steps := []struct {
		name    string
		ids     []string
		err     error
		request bool
	}{
		{"nothing waits", nil, nil, false},
		{"a job arrives", []string{"1"}, nil, true},
		{"the same job still waits", []string{"1"}, nil, false},
		{"a second job arrives", []string{"1", "2"}, nil, true},
		{"a burst arrives at once: one pass", []string{"1", "2", "3", "4", "5"}, nil, true},
		{"jobs start", []string{"5"}, nil, false},
		{"the read fails", nil, errors.New("slurmctld down"), false},
		{"read again: the job that came meanwhile is new", []string{"5", "6"}, nil, true},
		{"a job requeued comes back", []string{"6", "1"}, nil, true},
	}
	timer := <-f.clock.watchCalls
	for _, s := range steps {
		w.set(s.err, s.ids...)
		timer <- f.clock.Now()
		timer = <-f.clock.watchCalls // the read is done: the watch waits again
		var got bool
		select {
		case n := <-f.loop.work:
			got = true
			if n.trigger != triggerWatch {
				t.Errorf("%s: trigger %q, want %q", s.name, n.trigger, triggerWatch)
			}
		default:
		}
		if got != s.request {
			t.Errorf("%s: asked for a pass: %v, want %v", s.name, got, s.request)
		}
	}
	if got := testutil.ToFloat64(f.loop.metrics.watchReads.WithLabelValues("error")); got != 1 {
		t.Errorf("%v failed reads counted, want 1", got)
	}
	if got := testutil.ToFloat64(f.loop.metrics.watchReads.WithLabelValues("success")); got != float64(len(steps)-1) {
		t.Errorf("%v good reads counted, want %d", got, len(steps)-1)
	}
}

// TestWatchRunsAPass: in Run, new work seen by the watch runs a pass at once, counted with its
// trigger; the interval still runs passes of its own.
func TestWatchRunsAPass(t *testing.T) {
	f := newFx(t, nil, nil)
	w := &watcher{}
	f.watch = w
	f.restart(nil) // a loop with the watch
	triggers := func(trigger string) float64 {
		return testutil.ToFloat64(f.loop.metrics.triggers.WithLabelValues(trigger))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- f.loop.Run(ctx) }()

	<-f.clock.calls // the first pass is done; its interval timer is left unfired
	w.set(nil, "42")
	(<-f.clock.watchCalls) <- f.clock.Now()
	interval := <-f.clock.calls // the pass the watch asked for is done
	if triggers(triggerStart) != 1 || triggers(triggerWatch) != 1 {
		t.Fatalf("passes by trigger: start %v, watch %v; want 1 and 1", triggers(triggerStart), triggers(triggerWatch))
	}
	interval <- f.clock.Now()
	<-f.clock.calls
	if triggers(triggerInterval) != 1 {
		t.Fatalf("%v interval passes, want 1", triggers(triggerInterval))
	}
	cancel()
	// The watch may be waiting on its timer or handing it over: either way Run returns.
	go func() {
		for range f.clock.watchCalls {
		}
	}()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestFailingWatchNeverBlocksPasses: a watch that always fails is logged once a minute, not at
// every read, and the passes keep their interval.
func TestFailingWatchNeverBlocksPasses(t *testing.T) {
	f := newFx(t, nil, nil)
	w := &watcher{}
	w.set(errors.New("squeue: slurm_load_jobs error: Unable to contact slurm controller"))
	f.watch = w
	f.restart(nil) // a loop with the watch
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- f.loop.Run(ctx) }()

	interval := <-f.clock.calls
	every := f.clock.watchEvery
	reads := int(2*watchLogEvery/every) + 1 // two minutes of reads, at 0, every, ... 2 minutes
	tick := <-f.clock.watchCalls
	for i := range reads {
		if i > 0 {
			f.clock.Advance(every)
		}
		tick <- f.clock.Now()
		tick = <-f.clock.watchCalls // the read is done (and logged) at the clock's time: its next timer is set
	}
	interval <- f.clock.Now()
	<-f.clock.calls // a pass ran on its interval all the same
	warnings := 0
	for _, e := range f.logs.AllEntries() {
		if e.Level == logrus.WarnLevel && e.Message != "" && e.Data["failed_reads"] != nil {
			warnings++
		}
	}
	if warnings != 3 {
		t.Errorf("%d warnings for %d failed reads over %s, want one a minute: 3", warnings, reads, time.Duration(reads-1)*every)
	}
	if got := testutil.ToFloat64(f.loop.metrics.watchReads.WithLabelValues("error")); got != float64(reads) {
		t.Errorf("%v failed reads counted, want %d", got, reads)
	}
	if got := testutil.ToFloat64(f.loop.metrics.triggers.WithLabelValues(triggerWatch)); got != 0 {
		t.Errorf("%v passes from a failing watch, want 0", got)
	}
	cancel()
	go func() {
		for range f.clock.watchCalls {
		}
	}()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
