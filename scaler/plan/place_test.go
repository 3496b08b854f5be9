package plan

import (
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

func offNodes(prefix, pool string, n int) []fleet.Node {
	var out []fleet.Node
	for i := range n {
		out = append(out, offNode(prefix+string(rune('a'+i)), pool))
	}
	return out
}

func inRegion(ns []fleet.Node, region string) []fleet.Node {
	for i := range ns {
		ns[i].Region = region
	}
	return ns
}

func inDept(d fleet.Demand, dept string) fleet.Demand { d.Department = dept; return d }

// TestPlacement covers how waiting work is met: capacity on or coming first, the cheapest pool
// that fits, packing, gangs, regions, quotas with borrowing and the backlog threshold.
func TestPlacement(t *testing.T) { runCases(t, placementCases()) }

func placementCases() []planCase {
	mixed := append(offNodes("c", "cpu", 3), offNodes("g", "gpu", 3)...)
	return []planCase{
		{name: "light work never wakes a gpu server", snap: withDemand(snapshot(mixed...), jobs(3, 4, 0)),
			want: map[string]string{"ca": "power_on/backlog", "ga": "skip/not_needed"}, desired: map[string]int{"cpu": 1, "gpu": 0}},
		{name: "gpu work wakes a gpu server", snap: withDemand(snapshot(mixed...), jobs(3, 4, 1)),
			want: map[string]string{"ca": "skip/not_needed", "ga": "power_on/backlog"}, desired: map[string]int{"cpu": 0, "gpu": 1}},
		{name: "cpu ceiling spills to the next pool that fits", cfg: func(c *config.Config) { m := 1; c.Pools[0].Max = &m },
			snap: withDemand(snapshot(mixed...), jobs(3, 32, 0)),
			want: map[string]string{"ca": "power_on/backlog", "cb": "skip/ceiling", "ga": "power_on/backlog", "gb": "skip/not_needed"}},
		{name: "packing: ten 8-cpu jobs need three 32-core servers", snap: withDemand(snapshot(mixed...), jobs(10, 8, 0)),
			desired: map[string]int{"cpu": 3, "gpu": 0}},
		{name: "memory counts in packing", snap: withDemand(snapshot(mixed...), fleet.Demand{Shape: config.Shape{CPUs: 1, Memory: 100 << 30}, Nodes: 1, Count: 3}),
			desired: map[string]int{"cpu": 3, "gpu": 0}},
		{name: "gang: two 3-node jobs of whole cpu servers", cfg: func(c *config.Config) { c.Policy.Backlog.QueuedJobs = 0 },
			snap: withDemand(snapshot(mixed...), fleet.Demand{Shape: config.Shape{CPUs: 32}, Nodes: 3, Count: 2}),
			// Six server-slots: one per cpu server (three), then two per gpu server, at most
			// one per job on each server.
			desired: map[string]int{"cpu": 3, "gpu": 2}},
		{name: "gang of small jobs: one slot per job per server", cfg: func(c *config.Config) { c.Policy.Backlog.QueuedJobs = 0 },
			snap:    withDemand(snapshot(mixed...), fleet.Demand{Shape: config.Shape{CPUs: 1}, Nodes: 3, Count: 1}),
			desired: map[string]int{"cpu": 3, "gpu": 0}},
		{name: "free room on an on server absorbs the work", snap: withDemand(snapshot(append(mixed, with(onNode("c9", "cpu"), busy), onNode("c8", "cpu"))...), jobs(3, 8, 0)),
			want: map[string]string{"ca": "skip/not_needed", "c8": "skip/demand_waits"}, desired: map[string]int{"cpu": 2, "gpu": 0}},
		{name: "a server woken for the floor absorbs the work", cfg: func(c *config.Config) { c.Pools[0].Min = 1 },
			snap: withDemand(snapshot(mixed...), jobs(3, 8, 0)),
			want: map[string]string{"ca": "power_on/floor", "cb": "skip/not_needed"}, desired: map[string]int{"cpu": 1, "gpu": 0}},
		{name: "a booting server absorbs the work", snap: withDemand(snapshot(append(mixed, booting(offNode("c9", "cpu")))...), jobs(3, 8, 0)),
			want: map[string]string{"ca": "skip/not_needed"}, desired: map[string]int{"cpu": 1, "gpu": 0}},
		{name: "region: work for eu wakes an eu server", snap: withDemand(snapshot(append(inRegion(offNodes("c", "cpu", 2), "us"), inRegion(offNodes("d", "cpu", 1), "eu")...)...),
			fleet.Demand{Region: "eu", Shape: config.Shape{CPUs: 32}, Nodes: 1, Count: 3, Since: t0.Add(-time.Hour)}),
			want: map[string]string{"da": "power_on/backlog", "ca": "skip/no_fit", "cb": "skip/no_fit"}},
		{name: "below the backlog threshold work still wakes its home pool", snap: withDemand(snapshot(mixed...), jobs(2, 4, 0)),
			want: map[string]string{"ca": "power_on/backlog", "cb": "skip/not_needed", "ga": "skip/not_needed"}, desired: map[string]int{"cpu": 1, "gpu": 0}},
		{name: "one job after an idle spell wakes one server at once", snap: withDemand(snapshot(mixed...), fleet.Demand{Shape: config.Shape{CPUs: 1}, Nodes: 1, Count: 1, Since: t0}),
			want: map[string]string{"ca": "power_on/backlog", "cb": "skip/not_needed", "ga": "skip/not_needed"}, desired: map[string]int{"cpu": 1, "gpu": 0}},
		{name: "backlog not waited long enough: wakes what the work needs at home", snap: withDemand(snapshot(mixed...), fleet.Demand{Shape: config.Shape{CPUs: 4}, Nodes: 1, Count: 30, Since: t0.Add(-time.Minute)}),
			want:    map[string]string{"ca": "power_on/backlog", "cc": "power_on/backlog", "ga": "skip/below_backlog"},
			desired: map[string]int{"cpu": 3, "gpu": 0}},
		{name: "below the threshold work never spills to a dearer pool", cfg: func(c *config.Config) { m := 1; c.Pools[0].Max = &m },
			snap: withDemand(snapshot(mixed...), jobs(2, 32, 0)),
			want: map[string]string{"ca": "power_on/backlog", "cb": "skip/ceiling", "ga": "skip/below_backlog"}, desired: map[string]int{"cpu": 1, "gpu": 0}},
		{name: "schedule with backlog 0 wakes for one job", policy: "  schedules: [{name: day, start: '08:00', end: '18:00', backlog_queued_jobs: 0}]",
			snap: withDemand(snapshot(mixed...), jobs(1, 4, 0)), want: map[string]string{"ca": "power_on/backlog"}},
		// the schedule's threshold replaces the policy's, a higher one too: by day the work
		// keeps to its home pool however much of it waits
		{name: "a schedule's higher threshold replaces the policy's",
			policy: "  schedules: [{name: day, start: '08:00', end: '18:00', backlog_queued_jobs: 100}]",
			cfg:    func(c *config.Config) { m := 1; c.Pools[0].Max = &m; c.Policy.Backlog.QueuedJobs = 0 },
			snap:   withDemand(snapshot(mixed...), jobs(5, 32, 0)),
			want:   map[string]string{"ca": "power_on/backlog", "cb": "skip/ceiling", "ga": "skip/below_backlog"}, desired: map[string]int{"cpu": 1, "gpu": 0}},
		{name: "threshold counts jobs across departments of one class", snap: withDemand(snapshot(mixed...), inDept(jobs(2, 4, 0), "a"), inDept(jobs(1, 4, 0), "b")),
			want: map[string]string{"ca": "power_on/backlog"}},
		{name: "quota without borrowing", cfg: func(c *config.Config) {
			c.Policy.Quotas = []config.Quota{{Department: "a", Pool: "cpu", MaxServers: 1}}
		}, snap: withDemand(snapshot(offNodes("c", "cpu", 3)...), inDept(jobs(3, 32, 0), "a")),
			want: map[string]string{"ca": "power_on/backlog", "cb": "skip/quota"}},
		{name: "quota counts servers labelled with the department", cfg: func(c *config.Config) {
			c.Policy.Quotas = []config.Quota{{Department: "a", Pool: "cpu", MaxServers: 1}}
		}, snap: withDemand(snapshot(append(offNodes("c", "cpu", 2), with(onNode("c9", "cpu"), func(n *fleet.Node) { busy(n); n.Department = "a" }))...), inDept(jobs(3, 32, 0), "a")),
			want: map[string]string{"ca": "skip/quota"}},
		{name: "a pool the quota closes is not the work's home", cfg: func(c *config.Config) {
			c.Policy.Quotas = []config.Quota{{Department: "b", Pool: "cpu", MaxServers: 0}}
		}, snap: withDemand(snapshot(mixed...), inDept(jobs(1, 4, 0), "b")),
			want: map[string]string{"ca": "skip/quota", "ga": "power_on/backlog"}},
		{name: "quota counts servers its jobs run on, whoever's they are", cfg: func(c *config.Config) {
			c.Policy.Quotas = []config.Quota{{Department: "a", Pool: "cpu", MaxServers: 1}}
		}, snap: withDemand(snapshot(append(offNodes("c", "cpu", 2), running(onNode("c9", "cpu"), ofDept(runningJob("1", 32, 0), "a")))...), inDept(jobs(3, 32, 0), "a")),
			want: map[string]string{"ca": "skip/quota", "cb": "skip/quota"}},
		{name: "servers coming up for a department count toward its quota", cfg: func(c *config.Config) {
			c.Policy.Quotas = []config.Quota{{Department: "a", Pool: "cpu", MaxServers: 2}}
		}, snap: withDemand(snapshot(append(offNodes("c", "cpu", 3), booting(offNode("c8", "cpu")),
			with(offNode("c9", "cpu"), func(n *fleet.Node) { n.State = fleet.StatePoweringOn }))...), inDept(jobs(10, 32, 0), "a")),
			want: map[string]string{"ca": "skip/quota", "cb": "skip/quota"}, desired: map[string]int{"cpu": 2, "gpu": 0}},
		{name: "borrowing takes only what others leave", cfg: func(c *config.Config) {
			m := 2
			c.Pools[0].Max = &m
			c.Policy.Quotas = []config.Quota{{Department: "a", Pool: "cpu", MaxServers: 0, Borrow: true}}
		}, snap: withDemand(snapshot(offNodes("c", "cpu", 3)...), inDept(jobs(3, 32, 0), "a"), inDept(fleet.Demand{Shape: config.Shape{CPUs: 32}, Nodes: 1, Count: 3, Since: t0.Add(-time.Hour)}, "b")),
			want:    map[string]string{"ca": "power_on/backlog", "cb": "power_on/backlog", "cc": "skip/ceiling"},
			desired: map[string]int{"cpu": 2, "gpu": 0}},
		{name: "borrowing uses room nobody else needs", cfg: func(c *config.Config) {
			c.Policy.Quotas = []config.Quota{{Department: "a", Pool: "cpu", MaxServers: 1, Borrow: true}}
		}, snap: withDemand(snapshot(offNodes("c", "cpu", 3)...), inDept(jobs(3, 32, 0), "a")),
			desired: map[string]int{"cpu": 3, "gpu": 0}},
		{name: "wake order: fewest cycles, then off longest, then name", snap: withDemand(snapshot(
			with(offNode("c1", "cpu"), func(n *fleet.Node) { n.CyclesToday = 2 }),
			with(offNode("c2", "cpu"), func(n *fleet.Node) { n.LastOff = t0.Add(-time.Hour) }),
			with(offNode("c3", "cpu"), func(n *fleet.Node) { n.LastOff = t0.Add(-3 * time.Hour) }),
			with(offNode("c4", "cpu"), func(n *fleet.Node) { n.LastOff = t0.Add(-3 * time.Hour) })), jobs(3, 32, 0)),
			want: map[string]string{"c3": "power_on/backlog", "c4": "power_on/backlog", "c2": "power_on/backlog", "c1": "skip/not_needed"}},
		{name: "work that fits no pool wakes nothing", snap: withDemand(snapshot(mixed...), jobs(30, 128, 0)),
			desired: map[string]int{"cpu": 0, "gpu": 0}},
	}
}

// TestOwnerTakesItsServerFirst: a department's own server, coming up or on with room, is its
// work's (of the pool it is home to) before a borrower's, whatever order their work sorts in;
// the borrower takes what is left, or borrows elsewhere.
func TestOwnerTakesItsServerFirst(t *testing.T) {
	var cases []planCase
	for _, c := range []struct{ owner, borrower string }{{"a", "b"}, {"z", "b"}} {
		quotas := func(cf *config.Config) {
			cf.Policy.Quotas = []config.Quota{{Department: c.owner, Pool: "cpu", MaxServers: 1}, {Department: c.borrower, Pool: "cpu", MaxServers: 0, Borrow: true}}
		}
		own := func(n *fleet.Node) { n.Department = c.owner }
		demand := []fleet.Demand{inDept(jobs(1, 32, 0), c.borrower), inDept(jobs(1, 32, 0), c.owner)}
		cases = append(cases,
			planCase{name: "booting, owner " + c.owner, cfg: quotas,
				snap: withDemand(snapshot(with(booting(offNode("c1", "cpu")), own), offNode("c2", "cpu"), offNode("c3", "cpu")), demand...),
				want: map[string]string{"c2": "power_on/backlog", "c3": "skip/not_needed"}, desired: map[string]int{"cpu": 2, "gpu": 0}},
			planCase{name: "on with room, owner " + c.owner, cfg: quotas,
				snap: withDemand(snapshot(with(onNode("c1", "cpu"), own), offNode("c2", "cpu"), offNode("c3", "cpu")), demand...),
				want: map[string]string{"c1": "skip/demand_waits", "c2": "power_on/backlog", "c3": "skip/not_needed"}, desired: map[string]int{"cpu": 2, "gpu": 0}},
		)
	}
	// Light work is owed no room on its department's GPU server before others' GPU work: its
	// home is the CPU pool, where it wakes a server rather than send the GPU work to wake one.
	cases = append(cases, planCase{name: "light work of a gpu server's owner leaves its room to gpu work",
		cfg: func(cf *config.Config) {
			cf.Policy.Quotas = []config.Quota{{Department: "z", Pool: "gpu", MaxServers: 1}, {Department: "b", Pool: "gpu", MaxServers: 0, Borrow: true}}
		},
		snap: withDemand(snapshot(running(with(onNode("g1", "gpu"), func(n *fleet.Node) { n.Department = "z" }), ofDept(runningJob("1", 8, 0), "z")),
			offNode("g2", "gpu"), offNode("c1", "cpu"), offNode("c2", "cpu")),
			inDept(jobs(1, 16, 8), "b"), inDept(jobs(2, 24, 0), "z")),
		want: map[string]string{"g2": "skip/not_needed", "c1": "power_on/backlog", "c2": "skip/not_needed"}})
	runCases(t, cases)
}

// TestWorkWakesServersNobodyElseOwns: of a pool's off servers it may use, a department's work
// wakes its own and unlabelled ones before a server labelled with another department (wear
// order within each), so a borrower never takes a lender's server while capacity nobody else
// owns is off; work without a department takes every labelled server as another's. Another's
// server still wakes when nothing else is left: work is never starved. A server being drained
// is resumed by the same rule.
func TestWorkWakesServersNobodyElseOwns(t *testing.T) {
	quotas := func(c *config.Config) {
		c.Policy.Quotas = []config.Quota{{Department: "a", Pool: "cpu", MaxServers: 1}, {Department: "b", Pool: "cpu", MaxServers: 0, Borrow: true}}
	}
	// off longest: first in wear order, so the lender's server is the one wear picks.
	of := func(dept string, hours int) func(*fleet.Node) {
		return func(n *fleet.Node) { n.Department, n.LastOff = dept, t0.Add(-time.Duration(hours)*time.Hour) }
	}
	// failed, its backoff over: tried again after every healthy server.
	failed := func(n *fleet.Node) { n.State, n.Failures, n.RetryAfter = fleet.StateFailed, 1, t0.Add(-time.Minute) }
	one := jobs(1, 32, 0)
	runCases(t, []planCase{
		{name: "a borrower wakes an unlabelled server before the lender's", cfg: quotas,
			snap: withDemand(snapshot(with(offNode("c1", "cpu"), of("a", 5)), with(offNode("c2", "cpu"), of("", 1))), inDept(one, "b")),
			want: map[string]string{"c1": "skip/not_needed", "c2": "power_on/backlog"}},
		{name: "a borrower wakes its own server before the lender's", cfg: quotas,
			snap: withDemand(snapshot(with(offNode("c1", "cpu"), of("a", 5)), with(offNode("c2", "cpu"), of("b", 1))), inDept(one, "b")),
			want: map[string]string{"c1": "skip/not_needed", "c2": "power_on/backlog"}},
		{name: "its own and unlabelled servers by wear", cfg: quotas,
			snap: withDemand(snapshot(with(offNode("c1", "cpu"), of("a", 5)), with(offNode("c2", "cpu"), of("b", 1)), with(offNode("c3", "cpu"), of("", 3))), inDept(one, "b")),
			want: map[string]string{"c1": "skip/not_needed", "c2": "skip/not_needed", "c3": "power_on/backlog"}},
		{name: "the lender's server when nothing else is off", cfg: quotas,
			snap: withDemand(snapshot(with(offNode("c1", "cpu"), of("a", 5)), with(onNode("c2", "cpu"), busy)), inDept(one, "b")),
			want: map[string]string{"c1": "power_on/backlog"}},
		// Whose a server is never makes rota try a failed one again while a healthy one is off.
		{name: "the lender's server before an unlabelled one that failed", cfg: quotas,
			snap: withDemand(snapshot(with(offNode("c1", "cpu"), of("a", 5)), with(with(offNode("c2", "cpu"), of("", 1)), failed)), inDept(one, "b")),
			want: map[string]string{"c1": "power_on/backlog", "c2": "skip/not_needed"}},
		{name: "an unlabelled failed server before the lender's failed one", cfg: quotas,
			snap: withDemand(snapshot(with(with(offNode("c1", "cpu"), of("a", 5)), failed), with(with(offNode("c2", "cpu"), of("", 1)), failed)), inDept(one, "b")),
			want: map[string]string{"c1": "skip/not_needed", "c2": "power_on/retry"}},
		{name: "work without a department wakes an unlabelled server first", cfg: quotas,
			snap: withDemand(snapshot(with(offNode("c1", "cpu"), of("a", 5)), with(offNode("c2", "cpu"), of("", 1))), one),
			want: map[string]string{"c1": "skip/not_needed", "c2": "power_on/backlog"}},
		{name: "without quotas too", snap: withDemand(snapshot(with(offNode("c1", "cpu"), of("a", 5)), with(offNode("c2", "cpu"), of("", 1))), inDept(one, "b")),
			want: map[string]string{"c1": "skip/not_needed", "c2": "power_on/backlog"}},
		{name: "the servers a job may use first, then whose they are", cfg: quotas,
			snap: withDemand(snapshot(with(offNode("c1", "cpu"), of("a", 5)), with(offNode("c2", "cpu"), of("", 4)), with(offNode("c3", "cpu"), of("", 1))),
				inDept(fleet.Demand{Shape: config.Shape{CPUs: 32}, Nodes: 1, Count: 1, Since: t0, Needs: fleet.Needs{Exclude: "c2"}}, "b")),
			want: map[string]string{"c1": "skip/not_needed", "c2": "skip/not_needed", "c3": "power_on/backlog"}},
		{name: "in the job's region", cfg: quotas,
			snap: withDemand(snapshot(append(inRegion([]fleet.Node{with(offNode("c1", "cpu"), of("a", 5)), with(offNode("c2", "cpu"), of("", 1))}, "eu"),
				inRegion([]fleet.Node{with(offNode("c3", "cpu"), of("", 6))}, "us")...)...),
				inDept(fleet.Demand{Region: "eu", Shape: config.Shape{CPUs: 32}, Nodes: 1, Count: 1, Since: t0}, "b")),
			want: map[string]string{"c1": "skip/not_needed", "c2": "power_on/backlog", "c3": "skip/not_needed"}},
		{name: "a borrower resumes an unlabelled server before the lender's", cfg: quotas,
			snap: withDemand(snapshot(with(drainingNode("c1", "cpu"), of("a", 0)), drainingNode("c2", "cpu")), inDept(one, "b")),
			want: map[string]string{"c1": "power_off/drained", "c2": "resume/demand_return"}},
		{name: "the lender's server being drained before waking one", cfg: quotas,
			snap: withDemand(snapshot(with(drainingNode("c1", "cpu"), of("a", 0)), offNode("c2", "cpu")), inDept(one, "b")),
			want: map[string]string{"c1": "resume/demand_return", "c2": "skip/not_needed"}},
	})
}
