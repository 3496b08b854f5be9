package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/fleet"
)

// The leader line says who leads as the answering rota sees it, and why it does not lead:
// what an operator reads when etcd is down.
func TestLeaderLine(t *testing.T) {
	since := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		ha   api.HAStatus
		want []string
	}{
		{"one rota on bbolt", api.HAStatus{Backend: "bbolt", Self: "rota", Leading: true}, []string{"rota (one rota on a bbolt file)"}},
		{"the leader answers", api.HAStatus{Backend: "etcd", Self: "rota-a", Leading: true, Since: since}, []string{"rota-a (this rota, since 2026-12-01T09:00:00Z)"}},
		{"a follower answers", api.HAStatus{Backend: "etcd", Self: "rota-b", Leader: "rota-a", LeaderURL: "https://rota-a:10091"},
			[]string{"rota-a at https://rota-a:10091; rota-b, which answered, follows"}},
		{"etcd is down", api.HAStatus{Backend: "etcd", Self: "rota-a", Problem: "stopped leading at 2026-12-01T09:00:00Z: its lease could not be renewed in time (etcd unreachable?)"},
			[]string{"none: no rota plans or acts, and the fleet stays as it is", "(rota-a: stopped leading at 2026-12-01T09:00:00Z: its lease could not be renewed"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			if err := writeStatus(&b, api.Status{HA: &c.ha}); err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(b.String(), "leader  "+w) && !strings.Contains(b.String(), w) {
					t.Errorf("status lacks %q:\n%s", w, b.String())
				}
			}
		})
	}
}

// A rota that does not lead makes no pass: its status (served from the store) claims no
// telemetry missing, no job manager unreadable and no desired count, which are the leader's
// to read; the leader's own status still does.
func TestFollowerStatusClaimsNoPassFacts(t *testing.T) {
	pools := []api.PoolStatus{{Name: "cpu", Servers: 2, Powered: 1}}
	cases := []struct {
		name      string
		ha        api.HAStatus
		want, not []string
	}{
		{"a follower answers", api.HAStatus{Backend: "etcd", Self: "rota-b", Leader: "rota-a", LeaderURL: "https://rota-a:10091"},
			[]string{"none here: this rota does not lead", "cpu   2        1        -"}, []string{"nothing is scaled", "telemetry  "}},
		{"no rota leads", api.HAStatus{Backend: "etcd", Self: "rota-a", Problem: "stopped leading"},
			[]string{"none here: this rota does not lead"}, []string{"nothing is scaled"}},
		{"the leader before its first pass", api.HAStatus{Backend: "etcd", Self: "rota-a", Leading: true},
			[]string{"none yet", "missing: nothing is scaled down", "cpu   2        1        0"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			if err := writeStatus(&b, api.Status{HA: &c.ha, Pools: pools}); err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("status lacks %q:\n%s", w, b.String())
				}
			}
			for _, w := range c.not {
				if strings.Contains(b.String(), w) {
					t.Errorf("status says %q:\n%s", w, b.String())
				}
			}
		})
	}
}

// A server with an action under way says so before the last pass's detail, in status and in
// explain.
func TestStatusShowsTheActionInFlight(t *testing.T) {
	since := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	n := api.NodeStatus{Name: "gpu01", Pool: "gpu", State: fleet.StatePoweringOn, Since: since, Reason: fleet.ReasonBacklog,
		Detail: "2 jobs wait", InFlight: &api.InFlight{Kind: fleet.PowerOn, Reason: fleet.ReasonBacklog, Since: since}}
	var b strings.Builder
	if err := writeStatus(&b, api.Status{Nodes: []api.NodeStatus{n, {Name: "cpu01", Pool: "cpu", State: fleet.StateOn}}}); err != nil {
		t.Fatal(err)
	}
	want := "in flight: power_on (backlog) since 2026-12-01T09:00:00Z; 2 jobs wait"
	if !strings.Contains(b.String(), want) || strings.Count(b.String(), "in flight") != 1 {
		t.Errorf("status lacks %q once:\n%s", want, b.String())
	}
	b.Reset()
	if err := writeExplanation(&b, api.Explanation{Node: n}); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^action +in flight: power_on \(backlog\) since 2026-12-01T09:00:00Z$`).MatchString(b.String()) {
		t.Errorf("explain lacks the action in flight:\n%s", b.String())
	}
}

// The notes given with a pin, a maintenance and a pause (who and why) are shown: in status's
// paused line and the server's detail, and in explain.
func TestStatusShowsTheNotes(t *testing.T) {
	n := api.NodeStatus{Name: "gpu01", Pool: "gpu", State: fleet.StateOn, Pinned: true, PinNote: "bob: benchmark",
		Maintenance: true, MaintenanceNote: "carol: new disks", Reason: fleet.SkipPinned, Detail: "pinned by operator"}
	var b strings.Builder
	if err := writeStatus(&b, api.Status{Paused: true, PauseNote: "dave: incident 42", Nodes: []api.NodeStatus{n, {Name: "cpu01", Pool: "cpu", State: fleet.StateOn}}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"yes (note: dave: incident 42)", "pinned by operator; pinned (note: bob: benchmark); maintenance (note: carol: new disks)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Count(b.String(), "note:") != 3 {
		t.Errorf("status shows a note for a server without one:\n%s", b.String())
	}
	b.Reset()
	if err := writeExplanation(&b, api.Explanation{Node: n}); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^hands off +pinned \(note: bob: benchmark\); maintenance \(note: carol: new disks\)$`).MatchString(b.String()) {
		t.Errorf("explain lacks the notes:\n%s", b.String())
	}
}

// A server no longer in the config is listed with its recorded state and what rota does with
// it, in no pool and at no cost; explain says the same, without the pass's facts it has none of.
func TestStatusShowsServersThatLeftTheConfig(t *testing.T) {
	since := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	note := "not in the config any more: rota gives its drain back to the job manager at the next pass, then leaves it alone"
	n := api.NodeStatus{Name: "old01", State: fleet.StateDraining, Since: since, LeftConfig: note}
	var b strings.Builder
	if err := writeStatus(&b, api.Status{Nodes: []api.NodeStatus{{Name: "cpu01", Pool: "cpu", State: fleet.StateOn, Currency: "EUR"}, n}}); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^old01 +- +draining +2026-12-01T09:00:00Z +- +no +- +- +` + regexp.QuoteMeta(note) + `$`).MatchString(b.String()) {
		t.Errorf("status lacks old01 with its note:\n%s", b.String())
	}
	b.Reset()
	if err := writeExplanation(&b, api.Explanation{Node: n}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(?m)^node +old01 \\(in no pool\\)$", "(?m)^state +draining since 2026-12-01T09:00:00Z, pinned no \\(as last recorded\\)$", "(?m)^config +" + regexp.QuoteMeta(note) + "$"} {
		if !regexp.MustCompile(want).MatchString(b.String()) {
			t.Errorf("explain lacks %s:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "telemetry") || strings.Contains(b.String(), "verdict") {
		t.Errorf("explain gives pass facts for a server no pass reads:\n%s", b.String())
	}
}
