package plan

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

type planCase struct {
	name   string
	policy string // extra YAML under policy:
	cfg    func(*config.Config)
	snap   fleet.Snapshot
	// want is the outcome of the nodes named (others are not checked).
	want map[string]string
	// desired, when set, is Decision.Desired.
	desired map[string]int
}

func runCases(t *testing.T, cases []planCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			nCPU, nGPU := 0, 0
			for _, n := range c.snap.Nodes {
				switch n.Pool {
				case "cpu":
					nCPU++
				case "gpu":
					nGPU++
				}
			}
			cfg := newConfig(t, c.policy, nCPU, nGPU)
			if c.cfg != nil {
				c.cfg(cfg)
			}
			d := Plan(c.snap, cfg, t0)
			got := outcome(d)
			for node, want := range c.want {
				if got[node] != want {
					t.Errorf("%s: got %q, want %q\n%s", node, got[node], want, describe(d))
				}
			}
			if c.desired != nil && !maps.Equal(d.Desired, c.desired) {
				t.Errorf("desired %v, want %v", d.Desired, c.desired)
			}
			checkInvariants(t, c.snap, cfg, t0, d)
		})
	}
}

func recentOn(n fleet.Node) fleet.Node {
	n.LastOn, n.IdleSince = t0.Add(-40*time.Minute), t0.Add(-40*time.Minute)
	return n
}

// TestActions covers every action reason.
func TestActions(t *testing.T) { runCases(t, actionsCases()) }

func actionsCases() []planCase {
	return []planCase{
		{name: "idle server drained", snap: snapshot(onNode("c1", "cpu")),
			want: map[string]string{"c1": "power_off/idle"}, desired: map[string]int{"cpu": 0, "gpu": 0}},
		{name: "drained empty server powered off", snap: snapshot(drainingNode("c1", "cpu")),
			want: map[string]string{"c1": "power_off/drained"}},
		{name: "backlog wakes a cpu server", snap: withDemand(snapshot(offNode("c1", "cpu"), offNode("c2", "cpu")), jobs(3, 4, 0)),
			want: map[string]string{"c1": "power_on/backlog", "c2": "skip/not_needed"}, desired: map[string]int{"cpu": 1, "gpu": 0}},
		{name: "floor powers on", cfg: func(c *config.Config) { c.Pools[0].Min = 1 }, snap: snapshot(offNode("c1", "cpu")),
			want: map[string]string{"c1": "power_on/floor"}},
		{name: "floor resumes a draining server before waking", cfg: func(c *config.Config) { c.Pools[0].Min = 1 },
			snap: snapshot(drainingNode("c1", "cpu"), offNode("c2", "cpu")),
			want: map[string]string{"c1": "resume/floor", "c2": "skip/not_needed"}},
		{name: "waiting work resumes a draining server", snap: withDemand(snapshot(drainingNode("c1", "cpu"), offNode("c2", "cpu")), jobs(3, 4, 0)),
			want: map[string]string{"c1": "resume/demand_return", "c2": "skip/not_needed"}},
		{name: "drain timed out", snap: snapshot(with(drainingNode("c1", "cpu"), func(n *fleet.Node) { n.Since = t0.Add(-31 * time.Minute); busy(n) })),
			want: map[string]string{"c1": "resume/drain_timeout"}},
		{name: "warm spare: a pool that booted servers in the last hour keeps one idle",
			cfg: func(c *config.Config) { c.Policy.Spares.MaxShare = 0.5 },
			// Four power-ons in the 1h window, boot 10m: 4 x 10m / 1h = 0.67 arrivals per
			// boot, rounded up to one spare (cap: half of the four servers).
			snap: snapshot(recentOn(onNode("c1", "cpu")), recentOn(onNode("c2", "cpu")), recentOn(onNode("c3", "cpu")), recentOn(onNode("c4", "cpu"))),
			want: map[string]string{"c1": "power_off/idle", "c2": "power_off/idle", "c3": "power_off/idle", "c4": "skip/spare"}},
		{name: "no warm spare without recent power-ons", cfg: func(c *config.Config) { c.Policy.Spares.MaxShare = 0.5 },
			snap: snapshot(onNode("c1", "cpu"), onNode("c2", "cpu")),
			want: map[string]string{"c1": "power_off/idle", "c2": "power_off/idle"}},
		{name: "failed server retried for a floor", cfg: func(c *config.Config) { c.Pools[0].Min = 1 },
			snap: snapshot(with(offNode("c1", "cpu"), func(n *fleet.Node) { n.State, n.Failures, n.RetryAfter = fleet.StateFailed, 1, t0.Add(-time.Minute) })),
			want: map[string]string{"c1": "power_on/retry"}},
	}
}

func withDemand(s fleet.Snapshot, d ...fleet.Demand) fleet.Snapshot { s.Demand = d; return s }

func withHistory(s fleet.Snapshot, h fleet.History) fleet.Snapshot { s.History = h; return s }

// TestSafetySkips covers the reasons that keep rota's hands off a server.
func TestSafetySkips(t *testing.T) { runCases(t, safetySkipsCases()) }

func safetySkipsCases() []planCase {
	paused := snapshot(onNode("c1", "cpu"), offNode("c2", "cpu"))
	paused.Paused = true
	noTelemetry := snapshot(onNode("c1", "cpu"), drainingNode("c2", "cpu"))
	noTelemetry.Telemetry = false
	noJobs := withDemand(snapshot(onNode("c1", "cpu"), drainingNode("c2", "cpu"), offNode("c3", "cpu")), jobs(10, 1, 0))
	noJobs.JobsKnown = false
	return []planCase{
		{name: "paused: nothing, not even the floor", cfg: func(c *config.Config) { c.Pools[0].Min = 2 }, snap: paused,
			want: map[string]string{"c1": "skip/paused", "c2": "skip/paused"}, desired: map[string]int{"cpu": 1, "gpu": 0}},
		{name: "pinned", snap: snapshot(with(onNode("c1", "cpu"), func(n *fleet.Node) { n.Pinned = true })),
			want: map[string]string{"c1": "skip/pinned"}},
		{name: "maintenance", cfg: func(c *config.Config) { c.Pools[0].Min = 1 },
			snap: snapshot(with(offNode("c1", "cpu"), func(n *fleet.Node) { n.Maintenance = true })),
			want: map[string]string{"c1": "skip/maintenance"}},
		{name: "power unknown: no drain, no power-on, no power-off", cfg: func(c *config.Config) { c.Pools[0].Min = 1 },
			snap: snapshot(
				with(onNode("c1", "cpu"), func(n *fleet.Node) { n.Power = bmc.StateUnknown }),
				with(offNode("c2", "cpu"), func(n *fleet.Node) { n.Power = bmc.StateTransitioning }),
				with(drainingNode("c3", "cpu"), func(n *fleet.Node) { n.Power = bmc.StateUnknown }),
				with(offNode("c4", "cpu"), func(n *fleet.Node) { n.State = fleet.StateUnknown })),
			want: map[string]string{"c1": "skip/power_unknown", "c2": "skip/power_unknown", "c3": "skip/power_unknown", "c4": "skip/power_unknown"}},
		{name: "in flight", snap: snapshot(booting(offNode("c1", "cpu"))),
			want: map[string]string{"c1": "skip/in_flight"}},
		{name: "allocated, on and draining", snap: snapshot(with(onNode("c1", "cpu"), busy), with(drainingNode("c2", "cpu"), busy)),
			want: map[string]string{"c1": "skip/allocated", "c2": "skip/allocated"}},
		// CPUs or GPUs held with no job counted (a reservation, an allocation the adapter
		// cannot name) are allocated too: no drain, no power-off.
		{name: "cpus or gpus allocated with no counted job", snap: snapshot(
			with(onNode("c1", "cpu"), func(n *fleet.Node) { n.Jobs.CPUs = 8 }),
			with(drainingNode("c2", "cpu"), func(n *fleet.Node) { n.Jobs.GPUs = 1 })),
			want: map[string]string{"c1": "skip/allocated", "c2": "skip/allocated"}},
		{name: "busy by telemetry though nothing allocated", snap: snapshot(
			with(onNode("c1", "cpu"), func(n *fleet.Node) { n.Telemetry.CPUMax = 0.5 }),
			with(onNode("c2", "cpu"), func(n *fleet.Node) { n.Telemetry.GPUProcesses = 1 })),
			want: map[string]string{"c1": "skip/busy", "c2": "skip/busy"}},
		{name: "prometheus down: nothing idle, nothing powered off", snap: noTelemetry,
			want: map[string]string{"c1": "skip/no_telemetry", "c2": "skip/no_telemetry"}},
		{name: "stale or absent series", snap: snapshot(
			with(onNode("c1", "cpu"), func(n *fleet.Node) { n.Telemetry.LastSample = t0.Add(-3 * time.Minute) }),
			with(onNode("c2", "cpu"), func(n *fleet.Node) { n.Telemetry.Present = false })),
			want: map[string]string{"c1": "skip/no_telemetry", "c2": "skip/no_telemetry"}},
		// promfacts holds a GPU server's readings against the GPUs its pool declares: a server
		// whose CPU idles with no GPU readings is not Present, and never idle.
		{name: "gpu server short of the gpus its pool declares", snap: snapshot(
			with(onNode("g1", "gpu"), func(n *fleet.Node) {
				n.Telemetry.Present, n.Telemetry.Missing = false, "0 of the 8 GPUs its pool declares report readings"
			})),
			want: map[string]string{"g1": "skip/no_telemetry"}},
		{name: "job manager unread: no drain, power-off, resume or wake for work", snap: noJobs,
			want: map[string]string{"c1": "skip/jobs_unknown", "c2": "skip/jobs_unknown", "c3": "skip/not_needed"}},
		{name: "job manager unread: floors still hold", cfg: func(c *config.Config) { c.Pools[0].Min = 2 }, snap: noJobs,
			want: map[string]string{"c3": "power_on/floor", "c2": "skip/jobs_unknown"}},
		{name: "server unknown to the job manager", snap: snapshot(with(onNode("c1", "cpu"), func(n *fleet.Node) { n.Jobs.Known = false })),
			want: map[string]string{"c1": "skip/jobs_unknown"}},
		{name: "drained by a person: never resumed nor powered off", snap: snapshot(
			with(onNode("c1", "cpu"), func(n *fleet.Node) { n.Jobs.Drained = true }),
			with(drainingNode("c2", "cpu"), func(n *fleet.Node) { n.Jobs.DrainedByRota = false; n.Since = t0.Add(-time.Hour) })),
			want: map[string]string{"c1": "skip/drained_by_person", "c2": "skip/drained_by_person"}},
		{name: "drain not taken yet", snap: snapshot(with(drainingNode("c1", "cpu"), func(n *fleet.Node) { n.Jobs.Drained, n.Jobs.DrainedByRota = false, false })),
			want: map[string]string{"c1": "skip/in_flight"}},
		{name: "pool not in the config", snap: snapshot(onNode("z1", "tpu")),
			want: map[string]string{"z1": "skip/unknown_pool"}},
		{name: "no job manager (adapter none): idleness on telemetry alone",
			snap: func() fleet.Snapshot {
				s := snapshot(
					with(onNode("c1", "cpu"), func(n *fleet.Node) { n.Jobs = fleet.JobsView{} }),
					with(onNode("c2", "cpu"), func(n *fleet.Node) { n.Jobs = fleet.JobsView{}; n.Telemetry.CPUMax = 0.6 }),
					with(drainingNode("c3", "cpu"), func(n *fleet.Node) { n.Jobs = fleet.JobsView{} }),
					with(drainingNode("c4", "cpu"), func(n *fleet.Node) { n.Jobs = fleet.JobsView{}; n.Telemetry.CPUMax = 0.6 }))
				s.JobsKnown, s.NoJobManager = false, true
				return s
			}(),
			want: map[string]string{"c1": "drain/idle", "c2": "skip/busy", "c3": "power_off/drained", "c4": "skip/busy"}},
	}
}

// TestEveryReasonHasACase: the table tests above name at least one case for every reason of
// the bounded set.
func TestEveryReasonHasACase(t *testing.T) {
	covered := map[fleet.Reason]bool{}
	for _, cases := range [][]planCase{actionsCases(), safetySkipsCases(), capsCases(), placementCases(), moveCases(), breakEvenCases(), classesCases()} {
		for _, c := range cases {
			for _, w := range c.want {
				covered[fleet.Reason(w[strings.Index(w, "/")+1:])] = true
			}
		}
	}
	for r := range reasons {
		if !covered[r] {
			t.Errorf("no table case expects reason %q", r)
		}
	}
}
