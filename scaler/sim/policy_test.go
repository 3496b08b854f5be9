package sim

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/sim/trace"
)

// eager sets the backlog threshold to 0 all day through schedules (a plain
// backlog.queued_jobs: 0 now says the same).
const eager = "  schedules:\n" +
	"    - {name: am, start: '00:00', end: '12:00', backlog_queued_jobs: 0}\n" +
	"    - {name: pm, start: '12:00', end: '00:00', backlog_queued_jobs: 0}\n"

// TestTinyTraces checks each policy against answers worked out by hand. The world: 8-GPU
// servers costing 1 an hour, boot 5m, shutdown 1m, idle timeout 10m, rota's default policy
// (idle window 2m, evaluation every minute, the watch calling the planner as work arrives, no
// history yet so an idle server goes off at the break-even time: boot 5m, shutdown 1m and
// wear 20m of idle cost, 26m; backlog "more than 10 jobs for 2m", which only lets work spill
// to dearer pools: work with no place wakes a server at once) unless eager.
func TestTinyTraces(t *testing.T) {
	type want struct {
		onSec     int64 // powered server-seconds
		waits     []int64
		ons, offs int
		notRun    int
	}
	oneJob := []trace.Job{job(1, 0, 3600, 8)}
	// A holds one server for an hour; B needs both servers at once, so it waits for A.
	gang := []trace.Job{job(1, 0, 3600, 8), job(2, 0, 3600, 16)}
	// A runs 10 minutes, then nothing for almost two hours, then B.
	burst := []trace.Job{job(1, 0, 600, 8), job(2, 7200, 600, 8)}
	// A holds server 1 for an hour; B comes at 30m when server 2 has been powered off.
	boot := []trace.Job{job(1, 0, 3600, 8), job(2, 1800, 600, 8)}
	cases := []struct {
		name   string
		fleet  string
		jobs   []trace.Job
		policy Policy
		extra  string
		want   want
	}{
		{"one job, always-on", "1", oneJob, AlwaysOn(), "", want{3600, []int64{0}, 0, 0, 0}},
		{"one job, idle timeout", "1", oneJob, IdleTimeout(10 * time.Minute), "", want{3600, []int64{0}, 0, 0, 0}},
		{"one job, rota", "1", oneJob, Rota("rota"), "", want{3600, []int64{0}, 0, 0, 0}},

		// Two servers for two hours; the idle one is kept on while B waits for it.
		{"gang, always-on", "2", gang, AlwaysOn(), "", want{14400, []int64{0, 3600}, 0, 0, 0}},
		{"gang, idle timeout keeps the server the gang waits for", "2", gang, IdleTimeout(10 * time.Minute), "", want{14400, []int64{0, 3600}, 0, 0, 0}},
		{"gang, rota keeps the server the gang waits for", "2", gang, Rota("rota"), "", want{14400, []int64{0, 3600}, 0, 0, 0}},

		{"burst, always-on", "1", burst, AlwaysOn(), "", want{7800, []int64{0, 0}, 0, 0, 0}},
		// Idle from 600, off at 1200 (+1m shutdown); B wakes it at 7200, starts at 7500 and
		// ends at 8100: 1260 + 900 seconds.
		{"burst, idle timeout", "1", burst, IdleTimeout(10 * time.Minute), "", want{2160, []int64{0, 300}, 1, 1, 0}},
		// Idle from 600, powered off at the break-even (26m, the 2160 tick), off at 2220. B is
		// work nothing on or coming can hold, so it wakes the server as it arrives though one
		// job is under the backlog threshold of 10: ready at 7500, B ends at 8100: 2220 + 900.
		{"burst, rota default wakes for one job at once", "1", burst, Rota("rota"), "", want{2220 + 900, []int64{0, 300}, 1, 1, 0}},
		// Eager: the same (waking for work no capacity holds waits for neither the threshold
		// nor backlog.for).
		{"burst, rota eager", "1", burst, Rota("rota"), eager, want{2220 + 900, []int64{0, 300}, 1, 1, 0}},

		{"boot, always-on", "2", boot, AlwaysOn(), "", want{7200, []int64{0, 0}, 0, 0, 0}},
		// Server 2: off at 600 (off at 660), woken at 1800, B runs 2100-2700, off again at
		// 3300 (off at 3360): 660 + 1560. Server 1: 3600.
		{"boot, idle timeout", "2", boot, IdleTimeout(10 * time.Minute), "", want{3600 + 2220, []int64{0, 300}, 1, 2, 0}},
		// Server 2, idle from the start, powered off at the break-even (1560), off at 1620. B
		// wakes it as it arrives at 1800, ready 2100, runs to 2700; server 2 then stays on
		// (break-even) until the run ends with A at 3600: 1620 + 1800.
		{"boot, rota default", "2", boot, Rota("rota"), "", want{3600 + 1620 + 1800, []int64{0, 300}, 1, 1, 0}},
		// Eager: the same, for the same reason as the burst.
		{"boot, rota eager", "2", boot, Rota("rota"), eager, want{3600 + 1620 + 1800, []int64{0, 300}, 1, 1, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := tinyEnv(t, tinyConfig(t, c.extra), c.fleet, c.jobs...)
			r := Run(e, c.policy, nil)
			got := want{int64(r.ServerHours*3600 + 0.5), r.Waits, r.PowerOns, r.PowerOffs, len(r.NotRun)}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v\nseries %v", got, c.want, r.Series)
			}
			if r.Violations != 0 {
				t.Errorf("%d power-offs of busy servers were attempted", r.Violations)
			}
		})
	}
}

func TestLowerBound(t *testing.T) {
	// 24 GPUs busy for an hour is 3 servers; then 1 GPU for an hour is 1 server.
	e := tinyEnv(t, tinyConfig(t, ""), "peak", job(1, 0, 3600, 16), job(2, 0, 3600, 8), job(3, 3600, 3600, 1))
	lb := e.LowerBoundResult()
	if lb.ServerHours != 4 || lb.Cost != 4 || e.Pools[0].Servers != 3 {
		t.Errorf("lower bound %v h, cost %v, fleet %d; want 4, 4, 3", lb.ServerHours, lb.Cost, e.Pools[0].Servers)
	}
	if want := (24.0 + 1) / (4 * 8); lb.Utilisation != want {
		t.Errorf("utilisation %v, want %v", lb.Utilisation, want)
	}
}

// TestBackfill: B needs both servers and waits for A (its shadow time is 3600). C ends before
// then and may jump ahead on the free server; D would still run at 3600 and must wait behind B.
func TestBackfill(t *testing.T) {
	e := tinyEnv(t, tinyConfig(t, ""), "2", job(1, 0, 3600, 8), job(2, 0, 3600, 16), job(3, 10, 600, 8), job(4, 20, 7200, 8))
	r := Run(e, AlwaysOn(), nil)
	if want := []int64{0, 0, 3600, 7180}; !reflect.DeepEqual(r.Waits, want) {
		t.Errorf("waits %v, want %v", r.Waits, want)
	}
}

// TestNotHeldBackByAJobOfOtherServers: a job that found no room holds back the later jobs
// asking as much or more only where they may use no server it may not: a job of another
// partition, or one the failed job's exclusions (a move's) keep off a server, starts on the
// room there is. Both once waited for the failed job's servers to free (hours, on a fleet
// whose other pool stood empty).
func TestNotHeldBackByAJobOfOtherServers(t *testing.T) {
	cfg := replayConfig(t, `policy: {moves: {enabled: true}}
pools:
  - {name: a, profile: {cpu_cores: 96, gpus: 8, partitions: [pa]}, cost: {hourly: 6}, boot_timeout: 5m, nodes: [{name: a1}, {name: a2}]}
  - {name: b, profile: {cpu_cores: 96, gpus: 8, partitions: [pb]}, cost: {hourly: 6}, boot_timeout: 5m, nodes: [{name: b1}]}
`)
	inPartition := func(j trace.Job, p string) trace.Job { j.Partition = p; return j }
	for _, c := range []struct {
		name string
		jobs []trace.Job
		// moved: the first job is moved off its server at 600, which it may not use again
		moved bool
		// the servers each job runs on after the placement at 600 (none: waits)
		want [][]string
	}{
		{name: "a job of another partition",
			jobs: []trace.Job{inPartition(job(2, 0, 7200, 8), "pa"), inPartition(job(3, 0, 7200, 8), "pa"),
				inPartition(job(4, 0, 7200, 4), "pa"), inPartition(job(5, 0, 600, 8), "pb")},
			want: [][]string{{"a1"}, {"a2"}, nil, {"b1"}}},
		{name: "a job excluded from a server by a move", moved: true,
			jobs: []trace.Job{inPartition(job(2, 0, 7200, 8), "pa"), inPartition(job(3, 0, 3600, 8), "pa"),
				inPartition(job(4, 0, 600, 8), "pa")},
			want: [][]string{nil, {"a2"}, {"a1"}}},
		// the reservation holds a1 and a2 at 7200; b1 is none of them, so a job of pb that
		// runs past 7200 delays nothing there
		{name: "a long job of another partition, past the reservation",
			jobs: []trace.Job{inPartition(job(2, 0, 7200, 8), "pa"), inPartition(job(3, 0, 7200, 8), "pa"),
				inPartition(job(4, 0, 7200, 16), "pa"), inPartition(job(5, 0, 86400, 8), "pb")},
			want: [][]string{{"a1"}, {"a2"}, nil, {"b1"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.jobs[0].Requeueable = true
			e := tinyEnv(t, cfg, "config", c.jobs...)
			w := newWorld(e)
			last := len(c.jobs) - 1
			for ji := range last {
				w.queue = append(w.queue, int32(ji))
			}
			w.placeDirty = true
			w.place()
			w.now += 600
			if c.moved {
				w.requeue(0, slices.Clone(w.held[0]))
			}
			w.queue, w.placeDirty = append(w.queue, int32(last)), true
			w.place()
			for ji, want := range c.want {
				var got []string
				if w.start[ji] >= 0 {
					for _, s := range w.held[ji] {
						got = append(got, e.Names[s])
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("job %d runs on %v, want %v", ji, got, want)
				}
			}
		})
	}
}

func TestJobsThatCanNeverRunAreReported(t *testing.T) {
	cases := []struct {
		name   string
		policy Policy
	}{{"always-on", AlwaysOn()}, {"idle timeout", IdleTimeout(10 * time.Minute)}, {"rota", Rota("rota")}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// 24 GPUs need three servers; the fleet has two.
			e := tinyEnv(t, tinyConfig(t, ""), "2", job(7, 0, 600, 8), job(8, 0, 600, 24))
			r := Run(e, c.policy, nil)
			if len(r.NotRun) != 1 || r.NotRun[0].Line != 8 || r.JobsRun != 1 {
				t.Errorf("not run %+v, ran %d", r.NotRun, r.JobsRun)
			}
		})
	}
}

// A fleet raised to fit the largest job names that job's line: one bogus record of a trace
// can size the whole fleet.
func TestFleetRaisedNamesTheJob(t *testing.T) {
	tr := &trace.Trace{Jobs: []trace.Job{job(4, 0, 100, 8), job(9, 50, 100, 32), job(12, 60, 100, 32)}, Servers: 2}
	e, err := NewEnv(tinyConfig(t, ""), tr, Options{Fleet: "trace"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Pools[0].Servers != 4 || !strings.Contains(e.Describe(), "raised to the largest job's 4 (line 9)") {
		t.Errorf("%d servers: %s", e.Pools[0].Servers, e.Describe())
	}
}

func TestFleetSizing(t *testing.T) {
	jobs := []trace.Job{job(1, 0, 100, 8), job(2, 0, 100, 8), job(3, 100, 9900, 8)}
	cases := []struct {
		spec    string
		servers int
		err     bool
	}{
		{"peak", 2, false}, {"", 2, false}, {"auto", 2, false}, {"p95", 1, false}, {"5", 5, false},
		// the config lists no nodes: no fleet, an error rather than a table of zeros
		{"config", 0, true},
		// the trace states no machine size
		{"trace", 0, true},
		{"0", 0, true}, {"most", 0, true},
	}
	for _, c := range cases {
		t.Run("fleet "+c.spec, func(t *testing.T) {
			tr := &trace.Trace{Jobs: jobs}
			e, err := NewEnv(tinyConfig(t, ""), tr, Options{Fleet: c.spec})
			if (err != nil) != c.err {
				t.Fatalf("err = %v, want error %v", err, c.err)
			}
			if err == nil && e.Pools[0].Servers != c.servers {
				t.Errorf("servers %d, want %d (%s)", e.Pools[0].Servers, c.servers, e.Describe())
			}
		})
	}
}

// TestGangIsNotStarved: small jobs come every 20 minutes and run 30; a job needing the whole
// fleet comes at 900, when the job of 0 holds a server until 1800. The reservation (EASY), and
// waking and keeping servers for it, let it start at 1800 (a wait of 900); the job of 1200
// would still run then, so it waits for the gang to end at 2400 (1200).
func TestGangIsNotStarved(t *testing.T) {
	var jobs []trace.Job
	for i := range 30 {
		jobs = append(jobs, job(i+2, int64(i)*1200, 1800, 8))
	}
	jobs = append(jobs, job(100, 900, 600, 32)) // four servers at once
	cases := []struct {
		policy Policy
		extra  string
	}{
		{AlwaysOn(), ""},
		{IdleTimeout(10 * time.Minute), ""},
		// rota's default backlog threshold would leave the gang waiting for hours; eager wakes
		// servers for any waiting job
		{Rota("rota"), eager},
	}
	for _, c := range cases {
		t.Run(c.policy.Name(), func(t *testing.T) {
			e := tinyEnv(t, tinyConfig(t, c.extra), "4", jobs...)
			r := Run(e, c.policy, nil)
			if n := len(r.Waits); len(r.NotRun) != 0 || r.Violations != 0 || n < 2 || r.Waits[n-1] != 1200 || r.Waits[n-2] != 900 {
				t.Errorf("not run %v, violations %d, waits %v", r.NotRun, r.Violations, r.Waits)
			}
		})
	}
}

// TestEdgeCases: jobs of no length, arrivals that meet a boot. (A fleet that can run nothing is
// refused before any replay: TestNoRunnableJobIsAnError; so is a trace of jobs of no length
// alone: TestNoServerTimeIsAnError.)
func TestEdgeCases(t *testing.T) {
	cases := []struct {
		name   string
		fleet  string
		jobs   []trace.Job
		run    int
		notRun int
	}{
		{"zero-length jobs", "1", []trace.Job{job(1, 0, 0, 8), job(2, 0, 0, 8), job(3, 5, 0, 1), job(4, 5, 60, 1)}, 4, 0},
		{"arrival when a boot ends", "1", []trace.Job{job(1, 0, 60, 8), job(2, 7200, 60, 8), job(3, 7500, 60, 8)}, 3, 0},
	}
	for _, c := range cases {
		for _, p := range []Policy{AlwaysOn(), IdleTimeout(10 * time.Minute), Rota("rota")} {
			t.Run(c.name+"/"+p.Name(), func(t *testing.T) {
				e := tinyEnv(t, tinyConfig(t, eager), c.fleet, c.jobs...)
				r := Run(e, p, nil)
				if r.JobsRun != c.run || len(r.NotRun) != c.notRun || r.Violations != 0 {
					t.Errorf("ran %d, not run %v, violations %d", r.JobsRun, r.NotRun, r.Violations)
				}
			})
		}
	}
}

// readTrace reads the trace at path (format told from the content).
func readTrace(t testing.TB, path string) *trace.Trace {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := trace.Read(f, "", trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// An SWF header that states the machine (MaxNodes, MaxProcs) sizes the default fleet: the KTH
// SP2 log's 100 nodes, not the 943 its jobs would need started without waiting. --fleet peak
// still gives the latter.
func TestFleetFromTheTracesMachine(t *testing.T) {
	cfg := replayConfig(t, "pools:\n  - name: sp2\n    profile: {cpu_cores: 1}\n    cost: {hourly: 1}\n    boot_timeout: 5m\n")
	tr := readTrace(t, filepath.Join("testdata", "machine4.swf"))
	if tr.Servers != 4 {
		t.Fatalf("the trace's machine: %d servers, want 4 (MaxNodes)", tr.Servers)
	}
	for spec, want := range map[string]int{"": 4, "auto": 4, "trace": 4, "peak": 7} {
		e, err := NewEnv(cfg, tr, Options{Fleet: spec})
		if err != nil {
			t.Fatalf("--fleet %q: %v", spec, err)
		}
		if got := e.Pools[0].Servers; got != want {
			t.Errorf("--fleet %q: %d servers (%s), want %d", spec, got, e.Describe(), want)
		}
	}
	r := Run(tinyEnvFor(t, cfg, tr, ""), AlwaysOn(), nil)
	if r.JobsRun != 3 || r.Waits[len(r.Waits)-1] == 0 {
		t.Errorf("on the 4-node machine: ran %d, waits %v; want 3, the second job queued", r.JobsRun, r.Waits)
	}
}

// TestSWFJobsTakeWholeServers: on a machine of four processors a server, a job takes whole
// servers whatever its count, and a pool whose profile has other than four cores is replayed
// with the machine's, for the planner as for the world, and the notes say so. Told one core,
// rota's planner saw no server that fits and gave up on every job the baselines ran; with 16,
// each job took a quarter of a server and the three of them shared two servers, the lower bound
// a quarter of the whole servers' (1.03 server-hours against 4).
func TestSWFJobsTakeWholeServers(t *testing.T) {
	tr, err := trace.Read(strings.NewReader("; MaxNodes: 3\n; MaxProcs: 12\n"+
		"1 0 -1 3600 3 -1 -1 3 -1 -1 1 1 1 -1 -1 -1 -1 -1\n"+
		"2 60 -1 3600 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n"+
		"3 120 -1 3600 6 -1 -1 6 -1 -1 1 1 1 -1 -1 -1 -1 -1\n"), trace.SWF, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.ServerCPUs != 4 {
		t.Fatalf("ServerCPUs %d, want 4", tr.ServerCPUs)
	}
	for _, cores := range []int{1, 4, 16} {
		t.Run(fmt.Sprintf("%d cores", cores), func(t *testing.T) {
			cfg := replayConfig(t, fmt.Sprintf("pools:\n  - name: sp2\n    profile: {cpu_cores: %d}\n    cost: {hourly: 1}\n    boot_timeout: 5m\n", cores))
			e := tinyEnvFor(t, cfg, tr, "")
			if e.Pools[0].CPUs != 4 || e.Config.Pools[0].Profile.CPUCores != 4 || cfg.Pools[0].Profile.CPUCores != cores {
				t.Errorf("pool replayed with %d CPUs, the planner told %d, the caller's config changed to %d; want 4, 4, %d",
					e.Pools[0].CPUs, e.Config.Pools[0].Profile.CPUCores, cfg.Pools[0].Profile.CPUCores, cores)
			}
			// one server from 0, two from 60, four from 120 to 3600, three to 3660, two to 3720
			if want := float64(60*1+60*2+3480*4+60*3+60*2) / 3600; math.Abs(e.LowerBound-want) > 1e-9 {
				t.Errorf("lower bound %.3f server-hours, want %.3f (whole servers)", e.LowerBound, want)
			}
			note := fmt.Sprintf("pool sp2 replayed with the trace's 4 processor(s) per server, as its jobs take whole servers (its profile has %d cpu_cores)", cores)
			if n := e.Trace.Notes; (cores != 4) != slices.Contains(n, note) {
				t.Errorf("notes %q; want %q only where the profile differs", n, note)
			}
			for _, p := range []Policy{AlwaysOn(), IdleTimeout(10 * time.Minute), Rota("rota")} {
				r := Run(tinyEnvFor(t, cfg, tr, ""), p, nil)
				// three servers: the first two jobs (one each) and the third (two) cannot all run at once
				if r.JobsRun != 3 || len(r.NotRun) != 0 || r.Waits[len(r.Waits)-1] == 0 {
					t.Errorf("%s: ran %d, not run %v, waits %v; want 3, none, the last job queued", r.Policy, r.JobsRun, r.NotRun, r.Waits)
				}
			}
		})
	}
}

func tinyEnvFor(t *testing.T, cfg *config.Config, tr *trace.Trace, fleet string) *Env {
	t.Helper()
	e, err := NewEnv(cfg, tr, Options{Fleet: fleet})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A fleet of no server (no pool fits any job) is an error that says why, not a table of zeros.
func TestNoServerIsAnError(t *testing.T) {
	cfg := replayConfig(t, "pools:\n  - name: cpu\n    profile: {cpu_cores: 4}\n    cost: {hourly: 1}\n")
	tr := &trace.Trace{Jobs: []trace.Job{{Line: 2, Duration: 60, Nodes: 1, CPUs: 8}}}
	for _, spec := range []string{"", "peak", "p95"} {
		_, err := NewEnv(cfg, tr, Options{Fleet: spec})
		if err == nil || !strings.Contains(err.Error(), "no pool of the config fits") || !strings.Contains(err.Error(), "8 CPUs") {
			t.Errorf("--fleet %q: %v, want an error naming the job's 8 CPUs", spec, err)
		}
	}
}

// x LB compares a policy's server-hours with the bound of the jobs it ran: three one-server
// jobs at once on a one-server fleet, two given up after ten minutes, made always-on look a
// third of the lower bound (0.33x) against the bound of all three.
func TestXLowerBoundComparesTheSameJobs(t *testing.T) {
	tr := &trace.Trace{Jobs: []trace.Job{job(1, 0, 3600, 8), job(2, 0, 3600, 8), job(3, 0, 3600, 8)}}
	e, err := NewEnv(tinyConfig(t, eager), tr, Options{Fleet: "1", MaxWait: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Policy{AlwaysOn(), IdleTimeout(10 * time.Minute), Rota("rota")} {
		t.Run(p.Name(), func(t *testing.T) {
			r := Run(e, p, nil)
			if len(r.NotRun) != 2 || r.JobsRun != 1 {
				t.Fatalf("ran %d, not run %v; want 1 and 2 given up", r.JobsRun, r.NotRun)
			}
			if r.LowerBoundHours != 1 || r.XLowerBound < 1 {
				t.Errorf("x LB %.3f against a bound of %v server-hours; want at least 1 against the bound of the one job run (1)", r.XLowerBound, r.LowerBoundHours)
			}
		})
	}
}
