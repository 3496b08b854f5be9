package sim

import (
	"flag"
	"fmt"
	"hash"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/fleet"
)

var update = flag.Bool("update", false, "rewrite testdata/decisions.txt")

// recorder is a policy that hashes every action it takes, with its time, and counts the
// decisions that took one.
type recorder struct {
	Policy
	actions, acting int
	sum             hash.Hash64
}

func (r *recorder) decide(w *world) []fleet.Action {
	acts := r.Policy.decide(w)
	for _, a := range acts {
		fmt.Fprintf(r.sum, "%d %s %s %s\n", w.now, a.Kind, a.Node, a.Reason)
	}
	r.actions += len(acts)
	r.acting += int(b2i(len(acts) > 0))
	return acts
}

// TestDecisionsOnRepositoryTraces: rota's default replays the repository's ITP traces with
// the decisions recorded in testdata/decisions.txt, action by action (kind, server, reason
// and time hashed). Work that makes the replay faster must leave them as they are; a change
// of policy rewrites the file (-update) and says why in its commit.
func TestDecisionsOnRepositoryTraces(t *testing.T) {
	var got strings.Builder
	for _, c := range []string{"cluster01", "cluster05"} {
		tr, cfg := repoTrace(t, "itp/"+c+".csv")
		e, err := NewEnv(cfg, tr, Options{WatchDelay: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		r := &recorder{Policy: Rota("rota"), sum: fnv.New64a()}
		res := Run(e, r, nil)
		if res.ActingCalls != r.acting || res.ActingCalls == 0 || res.ActingCalls >= res.PlannerCalls {
			t.Errorf("%s: %d of %d planner calls acting, the recorder saw %d", c, res.ActingCalls, res.PlannerCalls, r.acting)
		}
		fmt.Fprintf(&got, "%s: %d actions, hash %016x, %.4f server-hours, p95 wait %v, mean wait %.4f s\n",
			c, r.actions, r.sum.Sum64(), res.ServerHours, res.WaitP95, res.WaitMean)
	}
	path := filepath.Join("testdata", "decisions.txt")
	if *update {
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("the replays' decisions changed:\n got %s\nwant %s", got.String(), want)
	}
}
