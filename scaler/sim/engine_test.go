package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/learn"
	"github.com/rotahq/rota/scaler/sim/trace"
)

// randomJobs is a bursty workload from a fixed seed: quiet spells, bursts of small jobs, and
// a few gangs.
func randomJobs(n int, seed uint64) []trace.Job {
	rng := rand.New(rand.NewPCG(seed, 1))
	sizes := []int{1, 1, 1, 2, 4, 8, 8, 16, 32}
	var jobs []trace.Job
	t := int64(0)
	for i := range n {
		if rng.IntN(20) == 0 {
			t += int64(rng.IntN(6 * 3600)) // a quiet spell
		}
		t += int64(rng.IntN(300))
		jobs = append(jobs, job(i+2, t, int64(600+rng.IntN(4*3600)), sizes[rng.IntN(len(sizes))]))
	}
	return jobs
}

// twoPools are two pools of three listed servers each that fit the same work, one dearer.
const twoPools = `pools:
  - name: cheap
    profile: {cpu_cores: 96, gpus: 8}
    cost: {hourly: 1}
    boot_timeout: 5m
    nodes: [{name: c1}, {name: c2}, {name: c3}]
  - name: dear
    profile: {cpu_cores: 96, gpus: 8}
    cost: {hourly: 3}
    boot_timeout: 5m
    nodes: [{name: d1}, {name: d2}, {name: d3}]
`

// TestSkippingChangesNothing: calling rota's planner only when the world changed or a policy
// duration ran out gives exactly the replay that calls it at every evaluation interval.
func TestSkippingChangesNothing(t *testing.T) {
	cases := []struct {
		name, policy, fleet string
		jobs                int    // 150 unless set
		seed                uint64 // 7 unless set
	}{
		{"default policy", "", "peak", 0, 0},
		{"eager with a floor and short windows", eager + "  idle: {window: 5m}\n  node: {min_on: 15m}\n", "p95", 0, 0},
		{"tight budget, cooldowns and a daytime floor",
			"  disruption: {max_power_offs: 1, window: 30m}\n  cooldown: {scale_down: 20m}\n" +
				"  schedules:\n    - {name: day, start: '08:00', end: '18:00', min_on_share: 0.5}\n", "peak", 0, 0},
		// the break-even price rises with each cycle of the day and falls as one leaves it
		{"a cycle budget of two a day", "  node: {max_cycles_per_day: 2}\n", "peak", 0, 0},
		{"a cycle budget of one a day, break-even dear", "  node: {max_cycles_per_day: 1}\n  break_even: {wear_time: 1h}\n", "p95", 0, 0},
		// the idle-period rule changes its verdict as a server stays idle: the replay calls the
		// planner at the minute it flips (it fails if that is worked out a minute late)
		{"idle periods learned", "  break_even: {idle_periods: true}\n", "peak", 0, 0},
		// work waiting past backlog.for spills to the dearer pool: the replay calls the planner
		// when it has waited that long (it fails if that expiry is not a timer)
		{"a dearer pool to spill to", "  backlog: {queued_jobs: 2, for: 10m}\n", "config", 0, 0},
		// a pass that wakes servers for more than one group of waiting work gives each woken
		// server's room to the group that woke it; the next places every group on all the
		// room coming, biggest first, and may wake more (it fails if the servers that pass
		// woke, booting, are taken for no change then)
		{"groups waking in two pools", "  backlog: {queued_jobs: 3, for: 5m}\n", "config", 0, 37},
		// jobs of several shapes share a server's room: a job ending there changes what fits
		// though the room for each shape alone does not (it fails if alike compares that)
		{"light and gpu work sharing servers", "  forecast: {min_history: 2h}\n  spares: {max_share: 0.5}\n", "cpu and gpu", 200, 33},
		// light work steered off an idle GPU server to wake CPU servers keeps to them while
		// they boot (it fails if the next pass, finding no CPU server left to wake, lays the
		// work on the GPU server and wakes a GPU spare: the CPU servers booting were taken for
		// no change)
		{"light work steered, spares", "  forecast: {min_history: 2h}\n  spares: {max_share: 0.5, quantile: 0.95}\n  idle: {window: 1m}\n",
			"cpu and gpu", 200, 19},
		// with history from the sixth hour, what was learned changes every hour: the planner
		// vouches for its last answer rather than being asked (it fails if it vouches wrongly)
		{"history soon, learned idle periods", "  forecast: {min_history: 6h}\n  break_even: {idle_periods: true}\n", "peak", 600, 0},
		{"history soon, spares", "  forecast: {min_history: 6h}\n  spares: {max_share: 0.5}\n", "p95", 600, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, fleet := tinyConfig(t, c.policy), c.fleet
			jobs := randomJobs(cmp.Or(c.jobs, 150), cmp.Or(c.seed, 7))
			switch c.fleet {
			case "config": // the fleet the config lists: twoPools
				cfg = replayConfig(t, twoPools+"policy:\n"+c.policy)
			case "cpu and gpu":
				cfg, fleet = replayConfig(t, cpuAndGPU+"policy:\n"+c.policy), "config"
				lightHalf(jobs)
			}
			e := tinyEnv(t, cfg, fleet, jobs...)
			skip := Run(e, Rota("rota"), nil)
			every := Run(e, &rota{name: "rota", everyTick: true}, nil)
			if skip.PlannerCalls >= every.PlannerCalls {
				t.Errorf("skipping called the planner %d times, every tick %d", skip.PlannerCalls, every.PlannerCalls)
			}
			skip.PlannerCalls, every.PlannerCalls = 0, 0
			if !reflect.DeepEqual(skip, every) {
				t.Errorf("skipping changed the replay: %.2f vs %.2f server-hours, p95 wait %v vs %v",
					skip.ServerHours, every.ServerHours, skip.WaitP95, every.WaitP95)
			}
		})
	}
}

// TestPropertySkippingChangesNothing is TestSkippingChangesNothing over random policies: each
// trial draws its pools (one, two alike at two prices, or a CPU pool and a GPU pool), a
// handful of policy settings and whether work comes in classes (deferrable batch, services
// protected by day), and replays a random workload skipping and at every tick. The
// booting servers' rule without its one group (plan.Planner.WakesSettle) fails 46 of the 300
// trials.
func TestPropertySkippingChangesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 2))
	pick := func(opts ...string) string { return opts[rng.IntN(len(opts))] }
	for trial := range 300 {
		pools := pick("one", "two", "mixed")
		policy := pick("", "  backlog: {queued_jobs: 0, for: 0s}\n", "  backlog: {queued_jobs: 3, for: 5m}\n") +
			pick("", "  idle: {window: 1m}\n", "  idle: {window: 5m}\n") +
			pick("", "  break_even: {wear_time: 0s}\n", "  break_even: {idle_periods: true}\n") +
			pick("", "  forecast: {min_history: 2h}\n  spares: {max_share: 0.5}\n") +
			pick("", "  disruption: {max_concurrent: 1}\n", "  disruption: {max_power_offs: 2, window: 20m}\n") +
			pick("", "  node: {min_off: 3m, min_on: 5m}\n", "  cooldown: {scale_up: 5m, scale_down: 3m}\n") +
			pick("", "  moves: {enabled: false}\n")
		classes := pick("", "with")
		if classes != "" { // batch waits for the night, web is served first and protected by day
			policy += "  schedules: [{name: night, start: '22:00', end: '06:00'}, {name: day, start: '08:00', end: '18:00', min_on_share: 0.5, protect_services: true}]\n" +
				"classes:\n  - {name: batch, partitions: [batch], defer: {until: night, max: 12h}}\n  - {name: web, partitions: [web], service: true}\n  - {name: other}\n"
		}
		seed := rng.Uint64()
		jobs := randomJobs(150, seed)
		if classes != "" {
			for i := range jobs {
				jobs[i].Class = [3]string{"batch", "web", "other"}[i%3]
			}
		}
		// The trials run in parallel (as many at once as go test's -parallel allows): every
		// draw is made above, in trial order, so each trial replays as one after another would.
		t.Run(fmt.Sprint(trial), func(t *testing.T) {
			t.Parallel()
			cfg, fleet := tinyConfig(t, policy), "peak"
			switch pools {
			case "two":
				cfg, fleet = replayConfig(t, twoPools+"policy:\n"+policy), "config"
			case "mixed":
				cfg, fleet = replayConfig(t, cpuAndGPU+"policy:\n"+policy), "config"
				lightHalf(jobs)
			}
			e := tinyEnv(t, cfg, fleet, jobs...)
			skip := Run(e, Rota("rota"), nil)
			every := Run(e, &rota{name: "rota", everyTick: true}, nil)
			skip.PlannerCalls, every.PlannerCalls = 0, 0
			if !reflect.DeepEqual(skip, every) {
				t.Errorf("%s pools, jobs of seed %d, policy:\n%s: skipping changed the replay: %.2f vs %.2f server-hours",
					pools, seed, policy, skip.ServerHours, every.ServerHours)
			}
		})
	}
}

// lightHalf makes every other job light: CPUs only, 4 to 32 of them.
func lightHalf(jobs []trace.Job) {
	for i := range jobs {
		if i%2 == 0 {
			jobs[i].GPUs, jobs[i].CPUs = 0, 4*(1+i%8)
		}
	}
}

// cpuAndGPU are a pool of four CPU servers and a dearer one of three 8-GPU servers.
const cpuAndGPU = `pools:
  - name: cpu
    profile: {cpu_cores: 64}
    cost: {hourly: 0.5}
    boot_timeout: 3m
    nodes: [{name: c1}, {name: c2}, {name: c3}, {name: c4}]
  - name: gpu
    profile: {cpu_cores: 96, gpus: 8}
    cost: {hourly: 6}
    boot_timeout: 5m
    nodes: [{name: g1}, {name: g2}, {name: g3}]
`

// TestSkippingChangesNothingOnNASA is TestSkippingChangesNothing on the NASA log: 128
// servers, gangs of up to 128 that wake and empty many servers at once. It fails where the
// random workloads do not: when the effects of the planner's own power-offs are taken for no
// change, as its own wakes are (rota.booting).
func TestSkippingChangesNothingOnNASA(t *testing.T) {
	tr, cfg := repoTrace(t, "swf/NASA-iPSC-1993-3.1-cln.swf.gz")
	e, err := NewEnv(cfg, tr, Options{WatchDelay: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	skip := Run(e, Rota("rota"), nil)
	every := Run(e, &rota{name: "rota", everyTick: true}, nil)
	skip.PlannerCalls, every.PlannerCalls = 0, 0
	if !reflect.DeepEqual(skip, every) {
		t.Errorf("skipping changed the replay: %.2f vs %.2f server-hours, %d vs %d power-offs",
			skip.ServerHours, every.ServerHours, skip.PowerOffs, every.PowerOffs)
	}
}

// TestIdlePeriodsAreLearned: with policy.break_even.idle_periods the replay logs each
// server's idle periods (ended by a job or cut by a power-off, with the rank the period began
// at) for the learner, and the rule they feed changes decisions; without it nothing is logged.
func TestIdlePeriodsAreLearned(t *testing.T) {
	jobs := randomJobs(400, 11)
	on := &rota{name: "rota"}
	withRule := Run(tinyEnv(t, tinyConfig(t, "  break_even: {idle_periods: true}\n"), "peak", jobs...), on, nil)
	off := &rota{name: "rota"}
	without := Run(tinyEnv(t, tinyConfig(t, ""), "peak", jobs...), off, nil)
	var ended, cut, ranks uint32
	for i := range on.learned.idle {
		d := &on.learned.idle[i]
		for r := range learn.IdleRanks {
			for h := range learn.IdleParts {
				for b := range learn.IdleBins {
					ended += d.Ended[r][h][b]
					cut += d.Cut[r][h][b]
				}
				if r > 0 {
					ranks += d.Seen[r][h]
				}
			}
		}
	}
	if ended == 0 || cut == 0 || ranks == 0 {
		t.Errorf("learned %d ended and %d cut idle periods, %d of a rank above 1: want some of each", ended, cut, ranks)
	}
	if off.learned.idle != nil {
		t.Error("idle periods kept with the rule off")
	}
	if withRule.ServerHours == without.ServerHours && withRule.PowerOffs == without.PowerOffs {
		t.Errorf("the rule changed nothing: %.2f server-hours, %d power-offs", withRule.ServerHours, withRule.PowerOffs)
	}
}

// seenChecker is a policy that notes the longest log of finished boots and shutdowns (world.seen)
// it was called with.
type seenChecker struct {
	Policy
	most int
}

func (c *seenChecker) decide(w *world) []fleet.Action {
	c.most = max(c.most, len(w.seen))
	return c.Policy.decide(w)
}

// TestOnlyALearnerGetsTheBootLog: the world logs finished boots and shutdowns for rota, whose
// learner reads and empties the log, and not for the idle timeout, which would never empty it
// (on the NASA log it grew to 175,000 entries and cost the baseline's replay over 40% of its
// CPU).
func TestOnlyALearnerGetsTheBootLog(t *testing.T) {
	e := tinyEnv(t, tinyConfig(t, ""), "peak", randomJobs(400, 11)...)
	for _, c := range []struct {
		p     Policy
		learn bool
	}{{IdleTimeout(10 * time.Minute), false}, {Rota("rota"), true}} {
		sc := &seenChecker{Policy: c.p}
		r := Run(e, sc, nil)
		if r.PowerOffs == 0 {
			t.Fatalf("%s: no power-off: the workload tests nothing", c.p.Name())
		}
		if got := sc.most > 0; got != c.learn {
			t.Errorf("%s: the longest boot log it was called with held %d entries; want some: %v", c.p.Name(), sc.most, c.learn)
		}
	}
}

// TestInvariants holds for every policy on a random workload: no busy server powered off,
// every job either run or reported, never less than the lower bound.
func TestInvariants(t *testing.T) {
	e := tinyEnv(t, tinyConfig(t, ""), "p95", randomJobs(400, 11)...)
	for _, r := range compareAll(t, e)[1:] {
		t.Run(r.Policy, func(t *testing.T) {
			if r.Violations != 0 || r.JobsRun+len(r.NotRun) != len(e.Jobs) {
				t.Errorf("violations %d, run %d + not run %d != %d jobs", r.Violations, r.JobsRun, len(r.NotRun), len(e.Jobs))
			}
			if r.XLowerBound < 1 || r.Utilisation > 1 {
				t.Errorf("x lower bound %v, utilisation %v", r.XLowerBound, r.Utilisation)
			}
		})
	}
}

// compareAll runs every policy on e.
func compareAll(t testing.TB, e *Env) []Result {
	t.Helper()
	rs, err := Compare(context.Background(), e, []Policy{AlwaysOn(), IdleTimeout(10 * time.Minute), Rota("rota")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestCompareStopsWhenCancelled(t *testing.T) {
	e := tinyEnv(t, tinyConfig(t, ""), "p95", randomJobs(100, 3)...)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Compare(ctx, e, []Policy{AlwaysOn()}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// repoTrace opens one of the real traces kept in testdata/traces (its README: source, licence),
// with the simulate config of its kind.
func repoTrace(t testing.TB, rel string) (*trace.Trace, *config.Config) {
	t.Helper()
	root := testutil.RepoRoot(t)
	tr := readTrace(t, filepath.Join(root, "testdata", "traces", rel))
	conf := "rota-itp.yml"
	if strings.HasPrefix(rel, "swf/") {
		conf = "rota-swf.yml"
	}
	cfg, err := config.LoadFor(filepath.Join(root, "deploy", "simulate", conf), config.Replay)
	if err != nil {
		t.Fatal(err)
	}
	return tr, cfg
}

// TestTraceCluster05 replays one small real trace under every policy.
func TestTraceCluster05(t *testing.T) {
	tr, cfg := repoTrace(t, "itp/cluster05.csv")
	e, err := NewEnv(cfg, tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rs := compareAll(t, e)
	on, idle := rs[1], rs[2]
	if on.WaitP95 != 0 || idle.WaitP95 != 300 || idle.XLowerBound > 1.2 || on.XLowerBound < 10 {
		t.Errorf("always-on p95 %v x%.2f, idle p95 %v x%.2f", on.WaitP95, on.XLowerBound, idle.WaitP95, idle.XLowerBound)
	}
	for _, r := range rs {
		if r.Violations != 0 || r.JobsRun+len(r.NotRun) != len(e.Jobs) {
			t.Errorf("%s: violations %d, run %d, not run %d", r.Policy, r.Violations, r.JobsRun, len(r.NotRun))
		}
	}
}

// BenchmarkCluster04 replays ITP cluster04 (15,802 jobs, 60 days) with every policy.
func BenchmarkCluster04(b *testing.B) {
	tr, cfg := repoTrace(b, "itp/cluster04.csv")
	for b.Loop() {
		e, err := NewEnv(cfg, tr, Options{})
		if err != nil {
			b.Fatal(err)
		}
		compareAll(b, e)
	}
}

// TestDeployConfigs: every example under deploy/simulate loads and sizes a fleet for a trace.
func TestDeployConfigs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testutil.RepoRoot(t), "deploy", "simulate", "*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no configs under deploy/simulate: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			cfg, err := config.LoadFor(f, config.Replay)
			if err != nil {
				t.Fatal(err)
			}
			tr := &trace.Trace{Jobs: []trace.Job{{Submit: 0, Duration: 600, Nodes: 2, CPUs: 1}}}
			e, err := NewEnv(cfg, tr, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r := Run(e, Rota("rota"), nil); r.JobsRun != 1 {
				t.Errorf("the job did not run: %+v", r.NotRun)
			}
		})
	}
}

// changingEnvs are replays under policies that change servers in every way (moves, short
// windows, cycle budgets) and a repository trace.
func changingEnvs(t *testing.T) map[string]*Env {
	moves := tinyConfig(t, "  moves: {enabled: true, max_moves: 2, window: 30m}\n")
	jobs := randomJobs(150, 7)
	for i := range jobs {
		jobs[i].Requeueable = i%3 != 0
	}
	tr, cfg := repoTrace(t, "itp/cluster05.csv")
	itp, err := NewEnv(cfg, tr, Options{WatchDelay: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*Env{
		"moves":          tinyEnv(t, moves, "peak", jobs...),
		"short windows":  tinyEnv(t, tinyConfig(t, eager+"  idle: {window: 5m}\n  node: {min_on: 15m}\n"), "p95", randomJobs(150, 7)...),
		"a cycle budget": tinyEnv(t, tinyConfig(t, "  node: {max_cycles_per_day: 1}\n"), "p95", randomJobs(150, 9)...),
		"ITP cluster05":  itp,
	}
}

// TestSnapshotListsEveryChange: the snapshot the replay gives the planner, kept from call to
// call, is the one built afresh from the world (its nodes and its demand), and it lists every node it changed since the
// planner's last call (the planner counts only those again, see
// plan.Planner.ActionsChanged): each node not listed is as at the last call, telemetry aside.
func TestSnapshotListsEveryChange(t *testing.T) {
	for name, e := range changingEnvs(t) {
		t.Run(name, func(t *testing.T) {
			var last []fleet.Node
			calls, listed, demands := 0, 0, 0
			p := &rota{name: "rota"}
			p.inspect = func(w *world, snap fleet.Snapshot, changed []int) {
				calls++
				var fresh snapshotter
				f := fresh.build(w, p.config(w))
				if !reflect.DeepEqual(f.Nodes, snap.Nodes) {
					t.Fatalf("call %d: the snapshot kept from call to call is not the one built afresh", calls)
				}
				if len(f.Demand)+len(snap.Demand) > 0 && !reflect.DeepEqual(f.Demand, snap.Demand) {
					t.Fatalf("call %d: the demand kept is %+v, built afresh %+v", calls, snap.Demand, f.Demand)
				}
				demands += len(snap.Demand)
				if last != nil {
					listed += len(changed)
					for i := range snap.Nodes {
						a, b := last[i], snap.Nodes[i]
						a.Telemetry, b.Telemetry = fleet.TelemetryView{}, fleet.TelemetryView{}
						if !slices.Contains(changed, i) && !reflect.DeepEqual(a, b) {
							t.Fatalf("call %d: node %s changed but not listed:\n%+v\nwas\n%+v", calls, b.Name, b, a)
						}
					}
				}
				last = slices.Clone(snap.Nodes)
			}
			Run(e, p, nil)
			if calls < 10 || listed == 0 || demands == 0 {
				t.Fatalf("%d calls, %d nodes listed changed, %d demands: the test would prove nothing", calls, listed, demands)
			}
		})
	}
}

// TestNeedCountedAsBuilt: the need the replay learns from, counted as the snapshot builds its
// nodes again, is the snapshot's Need at every call.
func TestNeedCountedAsBuilt(t *testing.T) {
	for name, e := range changingEnvs(t) {
		t.Run(name, func(t *testing.T) {
			calls, busy := 0, 0
			p := &rota{name: "rota"}
			p.inspect = func(w *world, snap fleet.Snapshot, _ []int) {
				calls++
				want := snap.Need(p.config(w))
				if got := p.snap.need(p.config(w)); !maps.Equal(got, want) {
					t.Fatalf("call %d: need counted as built %v, the snapshot's %v", calls, got, want)
				}
				for _, n := range want {
					busy += n
				}
			}
			Run(e, p, nil)
			if calls < 10 || busy == 0 {
				t.Fatalf("%d calls, none with work: the test would prove nothing", calls)
			}
		})
	}
}

// sameChecker is rota checked, at every call it may skip, against a comparison of every
// server's view with the one it had at the planner's last call.
type sameChecker struct {
	*rota
	t                        *testing.T
	views                    []serverView
	queue                    []int32
	mask                     uint64
	looked, differ, timedOut int
}

func (c *sameChecker) decide(w *world) []fleet.Action {
	calls := w.acct.plannerCalls
	if c.planned {
		full := slices.Equal(w.queue, c.queue) && scheduleMask(w, w.now) == c.mask
		moves := c.config(w).Policy.Moves.Enabled
		shapes, total := c.waitingShapes(w)
		for i := range w.srv {
			full = full && (alike(c.view(w, i), c.views[i], shapes, total, moves) || c.booting(w, i))
		}
		inc, timed := c.same(w), c.timers(w, c.lastPlan) > w.now
		c.looked++
		if inc != full {
			c.differ++
			if timed {
				c.t.Fatalf("at %d: the servers touched say same %v, every server %v, and no timer ran out", w.now, inc, full)
			}
		}
		if !timed {
			c.timedOut++
		}
	}
	acts := c.rota.decide(w)
	if w.acct.plannerCalls > calls {
		c.views = c.views[:0]
		for i := range w.srv {
			c.views = append(c.views, c.view(w, i))
		}
		c.queue, c.mask = slices.Clone(w.queue), scheduleMask(w, w.now)
	}
	return acts
}

// TestSkippingComparesWhatChanged: the skipping compares only the servers touched since the
// planner's last call (rota.same); compared with every server's view, it gives the same
// answer whenever no timer has run out (when one has, the planner is called anyway).
func TestSkippingComparesWhatChanged(t *testing.T) {
	for name, e := range changingEnvs(t) {
		t.Run(name, func(t *testing.T) {
			c := &sameChecker{rota: &rota{name: "rota"}, t: t}
			Run(e, c, nil)
			if c.looked < 100 || c.timedOut == 0 {
				t.Fatalf("%d calls looked at, %d with a timer run out: the test would prove nothing", c.looked, c.timedOut)
			}
			t.Logf("%d calls looked at, %d answered otherwise with a timer run out", c.looked, c.differ)
		})
	}
}

// timersChecker is rota checked, whenever it may skip a call or look ahead, against timers
// worked out from every server afresh.
type timersChecker struct {
	*rota
	t             *testing.T
	looked, found int
}

func (c *timersChecker) check(w *world) {
	if !c.planned {
		return
	}
	fresh, kept := *c.rota, *c.rota
	fresh.expiries = expiries{}
	want := fresh.timers(w, c.lastPlan)
	// On a copy of what rota keeps, so that the check updates nothing rota would not.
	x := &kept.expiries
	x.times = slices.Clone(x.times)
	for s := range x.times {
		x.times[s] = slices.Clone(x.times[s])
	}
	x.isIdle, x.isDraining, x.ready = slices.Clone(x.isIdle), slices.Clone(x.isDraining), slices.Clone(x.ready)
	x.heap, x.scratch = slices.Clone(x.heap), nil
	if got := kept.timers(w, c.lastPlan); got != want {
		c.t.Fatalf("at %d: timers kept from call to call %d, worked out afresh %d", w.now, got, want)
	}
	c.looked++
	if want != Never {
		c.found++
	}
}

func (c *timersChecker) decide(w *world) []fleet.Action {
	c.check(w)
	return c.rota.decide(w)
}

func (c *timersChecker) next(w *world) int64 {
	c.check(w)
	return c.rota.next(w)
}

// TestTimersFollowTheServers: the servers' times the timers keep from call to call (each
// server's worked out again when the world touches it) give what working them all out afresh
// gives, at every call and look ahead of four replays.
func TestTimersFollowTheServers(t *testing.T) {
	for name, e := range changingEnvs(t) {
		t.Run(name, func(t *testing.T) {
			c := &timersChecker{rota: &rota{name: "rota"}, t: t}
			Run(e, c, nil)
			if c.found < 100 {
				t.Fatalf("%d looks, %d with a timer: the test would prove nothing", c.looked, c.found)
			}
		})
	}
}

// The due set holds each server with a time once, in heap order, its places right, and gives
// back the earliest time, as times are set, moved earlier and later, and taken away.
func TestDueSetHoldsEachServerOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	const n = 50
	d := newDueSet(n)
	want := make([]int64, n)
	for i := range want {
		want[i] = Never
	}
	for step := range 20000 {
		i := rng.IntN(n)
		switch rng.IntN(4) {
		case 0:
			want[i] = Never
		case 1:
			// keep: set to the time it has
		default:
			want[i] = rng.Int64N(500)
		}
		d.set(i, want[i])
		held := 0
		for s, at := range want {
			if at != Never {
				held++
			} else if d.pos[s] >= 0 {
				t.Fatalf("step %d: server %d has no time but a place", step, s)
			}
		}
		if len(d.q) != held {
			t.Fatalf("step %d: %d servers held, want %d", step, len(d.q), held)
		}
		for k, s := range d.q {
			if d.pos[s] != int32(k) || d.at[s] != want[s] {
				t.Fatalf("step %d: server %d at place %d has place %d and time %d, want %d", step, s, k, d.pos[s], d.at[s], want[s])
			}
			if k > 0 && d.at[d.q[(k-1)/2]] > d.at[s] {
				t.Fatalf("step %d: place %d is earlier than its parent's", step, k)
			}
		}
		if _, got := d.first(); got != slices.Min(want) {
			t.Fatalf("step %d: first time %d, want the earliest %d", step, got, slices.Min(want))
		}
	}
}

// The due heap gives back, push after push and pop after pop, the earliest time it holds.
func TestDueHeapPopsTheEarliest(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	var h dueHeap
	var held []int64
	for range 20000 {
		if len(h) > 0 && rng.IntN(3) == 0 {
			want := slices.Min(held)
			got := h.pop()
			if got.t != want {
				t.Fatalf("popped %d, want the earliest %d", got.t, want)
			}
			held = slices.Delete(held, slices.Index(held, want), slices.Index(held, want)+1)
			continue
		}
		d := due{t: rng.Int64N(500), s: int32(rng.IntN(50))}
		h.push(d)
		held = append(held, d.t)
	}
	if len(h) != len(held) {
		t.Fatalf("heap holds %d, want %d", len(h), len(held))
	}
}
