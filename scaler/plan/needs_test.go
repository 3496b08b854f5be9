package plan

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

func needing(d fleet.Demand, partition string, n fleet.Needs) fleet.Demand {
	d.Partition, d.Needs = partition, n
	return d
}

// withProfiles gives pool cpu the partition batch and pool gpu the partitions gpu and batch,
// GPU model a100, features nvlink and network ib.
func withProfiles(c *config.Config) {
	c.Pools[0].Profile.Partitions = []string{"batch"}
	c.Pools[1].Profile.Partitions = []string{"gpu", "batch"}
	c.Pools[1].Profile.GPUModel = "NVIDIA A100-SXM4-80GB"
	c.Pools[1].Profile.Features = []string{"a100", "nvlink"}
	c.Pools[1].Profile.Network = "ib"
}

// TestConstraints: rota wakes only servers whose pool offers what the job asks (partition,
// features, GPU model, node list and exclusions), and work whose data is on shared storage
// may wake the cheapest pool in any region that sees it.
func TestConstraints(t *testing.T) {
	mixed := append(offNodes("c", "cpu", 3), offNodes("g", "gpu", 3)...)
	// and one more: a copy each, or the cases' appends would share (and overwrite) one array
	and := func(n fleet.Node) []fleet.Node { return append(slices.Clip(mixed), n) }
	alice := fleet.Needs{User: "alice"}
	// runs puts one job of one cpu on a server, all its work the user's ("": several users'),
	// one of them exclusive to its user (only)
	runs := func(user string, only bool) func(*fleet.Node) {
		return func(n *fleet.Node) { n.Jobs.Jobs, n.Jobs.CPUs, n.Jobs.User, n.Jobs.UserOnly = 1, 1, user, only }
	}
	runCases(t, []planCase{
		{name: "a gpu-partition job never wakes a cpu server", cfg: withProfiles,
			snap: withDemand(snapshot(mixed...), needing(jobs(1, 1, 0), "gpu", fleet.Needs{})),
			want: map[string]string{"ca": "skip/not_needed", "ga": "power_on/backlog"}, desired: map[string]int{"cpu": 0, "gpu": 1}},
		{name: "a batch job wakes the cheap pool", cfg: withProfiles,
			snap: withDemand(snapshot(mixed...), needing(jobs(1, 1, 0), "batch", fleet.Needs{})),
			want: map[string]string{"ca": "power_on/backlog", "ga": "skip/not_needed"}},
		{name: "a job that may run in the gpu or the batch partition wakes the cheap pool",
			cfg: func(c *config.Config) {
				withProfiles(c)
				c.Pools[1].Profile.Partitions = []string{"gpu"}
			},
			snap: withDemand(snapshot(mixed...), needing(jobs(1, 1, 0), "gpu", fleet.Needs{Partitions: "gpu,batch"})),
			want: map[string]string{"ca": "power_on/backlog", "ga": "skip/not_needed"}},
		{name: "a feature only the gpu pool offers", cfg: withProfiles,
			snap: withDemand(snapshot(mixed...), needing(jobs(1, 1, 0), "batch", fleet.Needs{Features: "ib&nvlink"})),
			want: map[string]string{"ca": "skip/not_needed", "ga": "power_on/backlog"}},
		{name: "a feature no pool offers wakes nothing", cfg: withProfiles,
			snap:    withDemand(snapshot(mixed...), needing(jobs(1, 1, 0), "", fleet.Needs{Features: "h100"})),
			desired: map[string]int{"cpu": 0, "gpu": 0}},
		{name: "either feature of an OR", cfg: withProfiles,
			snap: withDemand(snapshot(mixed...), needing(jobs(1, 1, 0), "", fleet.Needs{Features: "h100|a100"})),
			want: map[string]string{"ga": "power_on/backlog"}},
		{name: "gpu type by the gres type", cfg: withProfiles,
			snap:    withDemand(snapshot(mixed...), needing(jobs(1, 1, 1), "", fleet.Needs{GPUType: "h100"})),
			desired: map[string]int{"cpu": 0, "gpu": 0}},
		{name: "node list: only the servers named", cfg: withProfiles,
			snap: withDemand(snapshot(mixed...), needing(jobs(1, 32, 0), "", fleet.Needs{Nodes: "cc"})),
			want: map[string]string{"ca": "skip/not_needed", "cc": "power_on/backlog"}},
		{name: "exclusions pass over the servers named", cfg: withProfiles,
			snap: withDemand(snapshot(mixed...), needing(jobs(1, 32, 0), "", fleet.Needs{Exclude: "ca,cb"})),
			want: map[string]string{"ca": "skip/not_needed", "cb": "skip/not_needed", "cc": "power_on/backlog"}},
		{name: "jobs alike but for their node lists each wake a server they name", cfg: withProfiles,
			snap: withDemand(snapshot(mixed...), needing(jobs(1, 32, 0), "", fleet.Needs{Nodes: "ca"}),
				needing(jobs(1, 32, 0), "", fleet.Needs{Nodes: "cc"})),
			want: map[string]string{"ca": "power_on/backlog", "cb": "skip/not_needed", "cc": "power_on/backlog"}},
		{name: "exclusions keep an on server's room for others", cfg: withProfiles,
			snap: withDemand(snapshot(and(onNode("c9", "cpu"))...), needing(jobs(1, 32, 0), "", fleet.Needs{Exclude: "c9"})),
			want: map[string]string{"ca": "power_on/backlog"}},
		{name: "data on shared storage may run in a region that sees it",
			cfg: func(c *config.Config) {
				c.Policy.Storage = []config.Storage{{Name: "lustre", Regions: []string{"eu", "us"}}}
			},
			snap: withDemand(snapshot(append(inRegion(offNodes("c", "cpu", 2), "us"), inRegion(offNodes("g", "gpu", 1), "eu")...)...),
				fleet.Demand{Region: "eu", Needs: fleet.Needs{Storage: "lustre"}, Shape: config.Shape{CPUs: 32}, Nodes: 1, Count: 1, Since: t0}),
			want: map[string]string{"ca": "power_on/backlog", "ga": "skip/not_needed"}},
		{name: "without shared storage the region holds",
			snap: withDemand(snapshot(append(inRegion(offNodes("c", "cpu", 2), "us"), inRegion(offNodes("g", "gpu", 1), "eu")...)...),
				fleet.Demand{Region: "eu", Shape: config.Shape{CPUs: 32}, Nodes: 1, Count: 1, Since: t0}),
			want: map[string]string{"ca": "skip/not_needed", "ga": "power_on/backlog"}},
		{name: "exclusive jobs take a whole server each, however little they ask", cfg: withProfiles,
			snap: withDemand(snapshot(mixed...), needing(jobs(2, 1, 0), "batch", fleet.Needs{Whole: true})),
			want: map[string]string{"ca": "power_on/backlog", "cb": "power_on/backlog", "cc": "skip/not_needed"}, desired: map[string]int{"cpu": 2, "gpu": 0}},
		{name: "an exclusive job passes over a server running other work", cfg: withProfiles,
			snap: withDemand(snapshot(and(with(onNode("c9", "cpu"), func(n *fleet.Node) { n.Jobs.Jobs, n.Jobs.CPUs = 1, 1 }))...),
				needing(jobs(1, 1, 0), "batch", fleet.Needs{Whole: true})),
			want: map[string]string{"ca": "power_on/backlog", "c9": "skip/allocated"}},
		{name: "an exclusive job takes an empty server that is on", cfg: withProfiles,
			snap: withDemand(snapshot(and(onNode("c9", "cpu"))...), needing(jobs(1, 1, 0), "batch", fleet.Needs{Whole: true})),
			want: map[string]string{"ca": "skip/not_needed", "c9": "skip/demand_waits"}},
		{name: "an exclusive job leaves an empty server no room for other work", cfg: withProfiles,
			snap: withDemand(snapshot(and(onNode("c9", "cpu"))...), needing(jobs(1, 1, 0), "batch", fleet.Needs{Whole: true}),
				needing(jobs(1, 1, 0), "batch", fleet.Needs{})),
			want: map[string]string{"ca": "power_on/backlog", "cb": "skip/not_needed", "c9": "skip/demand_waits"}},
		// --exclusive=user: alice's job shares a server with alice's work alone
		{name: "a user's exclusive job fits beside that user's work", cfg: withProfiles,
			snap: withDemand(snapshot(and(with(onNode("c9", "cpu"), runs("alice", false)))...), needing(jobs(1, 1, 0), "batch", alice)),
			want: map[string]string{"ca": "skip/not_needed", "c9": "skip/allocated"}, desired: map[string]int{"cpu": 1, "gpu": 0}},
		{name: "a user's exclusive job passes over another user's work", cfg: withProfiles,
			snap: withDemand(snapshot(and(with(onNode("c9", "cpu"), runs("bob", false)))...), needing(jobs(1, 1, 0), "batch", alice)),
			want: map[string]string{"ca": "power_on/backlog", "cb": "skip/not_needed", "c9": "skip/allocated"}},
		{name: "a user's exclusive job passes over work of several users", cfg: withProfiles,
			snap: withDemand(snapshot(and(with(onNode("c9", "cpu"), runs("", false)))...), needing(jobs(1, 1, 0), "batch", alice)),
			want: map[string]string{"ca": "power_on/backlog", "c9": "skip/allocated"}},
		{name: "a user's exclusive jobs pack onto one server", cfg: withProfiles,
			snap: withDemand(snapshot(mixed...), needing(jobs(4, 1, 0), "batch", alice)),
			want: map[string]string{"ca": "power_on/backlog", "cb": "skip/not_needed"}, desired: map[string]int{"cpu": 1, "gpu": 0}},
		{name: "two users' exclusive jobs never share a server", cfg: withProfiles,
			snap: withDemand(snapshot(mixed...), needing(jobs(1, 1, 0), "batch", alice), needing(jobs(1, 1, 0), "batch", fleet.Needs{User: "bob"})),
			want: map[string]string{"ca": "power_on/backlog", "cb": "power_on/backlog", "cc": "skip/not_needed"}},
		{name: "a user's exclusive job leaves a server no room for work of no named user", cfg: withProfiles,
			snap: withDemand(snapshot(and(onNode("c9", "cpu"))...), needing(jobs(1, 1, 0), "batch", alice), needing(jobs(1, 1, 0), "batch", fleet.Needs{})),
			want: map[string]string{"ca": "power_on/backlog", "cb": "skip/not_needed", "c9": "skip/demand_waits"}},
		{name: "a running user-exclusive job leaves its server no room for other users' work", cfg: withProfiles,
			snap: withDemand(snapshot(and(with(onNode("c9", "cpu"), runs("alice", true)))...), needing(jobs(1, 1, 0), "batch", fleet.Needs{})),
			want: map[string]string{"ca": "power_on/backlog", "c9": "skip/allocated"}},
		{name: "a running user-exclusive job has room for its user's", cfg: withProfiles,
			snap: withDemand(snapshot(and(with(onNode("c9", "cpu"), runs("alice", true)))...), needing(jobs(1, 1, 0), "batch", alice)),
			want: map[string]string{"ca": "skip/not_needed", "c9": "skip/allocated"}},
	})
}

// TestPoolsInTwoCurrencies: pools are ranked by cost in the currency rota plans in, not by
// their price numbers: 1,000 JPY an hour (6.5 USD) is the cheaper pool against 10 USD.
func TestPoolsInTwoCurrencies(t *testing.T) {
	y := strings.Replace(fmt.Sprintf(baseYAML, ""), "cost: {hourly: 1}", "cost: {hourly: 1000, currency: JPY}", 1) +
		"accounting: {currency: USD, exchange_rates: {JPY: 0.0065}}\n"
	cfg := configOf(t, y, 3, 3)
	snap := withDemand(snapshot(append(offNodes("c", "cpu", 3), offNodes("g", "gpu", 3)...)...), jobs(1, 1, 0))
	d := Plan(snap, cfg, t0)
	if got := outcome(d); got["ca"] != "power_on/backlog" || got["ga"] == "power_on/backlog" {
		t.Errorf("one small job woke ca: %q, ga: %q; want the JPY pool's server, the cheaper\n%s", got["ca"], got["ga"], describe(d))
	}
	checkInvariants(t, snap, cfg, t0, d)
}

// TestCheaperTier: light work passes over an idle GPU server and wakes a CPU server when
// that costs less over the work's expected run; it fills the GPU server when the run is too
// short to pay for a boot, or when the GPU server stays on anyway.
func TestCheaperTier(t *testing.T) {
	gpuIdle := with(onNode("g1", "gpu"), func(n *fleet.Node) {})
	limited := func(d fleet.Demand, limit time.Duration) fleet.Demand { d.TimeLimit = limit; return d }
	runCases(t, []planCase{
		{name: "long light work wakes a cpu server", snap: withDemand(snapshot(offNode("c1", "cpu"), gpuIdle), limited(jobs(2, 4, 0), 2*time.Hour)),
			want: map[string]string{"c1": "power_on/backlog", "g1": "power_off/idle"}},
		{name: "work shorter than a boot pays for fills the gpu server", snap: withDemand(snapshot(offNode("c1", "cpu"), gpuIdle), limited(jobs(2, 4, 0), time.Minute)),
			want: map[string]string{"c1": "skip/not_needed", "g1": "skip/demand_waits"}},
		{name: "a gpu server held by its floor takes the work", cfg: func(c *config.Config) { c.Pools[1].Min = 1 },
			snap: withDemand(snapshot(offNode("c1", "cpu"), gpuIdle), limited(jobs(2, 4, 0), 2*time.Hour)),
			want: map[string]string{"c1": "skip/not_needed", "g1": "skip/demand_waits"}},
		{name: "no cpu server to wake: the gpu server takes the work", snap: withDemand(snapshot(gpuIdle), limited(jobs(2, 4, 0), 2*time.Hour)),
			want: map[string]string{"g1": "skip/demand_waits"}},
		// a gang of four servers, c1 busy: waking c2 and c3 costs less than the gpu servers'
		// room, but the gang still needs two more, so the idle gpu servers take it rather than
		// being powered off (and one woken again once off, with the gang waiting a boot more)
		{name: "a gang wider than the cpu servers to wake keeps the gpu servers on",
			snap: withDemand(snapshot(with(onNode("c1", "cpu"), busy), offNode("c2", "cpu"), offNode("c3", "cpu"),
				gpuIdle, onNode("g2", "gpu"), offNode("g3", "gpu")), gang(limited(jobs(1, 4, 0), 2*time.Hour), 4)),
			want: map[string]string{"c2": "power_on/backlog", "c3": "power_on/backlog",
				"g1": "skip/demand_waits", "g2": "skip/demand_waits", "g3": "skip/not_needed"}},
		// the same past the backlog threshold: the gpu servers on take what the cpu servers
		// cannot before any gpu server is woken for it
		{name: "a gang past the backlog takes the gpu servers on before waking one",
			cfg: func(c *config.Config) { c.Policy.Backlog.QueuedJobs, c.Policy.Backlog.For = 0, 0 },
			snap: withDemand(snapshot(with(onNode("c1", "cpu"), busy), offNode("c2", "cpu"), offNode("c3", "cpu"),
				gpuIdle, onNode("g2", "gpu"), offNode("g3", "gpu")), gang(limited(jobs(1, 4, 0), 2*time.Hour), 4)),
			want: map[string]string{"c2": "power_on/backlog", "c3": "power_on/backlog",
				"g1": "skip/demand_waits", "g2": "skip/demand_waits", "g3": "skip/not_needed"}},
		// the pass after the wake: the cpu server woken for the work is booting and nothing is
		// left to wake; the work keeps to it and the gpu server goes off as steered
		{name: "steered work keeps to the cpu server coming", snap: withDemand(snapshot(booting(offNode("c1", "cpu")), gpuIdle), limited(jobs(2, 4, 0), 2*time.Hour)),
			want: map[string]string{"g1": "power_off/idle"}},
		// an empty gpu server being drained is on too: resuming it for light work keeps it on
		// for the whole run, like an idle one
		{name: "a draining gpu server is not resumed for work a cpu server can take",
			snap: withDemand(snapshot(offNode("c1", "cpu"), drainingNode("g1", "gpu")), limited(jobs(2, 4, 0), 2*time.Hour)),
			want: map[string]string{"c1": "power_on/backlog", "g1": "power_off/drained"}},
		// the floor of one gpu server is held by g1 (full): resuming g2 would keep a second
		// one on for the light work, so a cpu server is woken instead
		{name: "a draining gpu server past the floor is not resumed for light work", cfg: func(c *config.Config) { c.Pools[1].Min = 1 },
			snap: withDemand(snapshot(offNode("c1", "cpu"), with(onNode("g1", "gpu"), func(n *fleet.Node) { busy(n); n.Jobs.CPUs = 64 }), drainingNode("g2", "gpu")), limited(jobs(2, 4, 0), 2*time.Hour)),
			want: map[string]string{"c1": "power_on/backlog", "g2": "power_off/drained"}},
		// the cpu server coming is one the work excludes, and the ceiling lets none be woken:
		// nothing cheaper can take the work, so it takes the gpu server (c2 is not needed,
		// rather than held back by the ceiling)
		{name: "a cpu server coming that the work excludes steers nothing", cfg: func(c *config.Config) { one := 1; c.Pools[0].Max = &one },
			snap: withDemand(snapshot(booting(offNode("c1", "cpu")), offNode("c2", "cpu"), gpuIdle),
				needing(limited(jobs(2, 4, 0), 2*time.Hour), "", fleet.Needs{Exclude: "c1"})),
			want: map[string]string{"c2": "skip/not_needed", "g1": "skip/demand_waits"}},
		// a cpu server being drained is cheaper to keep on than the idle gpu server, with no
		// boot to wait for: it is resumed for the work and the gpu server goes off
		{name: "a cpu server being drained takes light work before an idle gpu server",
			snap: withDemand(snapshot(drainingNode("c1", "cpu"), gpuIdle), limited(jobs(2, 4, 0), 2*time.Hour)),
			want: map[string]string{"c1": "resume/demand_return", "g1": "power_off/idle"}},
		// a department past its cpu quota that may borrow: a cpu server lent costs less than
		// the gpu server's room over the run
		{name: "light work past its quota borrows a cpu server rather than keep a gpu server on",
			cfg: func(c *config.Config) {
				c.Policy.Quotas = []config.Quota{{Department: "a", Pool: "cpu", MaxServers: 0, Borrow: true}}
			},
			snap: withDemand(snapshot(offNode("c1", "cpu"), gpuIdle), inDept(limited(jobs(2, 4, 0), 2*time.Hour), "a")),
			want: map[string]string{"c1": "power_on/backlog", "g1": "power_off/idle"}},
		// the same with the one cpu server the ceiling allows needed by department b, within
		// its share: borrowing takes only what others leave, so a's work takes the gpu server
		{name: "light work past its quota takes the gpu server when nothing is left to borrow",
			cfg: func(c *config.Config) {
				one := 1
				c.Pools[0].Max = &one
				c.Policy.Quotas = []config.Quota{{Department: "a", Pool: "cpu", MaxServers: 0, Borrow: true}}
			},
			snap: withDemand(snapshot(offNode("c1", "cpu"), offNode("c2", "cpu"), gpuIdle),
				inDept(limited(jobs(2, 4, 0), 2*time.Hour), "a"), inDept(limited(jobs(8, 4, 0), 2*time.Hour), "b")),
			want: map[string]string{"c1": "power_on/backlog", "c2": "skip/ceiling", "g1": "skip/demand_waits"}},
		// a gang of two with one cpu server to wake: the gpu server being drained that it
		// passed over is resumed for the other half rather than powered off
		{name: "a gang wider than the cpu servers to wake resumes a gpu server being drained",
			snap: withDemand(snapshot(offNode("c1", "cpu"), drainingNode("g1", "gpu")), gang(limited(jobs(1, 4, 0), 2*time.Hour), 2)),
			want: map[string]string{"c1": "power_on/backlog", "g1": "resume/demand_return"}},
		// steering passes over the dear servers only for the part of the work the cpu servers
		// can take: c1 coming holds 8 of the 12 jobs, the idle g1 the other 4, and g2, being
		// drained, is not resumed for them
		{name: "the part the cpu servers cannot take goes to the gpu server on",
			snap: withDemand(snapshot(booting(offNode("c1", "cpu")), gpuIdle, drainingNode("g2", "gpu")), limited(jobs(12, 4, 0), 2*time.Hour)),
			want: map[string]string{"g1": "skip/demand_waits", "g2": "power_off/drained"}},
	})
}

func gang(d fleet.Demand, nodes int) fleet.Demand { d.Nodes = nodes; return d }

func TestParseConstraint(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want [][]string
		ok   bool
	}{
		{"a100", [][]string{{"a100"}}, true},
		{"a100&ib", [][]string{{"a100", "ib"}}, true},
		{"a100,ib", [][]string{{"a100", "ib"}}, true},
		{"a100|h100", [][]string{{"a100"}, {"h100"}}, true},
		{"(a100|h100)&ib", [][]string{{"a100", "ib"}, {"h100", "ib"}}, true},
		{"[rack1|rack2]", [][]string{{"rack1"}, {"rack2"}}, true},
		{"a100*2&ib", [][]string{{"a100", "ib"}}, true},
		{"", nil, false},
		{"a100&", nil, false},
		{"(a100", nil, false},
		{"a)b", nil, false},
	} {
		got, ok := parseConstraint(tc.in)
		if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseConstraint(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzParseConstraint: any expression a job may carry is read or refused, never a panic,
// and never more alternatives than the bound.
func FuzzParseConstraint(f *testing.F) {
	for _, s := range []string{"a100&ib", "(a|b)&(c|d)", "[r1|r2]*2", "a,b,c", "((a))", "|&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		alts, ok := parseConstraint(s)
		if ok && (len(alts) == 0 || len(alts) > maxAlternatives) {
			t.Fatalf("%q: %d alternatives", s, len(alts))
		}
	})
}
