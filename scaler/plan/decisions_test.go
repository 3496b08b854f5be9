package plan

import (
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/decisions.txt")

// TestDecisionsOnRandomFleets: Plan decides the random fleets of the property test's
// generator (a seed of its own) as recorded in testdata/decisions.txt: every action and skip
// with its reason and detail, and each pool's desired count, hashed. Work that makes the
// planner faster must leave them as they are; a change of policy rewrites the file (-update)
// and says why in its commit.
func TestDecisionsOnRandomFleets(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	g := gen{r: r, learned: histories(r, 6)}
	sum := fnv.New64a()
	actions, skips := 0, 0
	for range 2000 {
		cfg := g.config(t, 1+g.pick(12), 1+g.pick(6))
		d := Plan(g.snapshot(cfg), cfg, t0)
		fmt.Fprint(sum, describe(d))
		actions, skips = actions+len(d.Actions), skips+len(d.Skips)
	}
	got := fmt.Sprintf("2000 random fleets: %d actions, %d skips, hash %016x\n", actions, skips, sum.Sum64())
	path := filepath.Join("testdata", "decisions.txt")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the planner's decisions changed:\n got %s\nwant %s", got, want)
	}
}
