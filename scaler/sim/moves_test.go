package sim

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/sim/trace"
)

// TestRebalancingFragmented replays deploy/simulate's fragmented workload (every server left
// holding one small long job, two of them not requeueable) with and without rebalancing:
// moves cut the server-hours by at least 40%, never move a job that is not requeueable, and
// lose less than 5% of the work.
func TestRebalancingFragmented(t *testing.T) {
	root := testutil.RepoRoot(t)
	cfg, err := config.LoadFor(filepath.Join(root, "deploy", "simulate", "rota-fragmented.yml"), config.Replay)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "deploy", "simulate", "fragmented.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := trace.Read(f, trace.CSV, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEnv(cfg, tr, Options{Fleet: "20"})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := Compare(context.Background(), e, []Policy{Rota("rota"), RotaWithoutMoves("rota-no-moves")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	with, without := rs[1], rs[2]
	cut := 1 - with.ServerHours/without.ServerHours
	t.Logf("server-hours %.0f with moves, %.0f without (cut %.0f%%); %d moves, lost %.1f unit-hours (%.1f%% of the work)",
		with.ServerHours, without.ServerHours, 100*cut, with.Moves, with.LostUnitHours, 100*with.LostShare)
	switch {
	case cut < 0.40:
		t.Errorf("rebalancing cut server-hours by %.0f%%, want at least 40%%", 100*cut)
	case with.Violations != 0:
		t.Errorf("%d violations (a job not requeueable moved, or a power-off with a job)", with.Violations)
	case with.LostShare >= 0.05:
		t.Errorf("lost %.1f%% of the work, want under 5%%", 100*with.LostShare)
	case with.Moves != 18 || without.Moves != 0:
		t.Errorf("%d moves with rebalancing (want the 18 requeueable servers), %d without", with.Moves, without.Moves)
	case with.JobsRun != 40 || len(with.NotRun) != 0:
		t.Errorf("%d jobs ran, %d did not", with.JobsRun, len(with.NotRun))
	}
}

// TestMovedJobsRunAgainElsewhere: a moved job leaves its server at once, loses its run plus
// the restart cost, starts again never on the server it left, and its wait counts once.
func TestMovedJobsRunAgainElsewhere(t *testing.T) {
	cfg := tinyConfig(t, "  moves: {enabled: true, restart_cost: 10m}\n")
	e := tinyEnv(t, cfg, "2",
		trace.Job{Line: 2, Submit: 0, Duration: 48 * 3600, Nodes: 1, GPUs: 1, Requeueable: true},
		trace.Job{Line: 3, Submit: 0, Duration: 48 * 3600, Nodes: 1, GPUs: 8})
	w := newWorld(e)
	w.handle()
	w.place()
	if w.held[0][0] != 0 || w.held[1][0] != 1 {
		t.Fatalf("placed on %v and %v, want servers 0 and 1", w.held[0], w.held[1])
	}
	w.advance(3600)
	if !w.move(0, &fleet.MovePlan{Jobs: []string{"0"}, Exclude: []string{e.Names[0]}, Drain: true}) {
		t.Fatal("move refused")
	}
	if len(w.srv[0].jobs) != 0 || w.srv[0].state != fleet.StateDraining || w.start[0] != -1 {
		t.Fatalf("server 0 after the move: %+v", w.srv[0])
	}
	w.srv[1].freeGPU = 8 // make room on server 1 as if its job ended
	w.place()
	if len(w.held[0]) != 1 || w.held[0][0] != 1 {
		t.Fatalf("the moved job runs on %v, want server 1 (it may not go back to 0)", w.held[0])
	}
	if d := w.duration(0); d != 48*3600+600 {
		t.Errorf("rerun lasts %ds, want 48 h plus the 10-minute restart", d)
	}
	if got, want := w.acct.lostUnits, 1+10.0/60; got < want-1e-9 || got > want+1e-9 {
		t.Errorf("lost %.3f GPU-hours, want %.3f", got, want)
	}
	if len(w.acct.waits) != 2 || w.acct.moves != 1 || w.acct.badMoves != 0 {
		t.Errorf("waits %v, moves %d, bad moves %d", w.acct.waits, w.acct.moves, w.acct.badMoves)
	}
}

// TestSkippingChangesNothingWithMoves: with rebalancing on, skipping the planner between
// events still gives the replay a call at every tick gives.
func TestSkippingChangesNothingWithMoves(t *testing.T) {
	cfg := tinyConfig(t, "  moves: {enabled: true, max_moves: 2, window: 30m}\n")
	jobs := randomJobs(150, 7)
	for i := range jobs {
		jobs[i].Requeueable = i%3 != 0
	}
	e := tinyEnv(t, cfg, "peak", jobs...)
	skip := Run(e, Rota("rota"), nil)
	every := Run(e, &rota{name: "rota", everyTick: true}, nil)
	if every.Moves == 0 {
		t.Fatal("no moves: the test would prove nothing")
	}
	skip.PlannerCalls, every.PlannerCalls = 0, 0
	if !reflect.DeepEqual(skip, every) {
		t.Errorf("skipping changed the replay: %.2f vs %.2f server-hours, %d vs %d moves",
			skip.ServerHours, every.ServerHours, skip.Moves, every.Moves)
	}
}

// TestMovedJobKeepsItsExclusions: a job moved off a server may not start there again, and the
// world tells it as the job manager does: the waiting job's demand and, once it runs again,
// its entry among the server's jobs name the server excluded (so the planner neither counts
// that server's room for it nor moves it back), and its backfill reservation counts no server
// it may not use. Without them a moved job was moved back and forth until every server of its
// pool excluded it, and a reservation "now" on a server it could not use held the whole queue
// behind it: on mixed fleets with moves, hundreds of jobs given up after a week.
func TestMovedJobKeepsItsExclusions(t *testing.T) {
	cfg := replayConfig(t, `policy: {moves: {enabled: true}}
pools:
  - {name: gpu, profile: {cpu_cores: 96, gpus: 8}, cost: {hourly: 6}, boot_timeout: 5m, nodes: [{name: g1}, {name: g2}]}
`)
	first, second := job(2, 0, 7200, 8), job(3, 0, 3600, 8)
	first.Requeueable = true
	e := tinyEnv(t, cfg, "config", first, second)
	w := newWorld(e)
	w.queue, w.placeDirty = []int32{0, 1}, true
	w.place()
	g1, g2 := int32(e.byName["g1"]), int32(e.byName["g2"])
	if !slices.Equal(w.held[0], []int32{g1}) || !slices.Equal(w.held[1], []int32{g2}) {
		t.Fatalf("jobs on %v and %v, want g1 and g2", w.held[0], w.held[1])
	}
	w.now += 600
	w.requeue(0, []int32{g1}) // moved off g1, which it may not use again
	var s snapshotter
	snap := s.build(w, cfg)
	if len(snap.Demand) != 1 || snap.Demand[0].Needs.Exclude != "g1" {
		t.Errorf("demand %+v, want the moved job's, excluding g1", snap.Demand)
	}
	// g1 is empty, but the job may not start there: it waits for g2, whose job ends at 3600.
	if got := w.shadow(0); got != e.T0+3600 {
		t.Errorf("the moved job's reservation at %d, want g2's job's end %d (g1 excluded)", got-e.T0, 3600)
	}
	w.place()
	if w.start[0] >= 0 {
		t.Fatalf("the moved job started again on %v, which it may not use", w.held[0])
	}
	w.now = e.T0 + 3600
	w.finish(1)
	w.place()
	if !slices.Equal(w.held[0], []int32{g2}) {
		t.Fatalf("the moved job runs on %v, want g2", w.held[0])
	}
	run := s.running(w, &w.srv[g2])
	if len(run) != 1 || run[0].Needs.Exclude != "g1" {
		t.Errorf("g2's jobs as the planner reads them: %+v, want the moved job excluding g1", run)
	}
}

// TestReservationOnServersThatTakeTheJob: the backfill reservation of the queue's first job
// counts only servers of pools that take it (its partition): an empty server of a pool kept for
// another partition is no room for it, and a reservation "now" there would hold every later
// job back.
func TestReservationOnServersThatTakeTheJob(t *testing.T) {
	cfg := replayConfig(t, `pools:
  - {name: batch, profile: {cpu_cores: 96, gpus: 8, partitions: [batch]}, cost: {hourly: 6}, boot_timeout: 5m, nodes: [{name: b1}]}
  - {name: any, profile: {cpu_cores: 96, gpus: 8}, cost: {hourly: 6}, boot_timeout: 5m, nodes: [{name: a1}]}
`)
	running, web := job(2, 0, 3600, 8), job(3, 0, 3600, 8)
	running.Partition, web.Partition = "web", "web"
	e := tinyEnv(t, cfg, "config", running, web)
	w := newWorld(e)
	w.queue, w.placeDirty = []int32{0}, true
	w.place()
	a1 := int32(e.byName["a1"])
	if !slices.Equal(w.held[0], []int32{a1}) {
		t.Fatalf("the web job runs on %v, want a1", w.held[0])
	}
	// b1 is empty but takes only batch work: the web job waits for a1, free at 3600.
	if got := w.shadow(1); got != e.T0+3600 {
		t.Errorf("the web job's reservation at %d, want a1's job's end %d (b1 takes batch only)", got-e.T0, 3600)
	}
}
