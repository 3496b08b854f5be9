package fleet

import (
	"math"

	"github.com/rotahq/rota/scaler/config"
)

// Need is the servers each pool of cfg needs now, as the snapshot shows it: the servers with
// work allocated on them, and the servers the waiting work asks for in its cheapest pool that
// fits (each job's share of a server is its largest of CPUs, GPUs and memory over the pool's
// profile; regions are not looked at). It is what rota learns the rise of (package learn).
// Every pool of cfg has an entry; a pool the job manager could not be read for has none.
func (s *Snapshot) Need(cfg *config.Config) map[string]int {
	if !s.JobsKnown {
		return nil
	}
	busy := make(map[string]int, len(cfg.Pools))
	for i := range cfg.Pools {
		busy[cfg.Pools[i].Name] = 0
	}
	for i := range s.Nodes {
		if n := &s.Nodes[i]; n.Jobs.Allocated() {
			if _, ok := busy[n.Pool]; ok {
				busy[n.Pool]++
			}
		}
	}
	waiting := make(map[string]float64, len(cfg.Pools))
	for _, d := range s.Demand {
		pl := cheapestFit(cfg, d.Shape)
		if pl == nil || d.Count <= 0 {
			continue
		}
		waiting[pl.Name] += float64(d.Count*max(d.Nodes, 1)) * share(d.Shape, pl.Profile)
	}
	for name, w := range waiting {
		busy[name] += int(math.Ceil(w - 1e-9))
	}
	return busy
}

func cheapestFit(cfg *config.Config, s config.Shape) *config.Pool {
	var best *config.Pool
	for i := range cfg.Pools {
		pl := &cfg.Pools[i]
		if pl.Profile.Fits(s) && (best == nil || pl.Cost.PerHour() < best.Cost.PerHour()) {
			best = pl
		}
	}
	return best
}

// share is the part of one server of profile pr that a job of shape s takes: its largest.
func share(s config.Shape, pr config.Profile) float64 {
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
