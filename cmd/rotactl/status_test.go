package main

import (
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/api"
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
