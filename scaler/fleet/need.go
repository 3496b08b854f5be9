package fleet

import (
	"math"

	"github.com/rotahq/rota/scaler/config"
)

// Need is the servers each pool of cfg needs now, as the snapshot shows it: the servers with
// work allocated on them, and the servers the waiting work asks for in its cheapest pool that
// fits (each job's share of a server is its largest of CPUs, GPUs and memory over the pool's
// profile, or the whole server for a job that takes it whole; regions are not looked at). It is what rota learns the rise of (package learn).
// Every pool of cfg has an entry; a pool the job manager could not be read for has none.
func (s *Snapshot) Need(cfg *config.Config) map[string]int {
	if !s.JobsKnown {
		return nil
	}
	// Counted by the pool's place in cfg (the replay asks at every planner call: no map
	// lookup per node), then named.
	var buf [8]int
	busy := buf[:0]
	if len(cfg.Pools) > len(buf) {
		busy = make([]int, 0, len(cfg.Pools))
	}
	busy = busy[:len(cfg.Pools)]
	last := -1 // nodes of one pool usually come together
	for i := range s.Nodes {
		n := &s.Nodes[i]
		if !n.Jobs.Allocated() {
			continue
		}
		if last < 0 || cfg.Pools[last].Name != n.Pool {
			if last = poolIndex(cfg, n.Pool); last < 0 {
				continue
			}
		}
		busy[last]++
	}
	var wbuf [8]float64
	waiting := wbuf[:0]
	if len(cfg.Pools) > len(wbuf) {
		waiting = make([]float64, 0, len(cfg.Pools))
	}
	waiting = waiting[:len(cfg.Pools)]
	for _, d := range s.Demand {
		p := cheapestFit(cfg, d.Shape)
		if p < 0 || d.Count <= 0 {
			continue
		}
		waiting[p] += float64(d.Count*max(d.Nodes, 1)) * share(d.Shape, d.Needs, cfg.Pools[p].Profile)
	}
	out := make(map[string]int, len(cfg.Pools))
	for p := range cfg.Pools {
		out[cfg.Pools[p].Name] = busy[p] + int(math.Ceil(waiting[p]-1e-9))
	}
	return out
}

// poolIndex is the place of the pool named name in cfg, or -1.
func poolIndex(cfg *config.Config, name string) int {
	for i := range cfg.Pools {
		if cfg.Pools[i].Name == name {
			return i
		}
	}
	return -1
}

// cheapestFit is the place in cfg of the cheapest pool whose profile fits s, or -1.
func cheapestFit(cfg *config.Config, s config.Shape) int {
	best := -1
	for i := range cfg.Pools {
		pl := &cfg.Pools[i]
		if pl.Profile.Fits(s) && (best < 0 || pl.Cost.PlanPerHour() < cfg.Pools[best].Cost.PlanPerHour()) {
			best = i
		}
	}
	return best
}

// share is the part of one server of profile pr that a job of shape s takes: its largest, or
// all of it for a job that takes its servers whole.
func share(s config.Shape, nd Needs, pr config.Profile) float64 {
	if nd.Whole {
		return 1
	}
	f := 0.0
	if pr.CPUCores > 0 {
		f = float64(max(s.CPUs, 1)) / float64(pr.CPUCores)
	}
	if pr.GPUs > 0 {
		f = max(f, float64(s.GPUs)/float64(pr.GPUs))
	}
	if pr.Memory > 0 {
		f = max(f, float64(s.Memory)/float64(pr.Memory))
	}
	return min(f, 1)
}
