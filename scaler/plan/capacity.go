package plan

import (
	"math"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// shape is what one job asks of each of its servers, normalised: every job takes at least one
// CPU, so a server with no CPU left is full. whole: the job takes each of its servers whole
// (fleet.Needs.Whole), so it fits only an empty one and leaves it full.
type shape struct {
	cpus  int
	gpus  int
	mem   uint64
	whole bool
}

func shapeOf(s config.Shape, nd fleet.Needs) shape {
	return shape{cpus: max(s.CPUs, 1), gpus: max(s.GPUs, 0), mem: uint64(s.Memory), whole: nd.Whole}
}

// jobShape is the shape of a running job, as a move places it.
func jobShape(j *fleet.Job) shape {
	return shapeOf(config.Shape{CPUs: j.CPUs, GPUs: j.GPUs, Memory: config.Bytes(max(j.Memory, 0))}, j.Needs)
}

// capacity is what a server has left for waiting work. Memory is unlimited when the pool's
// profile does not give it (config.Profile.Fits ignores memory then, and so does rota). empty:
// nothing is allocated on the server and nothing placed there yet, so a whole-server job fits.
type capacity struct {
	cpus  int
	gpus  int
	mem   uint64
	empty bool
}

func profileCapacity(pr config.Profile) capacity {
	c := capacity{cpus: pr.CPUCores, gpus: pr.GPUs, mem: math.MaxUint64, empty: true}
	if pr.Memory > 0 {
		c.mem = uint64(pr.Memory)
	}
	return c
}

// freeCapacity is what an On server has left, as far as the job manager tells. The job
// manager reports CPUs and GPUs allocated but not memory: memory is taken in proportion to the
// CPUs in use, an estimate that errs towards waking a server rather than leaving work waiting.
func freeCapacity(pr config.Profile, j fleet.JobsView) capacity {
	c := profileCapacity(pr)
	c.cpus = max(pr.CPUCores-j.CPUs, 0)
	c.gpus = max(pr.GPUs-j.GPUs, 0)
	c.empty = !j.Allocated()
	if j.Allocated() && pr.Memory > 0 && pr.CPUCores > 0 {
		c.mem = uint64(pr.Memory) / uint64(pr.CPUCores) * uint64(c.cpus)
	}
	return c
}

// holds is how many jobs of shape s fit in c.
func (c capacity) holds(s shape) int {
	if !c.mayHold(s) {
		return 0 // most servers walked past hold none: no division for them
	}
	if s.whole {
		return 1
	}
	n := c.cpus / s.cpus
	if s.gpus > 0 {
		n = min(n, c.gpus/s.gpus)
	}
	if s.mem > 0 {
		n = int(min(uint64(n), c.mem/s.mem))
	}
	return max(n, 0)
}

// take removes n jobs of shape s; a whole-server job leaves nothing.
func (c *capacity) take(s shape, n int) {
	if n <= 0 {
		return
	}
	if s.whole {
		*c = capacity{}
		return
	}
	c.empty = false
	c.cpus -= n * s.cpus
	c.gpus -= n * s.gpus
	if c.mem != math.MaxUint64 {
		c.mem -= uint64(n) * s.mem
	}
}

// union is the capacity that bounds both c and o from above, dimension by dimension.
func (c capacity) union(o capacity) capacity {
	return capacity{cpus: max(c.cpus, o.cpus), gpus: max(c.gpus, o.gpus), mem: max(c.mem, o.mem), empty: c.empty || o.empty}
}

// mayHold reports whether c, an upper bound, leaves room for one job of shape s.
func (c capacity) mayHold(s shape) bool {
	return c.cpus >= s.cpus && c.gpus >= s.gpus && c.mem >= s.mem && (c.empty || !s.whole)
}

func (c capacity) full() bool { return c.cpus < 1 || c.mem == 0 }
