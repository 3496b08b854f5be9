package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// withClasses: batch may wait for the night window (22:00-06:00, at most 12h), web is a
// service, other work is other.
func withClasses(c *config.Config) {
	c.Classes = []config.Class{
		{Name: "batch", Partitions: []string{"batch"}, Defer: &config.Defer{Until: "night", Max: modelDuration(12 * time.Hour)}},
		{Name: "web", Partitions: []string{"web"}, Service: true},
		{Name: "other"},
	}
}

const nightAndDay = `  schedules:
    - {name: night, start: '22:00', end: '06:00', backlog_queued_jobs: 0}
    - {name: day, start: '08:00', end: '18:00', min_on_share: 0.5, protect_services: true, pools: [gpu]}`

func ofClass(d fleet.Demand, class string) fleet.Demand { d.Class = class; return d }

func waited(d fleet.Demand, for_ time.Duration) fleet.Demand { d.Since = t0.Add(-for_); return d }

func TestClasses(t *testing.T) { runCases(t, classesCases()) }

func classesCases() []planCase {
	return []planCase{
		// t0 is Monday noon: the night window is closed.
		{name: "deferrable work outside its window wakes nothing, but runs where there is room",
			policy: nightAndDay, cfg: withClasses,
			snap: withDemand(snapshot(onNode("c1", "cpu"), offNode("c2", "cpu")), ofClass(jobs(2, 32, 0), "batch")),
			want: map[string]string{"c1": "skip/demand_waits", "c2": "skip/deferred"}},
		// the forecast wants two spares (as in TestBreakEven's "forecast: a pool whose bursts
		// outgrow a boot wakes spares for them"), but the job manager would start the batch
		// job on one, and a spare woken for it would go to the next: no spare is woken
		{name: "deferrable work outside its window with no room wakes no spare it would take",
			policy: nightAndDay, cfg: func(c *config.Config) { withClasses(c); c.Policy.Spares.MaxShare = 0.5 },
			snap: withDemand(withLearned(snapshot(offNode("c1", "cpu"), offNode("c2", "cpu"), offNode("c3", "cpu"), offNode("c4", "cpu")), learned(bursts)),
				ofClass(jobs(1, 32, 0), "batch")),
			want: map[string]string{"c1": "skip/deferred", "c2": "skip/deferred", "c3": "skip/deferred", "c4": "skip/deferred"}},
		{name: "deferrable work on a warm server's room wakes no spare for it",
			policy: nightAndDay, cfg: func(c *config.Config) { withClasses(c); c.Policy.Spares.MaxShare = 0.5 },
			snap: withDemand(withLearned(snapshot(onNode("c1", "cpu"), offNode("c2", "cpu"), offNode("c3", "cpu"), offNode("c4", "cpu")), learned(bursts)),
				ofClass(jobs(1, 32, 0), "batch")),
			want: map[string]string{"c1": "skip/demand_waits", "c2": "skip/deferred", "c3": "skip/deferred", "c4": "skip/deferred"}},
		// steered like other work: the cpu pool serves it at night, cheaper than the idle gpu
		// server over its run now (scale-up.md)
		{name: "deferrable light work passes over an idle gpu server for the cpu pool",
			policy: "  schedules: [{name: night, start: '22:00', end: '06:00'}]", cfg: withClasses,
			snap: withDemand(snapshot(offNode("c1", "cpu"), onNode("g1", "gpu")), ofClass(jobs(2, 4, 0), "batch")),
			want: map[string]string{"c1": "skip/deferred", "g1": "power_off/idle"}},
		{name: "deferrable work takes no drained server back", policy: nightAndDay, cfg: withClasses,
			snap: withDemand(snapshot(drainingNode("c1", "cpu")), ofClass(jobs(1, 4, 0), "batch")),
			want: map[string]string{"c1": "power_off/drained"}},
		{name: "past its longest deferral it is served as usual", policy: nightAndDay, cfg: withClasses,
			snap: withDemand(snapshot(offNode("c1", "cpu")), waited(ofClass(jobs(1, 4, 0), "batch"), 13*time.Hour)),
			want: map[string]string{"c1": "power_on/backlog"}},
		{name: "inside its window it wakes servers", policy: "  schedules: [{name: night, start: '10:00', end: '14:00'}]", cfg: withClasses,
			snap: withDemand(snapshot(offNode("c1", "cpu")), ofClass(jobs(1, 4, 0), "batch")),
			want: map[string]string{"c1": "power_on/backlog"}},
		{name: "a protected floor counts only servers with no work", policy: nightAndDay, cfg: withClasses,
			// day window: half of gpu's two servers kept free for services; g1 runs work
			snap: snapshot(with(onNode("g1", "gpu"), busy), offNode("g2", "gpu")),
			want: map[string]string{"g1": "skip/allocated", "g2": "power_on/floor"}},
		{name: "each schedule's floor keeps its own protection",
			// day keeps half of gpu's four servers on, unprotected; services keep a quarter (one
			// server) free: g1 and g2 run work, so g3 is woken for services, and g4 stays off
			policy: "  schedules: [{name: day, start: '08:00', end: '18:00', min_on_share: 0.5, pools: [gpu]}, " +
				"{name: services, start: '08:00', end: '18:00', min_on_share: 0.25, protect_services: true, pools: [gpu]}]",
			snap: snapshot(with(onNode("g1", "gpu"), busy), with(onNode("g2", "gpu"), busy), offNode("g3", "gpu"), offNode("g4", "gpu")),
			want: map[string]string{"g3": "power_on/floor", "g4": "skip/not_needed"}, desired: map[string]int{"cpu": 0, "gpu": 3}},
		{name: "an unprotected floor counts every server on", policy: "  schedules: [{name: day, start: '08:00', end: '18:00', min_on_share: 0.5, pools: [gpu]}]",
			snap: snapshot(with(onNode("g1", "gpu"), busy), offNode("g2", "gpu")),
			want: map[string]string{"g1": "skip/allocated", "g2": "skip/not_needed"}},
	}
}

// Service work is placed before other work: with room for one job on, the service job gets
// it and the other work wakes a server.
func TestServiceFirst(t *testing.T) {
	cfg := newConfig(t, nightAndDay, 2, 0)
	withClasses(cfg)
	snap := withDemand(snapshot(onNode("c1", "cpu"), offNode("c2", "cpu")),
		ofClass(jobs(1, 32, 0), "other"), ofClass(jobs(1, 16, 0), "web"))
	d := Plan(snap, cfg, t0)
	if len(d.Actions) != 1 || d.Actions[0].Node != "c2" || !strings.Contains(d.Actions[0].Detail, "other jobs wait") {
		t.Errorf("want c2 woken for the other work:\n%s", describe(d))
	}
	checkInvariants(t, snap, cfg, t0, d)
}
