package sim

import (
	"fmt"
	"strings"
	"testing"
)

// TestITPServerGPUs: an ITP trace is split into servers of the config's GPU pool (the largest
// where they differ) unless --gpus-per-node says otherwise, and a size that differs from the
// profiles is said. It was 8 whatever the profile: on 4-GPU servers, the jobs of 8 GPUs could
// not run; on 16-GPU servers, they were split over two servers without a word.
func TestITPServerGPUs(t *testing.T) {
	pool := func(name string, gpus int) string {
		return fmt.Sprintf("  - name: %s\n    profile: {cpu_cores: 96, gpus: %d}\n    cost: {hourly: 1}\n", name, gpus)
	}
	cases := []struct {
		name  string
		pools []string
		given int
		want  int
		note  string // a part of the note; "" for none
	}{
		{"one GPU pool of 4", []string{pool("a", 4)}, 0, 4, ""},
		{"one GPU pool of 16", []string{pool("a", 16)}, 0, 16, ""},
		{"no GPU pool", []string{pool("c", 0)}, 0, DefaultServerGPUs, ""},
		{"a CPU pool beside", []string{pool("c", 0), pool("a", 4)}, 0, 4, ""},
		{"two of one size", []string{pool("a", 4), pool("b", 4)}, 0, 4, ""},
		{"sizes differ: the largest", []string{pool("a", 4), pool("b", 16), pool("c", 4)}, 0, 16, "servers of 16 GPUs, the largest GPU pool's profile (pools a, c (4 GPUs) also hold GPUs)"},
		{"given as the profile", []string{pool("a", 8)}, 8, 8, ""},
		{"given against the profile", []string{pool("a", 4)}, 8, 8, "--gpus-per-node 8 differs from the profile.gpus of pool a (4 GPUs)"},
		{"given, no GPU pool", []string{pool("c", 0)}, 4, 4, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := replayConfig(t, "pools:\n"+strings.Join(c.pools, ""))
			got, note := ITPServerGPUs(cfg, c.given)
			if got != c.want || (c.note == "") != (note == "") || !strings.Contains(note, c.note) {
				t.Errorf("%d GPUs, note %q; want %d, a note with %q", got, note, c.want, c.note)
			}
		})
	}
}
