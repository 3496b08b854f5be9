package plan

import (
	"testing"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// TestCapacityUsers: a job exclusive to its user (fleet.Needs.User), running and moved
// (jobShape) or waiting, fits only a server that is empty or runs its user's work alone, and
// leaves it no room for other users' work; a bound over servers of two users (union) leaves
// room for either's.
func TestCapacityUsers(t *testing.T) {
	pr := config.Profile{CPUCores: 8}
	var p pass
	on := func(user string, only bool) capacity {
		return freeCapacity(pr, fleet.JobsView{Known: true, Jobs: 1, CPUs: 1, User: user, UserOnly: only}, p.userID(user))
	}
	alices := p.jobShape(&fleet.Job{CPUs: 1, Needs: fleet.Needs{User: "alice"}})
	plain := p.jobShape(&fleet.Job{CPUs: 1})
	placed := func(c capacity, s shape) capacity { c.take(s, 1); return c }
	for _, tc := range []struct {
		name string
		c    capacity
		s    shape
		want int
	}{
		{"alice's on an empty server", profileCapacity(pr), alices, 8},
		{"alice's beside alice's work", on("alice", false), alices, 7},
		{"alice's beside alice's exclusive work", on("alice", true), alices, 7},
		{"alice's beside bob's work", on("bob", false), alices, 0},
		{"alice's beside several users' work", on("", false), alices, 0},
		{"alice's beside bob's exclusive work", on("bob", true), alices, 0},
		{"other work beside alice's exclusive work", on("alice", true), plain, 0},
		{"other work beside alice's work", on("alice", false), plain, 7},
		{"other work where alice's was placed", placed(profileCapacity(pr), alices), plain, 0},
		{"alice's where other work was placed", placed(profileCapacity(pr), plain), alices, 0},
		{"alice's where alice's was placed", placed(profileCapacity(pr), alices), alices, 7},
		{"bob's where alice's was placed", placed(profileCapacity(pr), alices), p.jobShape(&fleet.Job{CPUs: 1, Needs: fleet.Needs{User: "bob"}}), 0},
		{"a bound over alice's and bob's servers, alice's", on("bob", false).union(on("alice", false)), alices, 7},
		{"a bound over two exclusive servers, other work", on("bob", true).union(on("alice", true)), plain, 0},
	} {
		if got := tc.c.holds(tc.s); got != tc.want {
			t.Errorf("%s: holds %d, want %d", tc.name, got, tc.want)
		}
	}
}
