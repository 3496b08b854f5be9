package plan

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/learn"
)

const movesOn = "  moves: {enabled: true, min_saving_factor: 2, restart_cost: 5m, estimate: 4h, tail: 30m, max_moves: 10, window: 1h}"

// runningJob is a requeueable job started an hour ago with a 48-hour limit.
func runningJob(id string, cpus, gpus int) fleet.Job {
	return fleet.Job{ID: id, CPUs: cpus, GPUs: gpus, Servers: 1, Requeueable: true, Started: t0.Add(-time.Hour), TimeLimit: 48 * time.Hour}
}

// running puts jobs on an On server, its allocation and telemetry with them.
func running(n fleet.Node, js ...fleet.Job) fleet.Node {
	for _, j := range js {
		n.Jobs.Jobs++
		n.Jobs.CPUs += j.CPUs
		n.Jobs.GPUs += j.GPUs
		n.Jobs.Running = append(n.Jobs.Running, j)
	}
	n.Telemetry.CPUMax = 0.5
	return n
}

func jobWith(j fleet.Job, f func(*fleet.Job)) fleet.Job { f(&j); return j }

// TestMoves: rebalancing empties a server when its work has room elsewhere and the saving
// over the work's remaining time is at least k times the work it loses; every refusal names
// its rule.
func TestMoves(t *testing.T) { runCases(t, moveCases()) }

func moveCases() []planCase {
	frag := func(f func(*fleet.Job)) fleet.Snapshot {
		return snapshot(
			running(onNode("c1", "cpu"), jobWith(runningJob("1", 1, 0), f)),
			running(onNode("c2", "cpu"), runningJob("2", 1, 0)),
			running(onNode("c3", "cpu"), runningJob("3", 1, 0)))
	}
	same := func(*fleet.Job) {}
	// owner labels a server with a department, off for hours: the longer, the earlier in wear order.
	owner := func(dept string, hours int) func(*fleet.Node) {
		return func(n *fleet.Node) { n.Department, n.LastOff = dept, t0.Add(-time.Duration(hours)*time.Hour) }
	}
	return []planCase{
		{name: "moves off: the work stays", snap: frag(same),
			want: map[string]string{"c1": "skip/allocated", "c2": "skip/allocated", "c3": "skip/allocated"}},
		{name: "fragmented: two servers empty onto the third", policy: movesOn, snap: frag(same),
			want: map[string]string{"c1": "move/rebalance", "c2": "skip/demand_waits", "c3": "move/rebalance"}, desired: map[string]int{"cpu": 1, "gpu": 0}},
		{name: "not requeueable is never moved", policy: movesOn, snap: frag(func(j *fleet.Job) { j.Requeueable = false }),
			want: map[string]string{"c1": "skip/not_requeueable", "c2": "move/rebalance", "c3": "move/rebalance"}},
		{name: "do-not-disrupt is never moved", policy: movesOn, snap: frag(func(j *fleet.Job) { j.DoNotDisrupt = true }),
			want: map[string]string{"c1": "skip/do_not_disrupt"}},
		{name: "a job in its tail is never moved", policy: movesOn, snap: frag(func(j *fleet.Job) { j.TimeLimit = time.Hour + 10*time.Minute }),
			want: map[string]string{"c1": "skip/job_tail"}},
		{name: "a multi-server job is never moved", policy: movesOn, snap: frag(func(j *fleet.Job) { j.Servers = 2 }),
			want: map[string]string{"c1": "skip/not_requeueable"}},
		{name: "no time limit: the policy's estimate", policy: movesOn, snap: frag(func(j *fleet.Job) { j.TimeLimit = 0 }),
			want: map[string]string{"c1": "move/rebalance"}},
		{name: "the saving must be k times the loss", policy: movesOn + "\n  ",
			cfg: func(c *config.Config) { c.Policy.Moves.MinSavingFactor = 10000 }, snap: frag(same),
			want: map[string]string{"c1": "skip/saving_too_small", "c2": "skip/saving_too_small", "c3": "skip/saving_too_small"}},
		{name: "the move budget", policy: movesOn,
			cfg:  func(c *config.Config) { c.Policy.Moves.MaxMoves = 1 },
			snap: withHistory(frag(same), fleet.History{Moves: []time.Time{t0.Add(-10 * time.Minute)}}),
			want: map[string]string{"c1": "skip/move_budget"}},
		{name: "budget spent in an earlier window is back", policy: movesOn,
			cfg:  func(c *config.Config) { c.Policy.Moves.MaxMoves = 1 },
			snap: withHistory(frag(same), fleet.History{Moves: []time.Time{t0.Add(-2 * time.Hour)}}),
			want: map[string]string{"c1": "move/rebalance", "c3": "skip/move_budget"}},
		{name: "min_on holds a move like a drain", policy: movesOn,
			snap: snapshot(running(with(onNode("c1", "cpu"), func(n *fleet.Node) { n.LastOn = t0.Add(-time.Minute) }), runningJob("1", 1, 0)),
				running(onNode("c2", "cpu"), runningJob("2", 1, 0))),
			want: map[string]string{"c1": "skip/min_on", "c2": "move/rebalance"}},
		{name: "no room elsewhere: the work stays", policy: movesOn,
			snap: snapshot(running(onNode("c1", "cpu"), runningJob("1", 20, 0)), running(onNode("c2", "cpu"), runningJob("2", 20, 0))),
			want: map[string]string{"c1": "skip/allocated", "c2": "skip/allocated"}},
		{name: "light work leaves a gpu server for a cpu server", policy: movesOn,
			snap: snapshot(running(onNode("g1", "gpu"), runningJob("9", 2, 0)), running(onNode("c1", "cpu"), runningJob("1", 1, 0))),
			want: map[string]string{"g1": "move/rebalance", "c1": "skip/demand_waits"}},
		{name: "light work on a gpu server wakes a cpu server to go to", policy: movesOn,
			snap: snapshot(running(onNode("g1", "gpu"), runningJob("9", 2, 0)), offNode("c1", "cpu")),
			want: map[string]string{"g1": "skip/in_flight", "c1": "power_on/rebalance"}},
		// a quota caps waking (scale-up.md), a server woken for moved work too
		{name: "no server is woken for moved work past its department's quota", policy: movesOn,
			cfg: func(c *config.Config) {
				c.Policy.Quotas = []config.Quota{{Department: "b", Pool: "cpu", MaxServers: 0}}
			},
			snap: snapshot(running(onNode("g1", "gpu"), ofDept(runningJob("9", 2, 0), "b")), offNode("c1", "cpu")),
			want: map[string]string{"g1": "skip/allocated", "c1": "skip/not_needed"}},
		// A job without a department is its server's owner's (planner.md): b's quota caps it.
		{name: "no server is woken for moved work without a department past its server's owner's quota", policy: movesOn,
			cfg: func(c *config.Config) {
				c.Policy.Quotas = []config.Quota{{Department: "b", Pool: "cpu", MaxServers: 0}}
			},
			snap: snapshot(running(with(onNode("g1", "gpu"), func(n *fleet.Node) { n.Department = "b" }), runningJob("9", 2, 0)), offNode("c1", "cpu")),
			want: map[string]string{"g1": "skip/allocated", "c1": "skip/not_needed"}},
		{name: "a department that may borrow takes the room left for moved work", policy: movesOn,
			cfg: func(c *config.Config) {
				c.Policy.Quotas = []config.Quota{{Department: "b", Pool: "cpu", MaxServers: 0, Borrow: true}}
			},
			snap: snapshot(running(onNode("g1", "gpu"), ofDept(runningJob("9", 2, 0), "b")), offNode("c1", "cpu")),
			want: map[string]string{"g1": "skip/in_flight", "c1": "power_on/rebalance"}},
		// A server woken for moved work is chosen as one for waiting work (scale-up.md, which
		// server wakes): the moved jobs' department's own and unlabelled servers first.
		{name: "moved work wakes an unlabelled server before another department's", policy: movesOn,
			snap: snapshot(running(onNode("g1", "gpu"), ofDept(runningJob("9", 2, 0), "b")), with(offNode("c1", "cpu"), owner("a", 5)), with(offNode("c2", "cpu"), owner("", 1))),
			want: map[string]string{"g1": "skip/in_flight", "c1": "skip/not_needed", "c2": "power_on/rebalance"}},
		{name: "moved work wakes its department's server before another's", policy: movesOn,
			snap: snapshot(running(onNode("g1", "gpu"), ofDept(runningJob("8", 1, 0), "b"), ofDept(runningJob("9", 1, 0), "b")),
				with(offNode("c1", "cpu"), owner("a", 5)), with(offNode("c2", "cpu"), owner("b", 1))),
			want: map[string]string{"g1": "skip/in_flight", "c1": "skip/not_needed", "c2": "power_on/rebalance"}},
		// A job without a department is its server's owner's (planner.md), for the wake too.
		{name: "moved work without a department wakes its server's owner's server before another's", policy: movesOn,
			snap: snapshot(running(with(onNode("g1", "gpu"), func(n *fleet.Node) { n.Department = "b" }), runningJob("9", 2, 0)),
				with(offNode("c1", "cpu"), owner("a", 5)), with(offNode("c2", "cpu"), owner("b", 1))),
			want: map[string]string{"g1": "skip/in_flight", "c1": "skip/not_needed", "c2": "power_on/rebalance"}},
		{name: "moved work of two departments takes every labelled server as another's", policy: movesOn,
			snap: snapshot(running(onNode("g1", "gpu"), ofDept(runningJob("8", 1, 0), "a"), ofDept(runningJob("9", 1, 0), "b")),
				with(offNode("c1", "cpu"), owner("b", 5)), with(offNode("c2", "cpu"), owner("", 1))),
			want: map[string]string{"g1": "skip/in_flight", "c1": "skip/not_needed", "c2": "power_on/rebalance"}},
		{name: "moved work wakes another department's server when nothing else is off", policy: movesOn,
			snap: snapshot(running(onNode("g1", "gpu"), ofDept(runningJob("9", 2, 0), "b")), with(offNode("c1", "cpu"), owner("a", 5))),
			want: map[string]string{"g1": "skip/in_flight", "c1": "power_on/rebalance"}},
		{name: "the woken server still coming: the work waits for it", policy: movesOn,
			snap: snapshot(running(onNode("g1", "gpu"), runningJob("9", 2, 0)), booting(offNode("c1", "cpu"))),
			want: map[string]string{"g1": "skip/in_flight"}},
		{name: "gpu work does not fit a cpu server", policy: movesOn,
			snap: snapshot(running(onNode("g1", "gpu"), runningJob("9", 2, 1)), offNode("c1", "cpu")),
			want: map[string]string{"g1": "skip/allocated", "c1": "skip/not_needed"}},
	}
}

// TestMovePlan: a move names its jobs, excludes the server it leaves, or the whole pool when
// the work goes to a cheaper one, and says what it saves and loses.
func TestMovePlan(t *testing.T) {
	cfg := newConfig(t, movesOn, 1, 2)
	snap := snapshot(running(onNode("g1", "gpu"), runningJob("9", 2, 0)), onNode("g2", "gpu"), running(onNode("c1", "cpu"), runningJob("1", 1, 0)))
	d := Plan(snap, cfg, t0)
	checkInvariants(t, snap, cfg, t0, d)
	var mv *fleet.Action
	for i := range d.Actions {
		if d.Actions[i].Kind == fleet.Move {
			mv = &d.Actions[i]
		}
	}
	if mv == nil || mv.Node != "g1" || mv.Move == nil {
		t.Fatalf("no move of g1:\n%s", describe(d))
	}
	if got := strings.Join(mv.Move.Jobs, ","); got != "9" {
		t.Errorf("jobs %s, want 9", got)
	}
	if got := strings.Join(mv.Move.Exclude, ","); got != "g1,g2" {
		t.Errorf("exclude %s, want the gpu pool g1,g2", got)
	}
	// 47 h left at 10/h less the cycle it costs (3.50 at the defaults: no history, so the server
	// is taken to be off all that time); 1 h 5 m lost of a 2/64 share at 10/h.
	if !mv.Move.Drain || mv.Move.Saving < 466 || mv.Move.Saving > 467 || mv.Move.Lost < 0.33 || mv.Move.Lost > 0.34 {
		t.Errorf("plan %+v, want a drain saving 466.5 and losing 0.34", mv.Move)
	}
	if !strings.Contains(mv.Detail, "to c1") {
		t.Errorf("detail %q does not name the destination", mv.Detail)
	}
}

// TestMoveRefusalSaysWhy: a job the job manager cannot requeue for a reason it gives
// (fleet.Job.Held: a Kubernetes pod whose emptyDir data a move would lose) is refused as not
// requeueable, and the skip names that reason; one without says no more.
func TestMoveRefusalSaysWhy(t *testing.T) {
	cfg := newConfig(t, movesOn, 2, 0)
	for _, tc := range []struct{ held, want string }{
		{"its emptyDir volume scratch would lose its data", "job 1 is not requeueable: its emptyDir volume scratch would lose its data"},
		{"", "job 1 is not requeueable"},
	} {
		j := jobWith(runningJob("1", 1, 0), func(j *fleet.Job) { j.Requeueable, j.Held = false, tc.held })
		snap := snapshot(running(onNode("c1", "cpu"), j), running(onNode("c2", "cpu"), runningJob("2", 1, 0)))
		d := Plan(snap, cfg, t0)
		checkInvariants(t, snap, cfg, t0, d)
		i := slices.IndexFunc(d.Skips, func(s fleet.Skip) bool { return s.Node == "c1" })
		if i < 0 || d.Skips[i].Reason != fleet.SkipNotRequeueable || d.Skips[i].Detail != tc.want {
			t.Errorf("held %q: c1 not refused with %q:\n%s", tc.held, tc.want, describe(d))
		}
	}
}

// TestMoveWeighsTheTimeOff: a move saves only while the pool does not need the server back.
// With history of the GPU pool's need rising by more than its idle server every five
// minutes, the server freed would be needed back within minutes, and the move is refused on
// its saving; with history of a need that never comes back, the move is made. With a need
// that rises every three hours, just past what was learned (2 h), a job of a quarter of the
// server with 40 h left is not moved: its 8 h run lost (20.21) is worth more than half of
// what the server saves off up to 2 h (18.55). Before, the 38 h past them counted as off
// with the chance (0.84) the need had not come by 2 h: 336.80, and the move was made, though
// the need is back within the hour after.
func TestMoveWeighsTheTimeOff(t *testing.T) {
	cfg := newConfig(t, movesOn, 1, 2)
	gpuLearned := func(need func(at time.Time) int) map[string]learn.View {
		var st learn.Stats
		for at := t0.Add(-72 * time.Hour); !at.After(t0); at = at.Add(time.Minute) {
			st.Observe(at, map[string]int{"gpu": need(at)})
		}
		return map[string]learn.View{"gpu": st.View("gpu", t0, 24*time.Hour)}
	}
	for _, c := range []struct {
		name string
		need func(time.Time) int
		cpus int
		want string
	}{
		// 8 h run of a 2/64 share at 10/h: 2.5 lost, a move must save 5
		{"needed back within minutes", func(at time.Time) int { return bursts(at.Minute()) }, 2, "skip/saving_too_small"},
		{"never needed back", func(time.Time) int { return 0 }, 2, "move/rebalance"},
		// 8 h run of a 16/64 share: 20.2 lost, a move must save 40.4
		{"needed back within hours", func(at time.Time) int {
			if at.Sub(t0.Add(-72*time.Hour))%(3*time.Hour) < 30*time.Minute {
				return 4
			}
			return 0
		}, 16, "skip/saving_too_small"},
	} {
		t.Run(c.name, func(t *testing.T) {
			long := jobWith(runningJob("9", c.cpus, 0), func(j *fleet.Job) { j.Started = t0.Add(-8 * time.Hour) })
			snap := withLearned(snapshot(running(onNode("g1", "gpu"), long), onNode("g2", "gpu"),
				running(onNode("c1", "cpu"), runningJob("1", 1, 0))), gpuLearned(c.need))
			d := Plan(snap, cfg, t0)
			checkInvariants(t, snap, cfg, t0, d)
			if got := outcome(d)["g1"]; got != c.want {
				t.Errorf("g1: %s, want %s\n%s", got, c.want, describe(d))
			}
		})
	}
}

// TestMovePrefersTheCheapTierHeldOn: light work on a GPU server goes to a CPU server its floor
// keeps on (it adds nothing there) rather than to another GPU server that stays on for its own
// work, and so leaves the whole GPU pool.
func TestMovePrefersTheCheapTierHeldOn(t *testing.T) {
	cfg := newConfig(t, movesOn, 1, 2)
	cfg.Pools[0].Min = 1
	snap := snapshot(running(onNode("g1", "gpu"), runningJob("9", 2, 0)),
		running(onNode("g2", "gpu"), jobWith(runningJob("8", 2, 0), func(j *fleet.Job) { j.Requeueable = false })),
		onNode("c1", "cpu"))
	d := Plan(snap, cfg, t0)
	checkInvariants(t, snap, cfg, t0, d)
	for _, a := range d.Actions {
		if a.Kind == fleet.Move && a.Node == "g1" {
			if got := strings.Join(a.Move.Exclude, ","); got != "g1,g2" || !strings.Contains(a.Detail, "to c1") {
				t.Fatalf("move %s (excluding %s), want to c1 away from the gpu pool", a.Detail, got)
			}
			return
		}
	}
	t.Fatalf("no move of g1:\n%s", describe(d))
}

// TestMoveDestinationOwner: a moved job takes room on servers that are on as waiting work wakes
// them (scale-up.md, which server wakes): among destinations that cost the same, its own
// department's and unlabelled servers before another department's, so a move lends no
// server; a destination that adds nothing still comes before one that would otherwise go off.
func TestMoveDestinationOwner(t *testing.T) {
	cfg := newConfig(t, movesOn, 2, 1)
	// dest is a cpu server labelled dept running a job of cpus CPUs that stays (not requeueable).
	dest := func(name, dept string, cpus int) fleet.Node {
		stays := jobWith(ofDept(runningJob("on-"+name, cpus, 0), dept), func(j *fleet.Job) { j.Requeueable = false })
		return running(with(onNode(name, "cpu"), func(n *fleet.Node) { n.Department = dept }), stays)
	}
	moved := running(onNode("g1", "gpu"), ofDept(runningJob("9", 2, 0), "a"))
	for _, c := range []struct {
		name string
		snap fleet.Snapshot
		want string
	}{
		{"an unlabelled server before another department's, though it fits worse",
			snapshot(moved, dest("c1", "b", 28), dest("c2", "", 1)), "c2"},
		{"its department's server before another department's",
			snapshot(moved, dest("c1", "b", 28), dest("c2", "a", 1)), "c2"},
		{"best fit among its own and unlabelled servers",
			snapshot(moved, dest("c1", "", 28), dest("c2", "a", 1)), "c1"},
		{"a job without a department is its server's owner's",
			snapshot(running(with(onNode("g1", "gpu"), func(n *fleet.Node) { n.Department = "a" }), runningJob("9", 2, 0)),
				dest("c1", "b", 28), dest("c2", "a", 1)), "c2"},
		{"another department's server when none other has room",
			snapshot(moved, dest("c1", "b", 28), dest("c2", "", 31)), "c1"},
		{"another department's server running work before an empty unlabelled one",
			snapshot(moved, dest("c1", "b", 28), with(onNode("c2", "cpu"), func(n *fleet.Node) { n.IdleSince = t0.Add(-time.Minute) })), "c1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := Plan(c.snap, cfg, t0)
			checkInvariants(t, c.snap, cfg, t0, d)
			for _, a := range d.Actions {
				if a.Kind == fleet.Move && a.Node == "g1" {
					if !strings.Contains(a.Detail, "to "+c.want+",") {
						t.Errorf("move %s, want to %s", a.Detail, c.want)
					}
					return
				}
			}
			t.Fatalf("no move of g1:\n%s", describe(d))
		})
	}
}

func ofDept(j fleet.Job, dept string) fleet.Job { j.Department = dept; return j }

// TestQuotaGuarantee: a department below its quota whose work finds no server (the pool is at
// its ceiling) gets one back: borrowed work is moved off a server, which stays in service for
// it; by the same rules as any move.
func TestQuotaGuarantee(t *testing.T) {
	quotas := func(c *config.Config) {
		c.Policy.Quotas = []config.Quota{{Department: "a", Pool: "cpu", MaxServers: 1}, {Department: "b", Pool: "cpu", MaxServers: 0, Borrow: true}}
	}
	borrowedBy := func(f func(*fleet.Job)) fleet.Snapshot {
		return withDemand(snapshot(
			running(onNode("c1", "cpu"), jobWith(ofDept(runningJob("1", 8, 0), "b"), f)),
			running(onNode("c2", "cpu"), ofDept(runningJob("2", 8, 0), "b"))),
			inDept(jobs(1, 32, 0), "a"))
	}
	runCases(t, []planCase{
		{name: "borrowed work gives the lender a server", policy: movesOn, cfg: quotas, snap: borrowedBy(func(*fleet.Job) {}),
			want: map[string]string{"c1": "move/quota", "c2": "skip/demand_waits"}},
		{name: "what may not be requeued stays", policy: movesOn, cfg: quotas, snap: borrowedBy(func(j *fleet.Job) { j.Requeueable = false }),
			want: map[string]string{"c1": "skip/not_requeueable", "c2": "move/quota"}},
		{name: "moves off: no reclaim", cfg: quotas, snap: borrowedBy(func(*fleet.Job) {}),
			want: map[string]string{"c1": "skip/allocated", "c2": "skip/allocated"}},
		// Kubernetes moves pods only off a Node rota cordoned: an evicted pod's new one could
		// land right back on one left in service, and the adapter refuses (jobs.ErrCannotMove).
		{name: "kubernetes: no reclaim", policy: movesOn, snap: borrowedBy(func(*fleet.Job) {}),
			cfg:  func(c *config.Config) { quotas(c); c.Jobs.Adapter = "kubernetes" },
			want: map[string]string{"c1": "skip/demand_waits", "c2": "skip/demand_waits"}},
	})
	cfg := newConfig(t, movesOn, 2, 0)
	quotas(cfg)
	d := Plan(borrowedBy(func(*fleet.Job) {}), cfg, t0)
	for _, a := range d.Actions {
		if a.Kind == fleet.Move && (a.Move.Drain || strings.Join(a.Move.Exclude, ",") != a.Node) {
			t.Errorf("quota move %+v: want the server kept in service, only itself excluded", a.Move)
		}
	}
}

// TestQuotaGivesBackTheLendersOwnServer: a server labelled with a department counts toward
// its quota, yet while borrowed work runs on it it holds none of the department's work. The
// lender's work waiting gets that server back (it used to count as held, so the lender was
// "at its quota" and waited behind the borrower), and the borrower keeps the servers labelled
// with its own department: what is taken back is what it borrowed.
func TestQuotaGivesBackTheLendersOwnServer(t *testing.T) {
	quotas := func(c *config.Config) {
		c.Policy.Quotas = []config.Quota{{Department: "a", Pool: "cpu", MaxServers: 1}, {Department: "b", Pool: "cpu", MaxServers: 1, Borrow: true}}
	}
	owned := func(dept string) func(*fleet.Node) { return func(n *fleet.Node) { n.Department = dept } }
	runCases(t, []planCase{
		{name: "the lender's own server comes back", policy: movesOn, cfg: quotas,
			snap: withDemand(snapshot(
				running(with(onNode("c1", "cpu"), owned("b")), ofDept(runningJob("1", 8, 0), "b")),
				running(with(onNode("c2", "cpu"), owned("a")), ofDept(runningJob("2", 8, 0), "b"))),
				inDept(jobs(1, 32, 0), "a")),
			want: map[string]string{"c1": "skip/demand_waits", "c2": "move/quota"}},
		{name: "the borrower keeps its own server", policy: movesOn, cfg: quotas,
			snap: withDemand(snapshot(
				running(with(onNode("c1", "cpu"), owned("b")), ofDept(runningJob("1", 8, 0), "b")),
				running(onNode("c2", "cpu"), ofDept(runningJob("2", 8, 0), "b"))),
				inDept(jobs(1, 32, 0), "a")),
			want: map[string]string{"c1": "skip/demand_waits", "c2": "move/quota"}},
		{name: "a job without a department is its server's owner's", policy: movesOn, cfg: quotas,
			snap: withDemand(snapshot(
				running(with(onNode("c1", "cpu"), owned("a")), runningJob("1", 8, 0)),
				running(onNode("c2", "cpu"), ofDept(runningJob("2", 8, 0), "b")),
				running(onNode("c3", "cpu"), ofDept(runningJob("3", 8, 0), "b"))),
				inDept(jobs(1, 32, 0), "a")),
			want: map[string]string{"c2": "skip/demand_waits", "c3": "skip/demand_waits"}},
		{name: "a lender holding its quota in work gets nothing back", policy: movesOn, cfg: quotas,
			snap: withDemand(snapshot(
				running(with(onNode("c1", "cpu"), owned("a")), ofDept(runningJob("1", 8, 0), "a")),
				running(onNode("c2", "cpu"), ofDept(runningJob("2", 8, 0), "b")),
				running(onNode("c3", "cpu"), ofDept(runningJob("3", 8, 0), "b"))),
				inDept(jobs(1, 32, 0), "a")),
			want: map[string]string{"c2": "skip/demand_waits", "c3": "skip/demand_waits"}},
	})
}

// TestLentServersHoldNoneOfTheLendersWork: a department's own server running only others'
// work holds none of its work, for waking too: with moves off, or a borrower with no quota
// whose work nothing moves, the lender's work wakes a server of its pool rather than wait
// "at its quota" for the others' work on its servers to end (hours, found replaying a
// department's servers filled by another's long jobs while the pool's other servers stood off).
func TestLentServersHoldNoneOfTheLendersWork(t *testing.T) {
	owned := func(n *fleet.Node) { n.Department = "a" }
	quota := func(c *config.Config) {
		c.Policy.Quotas = []config.Quota{{Department: "a", Pool: "cpu", MaxServers: 1}}
	}
	runCases(t, []planCase{
		{name: "its server lent out, the lender wakes one", cfg: quota,
			snap: withDemand(snapshot(running(with(onNode("c1", "cpu"), owned), ofDept(runningJob("1", 32, 0), "b")), offNode("c2", "cpu")),
				inDept(jobs(1, 32, 0), "a")),
			want: map[string]string{"c1": "skip/allocated", "c2": "power_on/backlog"}},
		{name: "its server lent out, moves on, the borrower with no quota", cfg: quota, policy: movesOn,
			snap: withDemand(snapshot(running(with(onNode("c1", "cpu"), owned), ofDept(runningJob("1", 32, 0), "b")), offNode("c2", "cpu")),
				inDept(jobs(1, 32, 0), "a")),
			want: map[string]string{"c2": "power_on/backlog"}},
		{name: "its server running its own work, the lender is at its quota", cfg: quota,
			snap: withDemand(snapshot(running(with(onNode("c1", "cpu"), owned), ofDept(runningJob("1", 32, 0), "a")), offNode("c2", "cpu")),
				inDept(jobs(1, 32, 0), "a")),
			want: map[string]string{"c1": "skip/allocated", "c2": "skip/quota"}},
	})
}

// TestLendersFirst: the work of a department within its quota is placed before the work of
// one past it, whatever order the groups sort in.
func TestLendersFirst(t *testing.T) {
	cfg := newConfig(t, "", 1, 0)
	cfg.Policy.Quotas = []config.Quota{{Department: "z", Pool: "cpu", MaxServers: 1}, {Department: "b", Pool: "cpu", MaxServers: 0, Borrow: true}}
	snap := withDemand(snapshot(offNode("c1", "cpu")), inDept(jobs(1, 32, 0), "b"), inDept(jobs(1, 32, 0), "z"))
	p := newPass(snap, cfg, t0)
	p.screen()
	groups := p.lendersFirst(p.groups())
	if len(groups) != 2 || groups[0].dept != "z" || groups[1].dept != "b" {
		t.Fatalf("order %v, want the lender z first", []string{groups[0].dept, groups[1].dept})
	}
}
