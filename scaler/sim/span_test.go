package sim

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/sim/trace"
)

// wattsConfig is tinyConfig's pool drawing 1 kW a server.
const wattsConfig = "pools:\n  - name: gpu\n    profile: {cpu_cores: 96, gpus: 8}\n    cost: {watts: 1000, price_per_kwh: 0.1}\n    boot_timeout: 5m\n"

// TestOneSpanForEveryRow: every row's avoided energy and per-day figures are counted over the
// trace's span, not over its own replay. Ten servers, a job at 0 and one ten hours later that
// waits a boot under the idle timeout: counted against its own span (five minutes longer, on
// ten servers), the timeout avoided more than the lower bound, which draws the least of all.
func TestOneSpanForEveryRow(t *testing.T) {
	e := tinyEnv(t, replayConfig(t, wattsConfig), "10", job(1, 0, 3600, 8), job(2, 10*3600, 3600, 8))
	if e.Days() != 11.0/24 {
		t.Fatalf("span %v days, want 11 hours", e.Days())
	}
	rs, err := Compare(t.Context(), e, []Policy{AlwaysOn(), IdleTimeout(0), Rota("rota")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lb := rs[0]
	for _, r := range rs {
		if r.Days != e.Days() {
			t.Errorf("%s: %v days, want the trace's %v", r.Policy, r.Days, e.Days())
		}
		want := math.Max(0, 10*11-r.ServerHours) // kWh: ten 1 kW servers on for 11 hours, less what the row drew
		if math.Abs(r.AvoidedKWh-want) > 1e-9 || r.AvoidedKWh > lb.AvoidedKWh {
			t.Errorf("%s: avoided %.3f kWh, want %.3f, and no more than the lower bound's %.3f", r.Policy, r.AvoidedKWh, want, lb.AvoidedKWh)
		}
		if want := float64(r.PowerOffs) / 10 / e.Days(); math.Abs(r.CyclesPerServerDay-want) > 1e-9 {
			t.Errorf("%s: %.3f cycles a server-day, want %.3f over the trace's span", r.Policy, r.CyclesPerServerDay, want)
		}
	}
	if idle := rs[2]; idle.Waits[1] == 0 || idle.PowerOffs == 0 {
		t.Errorf("the idle timeout: waits %v, %d power-offs; want the second job to wait a boot", idle.Waits, idle.PowerOffs)
	}
}

// TestUnrunnableJobsSetNoSpan: jobs no server of the fleet can hold neither start the replay nor
// keep it going: a two-server job at 0 and another two days later, on a one-server fleet, used to
// charge always-on for the day before the one job it ran and the day after.
func TestUnrunnableJobsSetNoSpan(t *testing.T) {
	e := tinyEnv(t, replayConfig(t, wattsConfig), "1", job(1, 0, 3600, 16), job(2, 86400, 3600, 8), job(3, 2*86400, 3600, 16))
	if len(e.Unrunnable) != 2 || e.T0 != 86400 || e.End != 86400+3600 {
		t.Fatalf("unrunnable %v, span %d to %d; want two, from 86400 to 90000", e.Unrunnable, e.T0, e.End)
	}
	for _, p := range []Policy{AlwaysOn(), IdleTimeout(10 * time.Minute), Rota("rota")} {
		r := Run(e, p, nil)
		if r.JobsRun != 1 || r.ServerHours > 1+1e-9 || r.Days != 1.0/24 {
			t.Errorf("%s: ran %d in %.2f server-hours over %v days; want 1, in at most 1, over an hour", r.Policy, r.JobsRun, r.ServerHours, r.Days)
		}
	}
}

// TestJobOfNoUnitTakesACore: a generic CSV's job of gpus 0 and cpus 0 holds one core, in the
// lower bound and in placement alike: eight of them at once on servers of four cores need two
// servers (the bound was 0 and the eight shared one server).
func TestJobOfNoUnitTakesACore(t *testing.T) {
	tr, err := trace.Read(strings.NewReader("submit,duration,gpus,cpus\n"+strings.Repeat("0,3600,0,0\n", 8)), trace.CSV, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := replayConfig(t, "pools:\n  - name: cpu\n    profile: {cpu_cores: 4}\n    cost: {hourly: 1}\n    boot_timeout: 5m\n")
	if e := tinyEnvFor(t, cfg, tr, "peak"); e.LowerBound != 2 || e.Pools[0].Servers != 2 {
		t.Errorf("lower bound %v server-hours, fleet %d; want 2 and 2", e.LowerBound, e.Pools[0].Servers)
	}
	r := Run(tinyEnvFor(t, cfg, tr, "1"), AlwaysOn(), nil)
	if r.JobsRun != 8 || r.Waits[7] != 3600 {
		t.Errorf("on one server: ran %d, waits %v; want 8, four of them an hour", r.JobsRun, r.Waits)
	}
}

// A trace whose widest job needs more servers than a replay holds is refused with the job's
// line, not allocated: an SWF record of 10^8 one-processor nodes ran the replay out of memory.
func TestFleetTooLargeIsRefused(t *testing.T) {
	cfg, err := config.Parse([]byte("server: {webhook_auth_disabled: true}\npools:\n  - {name: c, profile: {cpu_cores: 1}, cost: {hourly: 1}, boot_timeout: 5m}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, fleet := range []string{"auto", "peak", "2000000"} {
		tr := &trace.Trace{Format: trace.SWF, Start: time.Unix(0, 0).UTC(), Jobs: []trace.Job{
			{Line: 3, Submit: 0, Duration: 60, Nodes: 1, CPUs: 1},
			{Line: 7, Submit: 10, Duration: 60, Nodes: 100_000_000, CPUs: 1},
		}}
		_, err := NewEnv(cfg, tr, Options{Fleet: fleet})
		if err == nil || !strings.Contains(err.Error(), "more than a replay holds") || (fleet != "2000000" && !strings.Contains(err.Error(), "line 7")) {
			t.Errorf("--fleet %s: err = %v, want the fleet refused, naming line 7", fleet, err)
		}
	}
}

// A fleet that can run none of the trace's jobs (a count given, too small for every one) is an
// error, as a fleet of no server is: its replay gave a table of zeros and exit status 0.
func TestNoRunnableJobIsAnError(t *testing.T) {
	cfg, err := config.Parse([]byte("server: {webhook_auth_disabled: true}\npools:\n  - {name: c, profile: {cpu_cores: 8}, cost: {hourly: 1}, boot_timeout: 5m}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tr := &trace.Trace{Format: trace.CSV, Start: time.Unix(0, 0).UTC(), Jobs: []trace.Job{
		{Line: 2, Submit: 0, Duration: 600, Nodes: 4, CPUs: 8},
		{Line: 3, Submit: 100, Duration: 600, Nodes: 5, CPUs: 8},
	}}
	_, err = NewEnv(cfg, tr, Options{Fleet: "3"})
	if err == nil || !strings.Contains(err.Error(), "no job of the trace can run") || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("err = %v, want an error naming line 2", err)
	}
	// One job that fits is enough for a replay.
	tr.Jobs = append(tr.Jobs, trace.Job{Line: 4, Submit: 200, Duration: 60, Nodes: 1, CPUs: 8})
	if _, err := NewEnv(cfg, tr, Options{Fleet: "3"}); err != nil {
		t.Errorf("with a job that fits: %v", err)
	}
}

// A trace whose every job the fleet can run has a run time of 0 (an SWF log's jobs of run time
// 0, a wider one left out) has a lower bound of no server-hour: its replay divided always-on's
// hours over the span by it and showed 0.000 x LB, below the bound. It is an error naming the
// first such job's line; one job of a run time makes a replay.
func TestNoServerTimeIsAnError(t *testing.T) {
	cfg := tinyConfig(t, "")
	tr := &trace.Trace{Format: trace.SWF, Start: time.Unix(0, 0).UTC(), Jobs: []trace.Job{
		{Line: 3, Submit: 0, Duration: 0, Nodes: 1, GPUs: 1},
		{Line: 4, Submit: 50, Duration: 3600, Nodes: 9, GPUs: 8}, // wider than the fleet
		{Line: 5, Submit: 10000, Duration: 0, Nodes: 1, GPUs: 1},
	}}
	_, err := NewEnv(cfg, tr, Options{Fleet: "4"})
	var row trace.LineError
	if !errors.As(err, &row) || row.Line != 3 || !strings.Contains(err.Error(), "run time of 0") {
		t.Errorf("err = %v, want an error naming line 3", err)
	}
	tr.Jobs = append(tr.Jobs, trace.Job{Line: 6, Submit: 200, Duration: 60, Nodes: 1, GPUs: 1})
	if _, err := NewEnv(cfg, tr, Options{Fleet: "4"}); err != nil {
		t.Errorf("with a job of a run time: %v", err)
	}
}

// A job whose partition no pool takes is named with its partition: "needs 1 server(s) of 0
// GPUs and 4 CPUs; the fleet has 0 that fit" read as a shape no server holds, on a fleet of
// servers of 32 cores. Where no pool lists partitions, the job's is nothing to the fleet and
// is not named.
func TestUnrunnableNamesThePartition(t *testing.T) {
	pools := func(parts string) *config.Config {
		return replayConfig(t, "pools:\n  - {name: cpu, profile: {cpu_cores: 32"+parts+"}, cost: {hourly: 1}, boot_timeout: 5m}\n")
	}
	tr := &trace.Trace{Format: trace.CSV, Start: time.Unix(0, 0).UTC(), Jobs: []trace.Job{
		{Line: 2, Submit: 0, Duration: 600, Nodes: 1, CPUs: 4, Partition: "debug"},
		{Line: 3, Submit: 0, Duration: 600, Nodes: 1, CPUs: 64, Partition: "batch"},
		{Line: 4, Submit: 0, Duration: 600, Nodes: 1, CPUs: 4, Partition: "batch"},
	}}
	e, err := NewEnv(pools(", partitions: [batch]"), tr, Options{Fleet: "2"})
	if err != nil {
		t.Fatal(err)
	}
	want := []NotRun{
		{Line: 2, Reason: `needs 1 server(s) of 0 GPUs and 4 CPUs in partition "debug"; the fleet has 0 that fit`},
		{Line: 3, Reason: `needs 1 server(s) of 0 GPUs and 64 CPUs in partition "batch"; the fleet has 0 that fit`},
	}
	if !slices.Equal(e.Unrunnable, want) {
		t.Errorf("unrunnable %+v, want %+v", e.Unrunnable, want)
	}
	if e, err = NewEnv(pools(""), tr, Options{Fleet: "2"}); err != nil || len(e.Unrunnable) != 1 || e.Unrunnable[0].Reason != "needs 1 server(s) of 0 GPUs and 64 CPUs; the fleet has 0 that fit" {
		t.Errorf("no pool listing partitions: %+v, %v", e.Unrunnable, err)
	}
}
