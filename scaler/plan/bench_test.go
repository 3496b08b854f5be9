package plan

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// benchFleet is 10,000 servers in five pools of 2,000 (two CPU tiers, a big-memory tier, two
// GPU tiers) across three regions, and 100,000 waiting jobs, one Demand entry each, of mixed
// shapes, departments and regions.
func benchFleet(b testing.TB) (fleet.Snapshot, *config.Config) {
	cfg := newConfig(b, "", 0, 0)
	cfg.Policy.Quotas = []config.Quota{{Department: "d1", Pool: "gpu-a", MaxServers: 300, Borrow: true}, {Department: "d2", Pool: "cpu-s", MaxServers: 500}}
	profiles := []struct {
		name string
		pr   config.Profile
		cost float64
	}{
		{"cpu-s", config.Profile{CPUCores: 32, Memory: 128 << 30}, 1},
		{"cpu-l", config.Profile{CPUCores: 128, Memory: 512 << 30}, 3},
		{"mem", config.Profile{CPUCores: 64, Memory: 2048 << 30}, 4},
		{"gpu-a", config.Profile{CPUCores: 64, Memory: 512 << 30, GPUs: 4}, 8},
		{"gpu-b", config.Profile{CPUCores: 128, Memory: 1024 << 30, GPUs: 8}, 20},
	}
	const perPool = 2000
	cfg.Pools = nil
	r := rand.New(rand.NewPCG(42, 42))
	var snap fleet.Snapshot
	snap.Telemetry, snap.JobsKnown = true, true
	regions := []string{"eu", "us", "ap"}
	for _, p := range profiles {
		m := perPool * 9 / 10
		pl := config.Pool{Name: p.name, Profile: p.pr, Cost: config.Cost{Hourly: p.cost}, Min: perPool / 20, Max: &m, Nodes: make([]config.Node, perPool)}
		for j := range perPool {
			name := fmt.Sprintf("%s-%04d", p.name, j)
			pl.Nodes[j].Name = name
			snap.Nodes = append(snap.Nodes, benchNode(r, name, p.name, regions[j%3], p.pr))
		}
		cfg.Pools = append(cfg.Pools, pl)
	}
	shapes := []config.Shape{
		{CPUs: 1, Memory: 2 << 30}, {CPUs: 4, Memory: 8 << 30}, {CPUs: 8, Memory: 32 << 30}, {CPUs: 16, Memory: 64 << 30},
		{CPUs: 32, Memory: 120 << 30}, {CPUs: 64, Memory: 256 << 30}, {CPUs: 16, Memory: 1024 << 30},
		{CPUs: 8, GPUs: 1, Memory: 64 << 30}, {CPUs: 16, GPUs: 2, Memory: 128 << 30}, {CPUs: 32, GPUs: 4, Memory: 256 << 30},
		{CPUs: 64, GPUs: 8, Memory: 512 << 30}, {CPUs: 2, GPUs: 1, Memory: 16 << 30},
	}
	depts := []string{"", "d1", "d2", "d3", "d4"}
	nodes := []int{1, 1, 1, 1, 2, 4}
	for range 100_000 {
		snap.Demand = append(snap.Demand, fleet.Demand{
			Shape: shapes[r.IntN(len(shapes))], Department: depts[r.IntN(len(depts))],
			Region: []string{"", "eu", "us", "ap"}[r.IntN(4)], Nodes: nodes[r.IntN(len(nodes))], Count: 1,
			Since: t0.Add(-time.Duration(r.IntN(3600)) * time.Second),
		})
	}
	return snap, cfg
}

func benchNode(r *rand.Rand, name, pool, region string, pr config.Profile) fleet.Node {
	var n fleet.Node
	switch k := r.IntN(10); {
	case k < 6:
		n = onNode(name, pool)
		if r.IntN(3) > 0 {
			n.Jobs.Jobs, n.Jobs.CPUs, n.Jobs.GPUs = 1+r.IntN(4), r.IntN(pr.CPUCores+1), r.IntN(pr.GPUs+1)
			n.Telemetry.CPUMax = 0.5
		}
	case k < 9:
		n = offNode(name, pool)
	default:
		n = drainingNode(name, pool)
	}
	n.Region = region
	n.Power = map[fleet.State]bmc.State{fleet.StateOff: bmc.StateOff}[n.State]
	if n.Power == "" {
		n.Power = bmc.StateOn
	}
	return n
}

func BenchmarkPlan10kServers100kJobs(b *testing.B) {
	snap, cfg := benchFleet(b)
	var d fleet.Decision
	for b.Loop() {
		d = Plan(snap, cfg, t0)
	}
	b.StopTimer()
	if len(d.Actions)+len(d.Skips) != len(snap.Nodes) {
		b.Fatalf("%d entries for %d servers", len(d.Actions)+len(d.Skips), len(snap.Nodes))
	}
	b.ReportMetric(float64(len(d.Actions)), "actions")
}

// TestInvariantsAtScale: the benchmark's fleet, planned once, keeps every invariant too.
func TestInvariantsAtScale(t *testing.T) {
	snap, cfg := benchFleet(t)
	d := Plan(snap, cfg, t0)
	checkInvariants(t, snap, cfg, t0, d)
	if len(d.Actions) == 0 {
		t.Error("no action at scale: the fixture tests nothing")
	}
}
