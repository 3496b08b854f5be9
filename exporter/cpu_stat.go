package exporter

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// errMalformed marks a source file that is not what the kernel writes.
var errMalformed = errors.New("malformed")

// userHZ is the unit of /proc/stat's CPU times: 1/100 s on every Linux architecture
// (USER_HZ), as procfs and node_exporter assume.
const userHZ = 100

// cpuStatMinModes: the fewest times a cpu line of /proc/stat holds (user, nice, system, idle:
// Linux 2.4); later kernels add iowait, irq, softirq, steal, guest and guest_nice.
const cpuStatMinModes = 4

// parseCPUStat reads the cpu lines of /proc/stat: the summed line (cpu) and one per online CPU
// (cpuN), in seconds by mode. It is strict where procfs is lenient: a cpu line whose times are
// not all whole numbers of ticks (NaN, negative, over 2^64), that lacks idle, or that repeats a
// CPU makes the whole read fail. Read as procfs does, a line cut before idle reads idle 0: a
// CPU unplugged and plugged back (cpuCounters), whose next full line then adds its whole idle
// counter to one window and makes a busy server read idle. Columns past steal (guest and
// guest_nice, already inside user and nice, and any a later kernel adds) are not read.
func parseCPUStat(b []byte) (total cpuValues, cpus map[int64]cpuValues, err error) {
	cpus = map[int64]cpuValues{}
	for line := range strings.Lines(string(b)) {
		// Checked before splitting: the intr line holds a count per interrupt, thousands on a
		// large server.
		if !strings.HasPrefix(line, "cpu") {
			continue
		}
		f := strings.Fields(line)
		v, err := parseCPUTimes(f[1:])
		if err != nil {
			return cpuValues{}, nil, fmt.Errorf("%w: %s line: %w", errMalformed, f[0], err)
		}
		if f[0] == "cpu" {
			total = v
			continue
		}
		id, err := strconv.ParseUint(f[0][len("cpu"):], 10, 32)
		if err != nil {
			return cpuValues{}, nil, fmt.Errorf("%w: cpu line named %.32q", errMalformed, f[0])
		}
		if _, dup := cpus[int64(id)]; dup {
			return cpuValues{}, nil, fmt.Errorf("%w: %s given twice", errMalformed, f[0])
		}
		cpus[int64(id)] = v
	}
	return total, cpus, nil
}

// parseCPUTimes reads one cpu line's times, in ticks, into seconds.
func parseCPUTimes(f []string) (cpuValues, error) {
	var v cpuValues
	if len(f) < cpuStatMinModes {
		return v, fmt.Errorf("%d times, want at least %d", len(f), cpuStatMinModes)
	}
	for m := range min(len(f), cpuModeCount) {
		ticks, err := strconv.ParseUint(f[m], 10, 64)
		if err != nil {
			return v, fmt.Errorf("%s time %.32q is not a tick count", cpuModeNames[m], f[m])
		}
		v[m] = float64(ticks) / userHZ
	}
	return v, nil
}
