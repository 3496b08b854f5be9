package fleet

import (
	"testing"

	"github.com/rotahq/rota/scaler/config"
)

func TestNeed(t *testing.T) {
	cfg := &config.Config{Pools: []config.Pool{
		{Name: "cpu", Profile: config.Profile{CPUCores: 32, Memory: 128 << 30}, Cost: config.Cost{Hourly: 1}},
		{Name: "gpu", Profile: config.Profile{CPUCores: 64, GPUs: 8}, Cost: config.Cost{Hourly: 10}},
	}}
	busy := Node{Pool: "gpu", Jobs: JobsView{Known: true, Jobs: 1, GPUs: 2}}
	snap := Snapshot{JobsKnown: true, Nodes: []Node{busy, busy, {Pool: "gpu"}, {Pool: "cpu"}, {Pool: "tpu", Jobs: JobsView{Jobs: 1}}},
		Demand: []Demand{
			{Shape: config.Shape{CPUs: 4}, Nodes: 1, Count: 3},           // 3 x 4/32 of a server
			{Shape: config.Shape{CPUs: 1, Memory: 64 << 30}, Count: 3},   // memory: half a server each; with the above, 1.875: 2
			{Shape: config.Shape{CPUs: 8, GPUs: 4}, Nodes: 2, Count: 2},  // 4 slots of half a server: 2
			{Shape: config.Shape{CPUs: 8, GPUs: 16}, Nodes: 1, Count: 5}, // fits nowhere
			{Shape: config.Shape{CPUs: 4}, Nodes: 1, Count: 0},           // no jobs
			// --exclusive: a whole server each, however little they ask; with the above, 3.875: 4
			{Shape: config.Shape{CPUs: 1}, Needs: Needs{Whole: true}, Count: 2},
		}}
	got := snap.Need(cfg)
	if got["cpu"] != 4 || got["gpu"] != 4 || len(got) != 2 {
		t.Errorf("need %v, want cpu 4 (waiting), gpu 4 (2 busy + 2 waiting)", got)
	}
	snap.JobsKnown = false
	if got := snap.Need(cfg); got != nil {
		t.Errorf("need %v without the job manager, want none", got)
	}
}
