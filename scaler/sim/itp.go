package sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rotahq/rota/scaler/config"
)

// DefaultServerGPUs is the server size an ITP trace is split by when the config has no GPU pool.
const DefaultServerGPUs = 8

// ITPServerGPUs is how many GPUs a server holds when an ITP trace (which states no inventory)
// is split into servers: given where above zero, else the profile.gpus of the config's GPU pool,
// the largest where its GPU pools differ (a job is then spread over servers only where no server
// of the fleet holds it whole; the smaller pools still take the jobs that fit them), and
// DefaultServerGPUs where no pool has GPUs. note says what the choice left out: the pools of
// other sizes, or, for a given size, the pools whose profile differs from it ("" when nothing).
func ITPServerGPUs(cfg *config.Config, given int) (gpus int, note string) {
	sizes := map[int][]string{}
	for _, p := range cfg.Pools {
		if g := p.Profile.GPUs; g > 0 {
			sizes[g] = append(sizes[g], p.Name)
		}
	}
	if given > 0 {
		if len(sizes) == 0 || (len(sizes) == 1 && sizes[given] != nil) {
			return given, ""
		}
		return given, fmt.Sprintf("--gpus-per-node %d differs from the profile.gpus of %s: jobs are split into servers of %d GPUs all the same",
			given, poolSizes(sizes, given), given)
	}
	if len(sizes) == 0 {
		return DefaultServerGPUs, ""
	}
	largest := slices.Max(slices.Collect(maps.Keys(sizes)))
	if len(sizes) == 1 {
		return largest, ""
	}
	return largest, fmt.Sprintf("jobs split into servers of %d GPUs, the largest GPU pool's profile (%s also hold GPUs); --gpus-per-node sets another size",
		largest, poolSizes(sizes, largest))
}

// poolSizes lists the pools of every size but skip: "pool a (4 GPUs), pools b, c (16 GPUs)".
func poolSizes(sizes map[int][]string, skip int) string {
	var parts []string
	keys := slices.Sorted(maps.Keys(sizes))
	for _, g := range keys {
		if g == skip {
			continue
		}
		names := sizes[g]
		word := "pool"
		if len(names) > 1 {
			word = "pools"
		}
		parts = append(parts, fmt.Sprintf("%s %s (%d GPUs)", word, strings.Join(names, ", "), g))
	}
	return strings.Join(parts, ", ")
}
