package exporter

import (
	"sort"
	"time"
)

// cpuHotplugIdleDrop is how far back, in seconds, a CPU's idle counter must step for the CPU to
// count as unplugged and plugged back (its counters restarted), as node_exporter decides.
const cpuHotplugIdleDrop = 3.0

// maxIdleGain is the most idle and iowait time, together, one CPU can gain between two reads
// elapsed apart: the time between them, plus a tenth and a second because the kernel's counters
// are taken during each read, a little after the clock is.
func maxIdleGain(elapsed time.Duration) float64 { return elapsed.Seconds()*1.1 + 1 }

// cpuModeNames are the modes reported, in /proc/stat's order. Guest and guest_nice are left
// out: the kernel already counts them inside user and nice, so summing every mode stays the
// CPU's total time.
var cpuModeNames = [cpuModeCount]string{"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"}

// Indexes into cpuValues, and how many modes there are.
const (
	cpuIdle      = 3
	cpuIowait    = 4
	cpuModeCount = 8
)

// cpuValues is one CPU's seconds in each mode, indexed as cpuModeNames.
type cpuValues [cpuModeCount]float64

// idleMode reports whether a mode counts as idle time in the utilisation the rules compute
// (1 - (idle + iowait) / all).
func idleMode(m int) bool { return m == cpuIdle || m == cpuIowait }

// cpuCounter is one logical CPU's published counters and the raw values they move from.
type cpuCounter struct {
	published cpuValues // what its series report; never decreases
	ref       cpuValues // per mode, the raw value the next increment is measured from
	online    bool      // in the last read's per-CPU lines
}

// cpuCounters turns successive /proc/stat readings into counters that never go backwards.
//
// The kernel's counters can: iowait may decrease (proc_stat(5)), idle steps back on CPU
// hotplug, and in some VMs any mode may step back a little.
// Prometheus reads any drop as a counter reset and rate() then adds the whole counter as new
// time: an iowait that drops by 0.01 s on a busy server becomes days of idle time in one
// window, and the server reads idle. So each CPU's raw values are turned into increments, and
// only increments are published, per CPU and, summed over CPUs, in the default series:
//
//   - idle and iowait grow only past their highest raw value yet (node_exporter's rule): a step
//     back is held until the counter climbs past it again, so no time is counted twice as idle
//     and the CPU can only read busier than it is;
//   - every other mode counts each rise from its last raw value and ignores a drop, so busy time
//     is never lost to a step back (holding it, as node_exporter does, would make a busy CPU
//     read idle until the counter caught up);
//   - idle and iowait together grow by at most maxIdleGain of the time between the reads: a
//     CPU whose idle time jumps further (an accounting glitch, a VM's counters after a
//     migration) has the jump taken into its baseline, never published, since one such jump
//     would make every window holding it read idle; its other modes still count;
//   - an idle counter that steps back by cpuHotplugIdleDrop or more is a CPU unplugged and
//     plugged back, whose counters restarted; so is a CPU that reappears after missing from a
//     read. Its raw baseline is reset and that interval counts no time in any mode. The series
//     themselves are not reset: a published drop is a counter reset to Prometheus, which would
//     add the CPU's whole new counters in one window, as idle time too, and a busy CPU would
//     read idle.
//
// The summed series start, at the first read, from /proc/stat's cpu line, and grow by the
// CPUs' increments. A CPU first seen after the first read (brought online later) adds only what
// it does from then on, never its whole counters. Not safe for concurrent use.
type cpuCounters struct {
	started bool
	at      time.Time // when the last read was taken
	total   cpuValues
	cpus    map[int64]*cpuCounter
}

// update takes one read of /proc/stat, taken at at: the cpu line (total) and the per-CPU lines
// (cpus).
func (c *cpuCounters) update(total cpuValues, cpus map[int64]cpuValues, at time.Time) {
	if !c.started {
		c.started = true
		c.total = total
		c.cpus = map[int64]*cpuCounter{}
		c.at = at
	}
	maxIdle := maxIdleGain(at.Sub(c.at))
	c.at = at
	// In one order, so the sums come out the same however the map iterates.
	for _, id := range sortedIDs(cpus) {
		raw := cpus[id]
		cc, ok := c.cpus[id]
		switch {
		case !ok: // first seen: its series start from its raw values, the sums gain nothing
			c.cpus[id] = &cpuCounter{published: raw, ref: raw}
		case !cc.online, cc.ref[cpuIdle]-raw[cpuIdle] >= cpuHotplugIdleDrop:
			cc.ref = raw // back from offline, or unplugged and back: a new baseline
		default:
			c.add(cc, raw, maxIdle)
		}
	}
	for id, cc := range c.cpus {
		_, cc.online = cpus[id]
	}
}

// add counts one CPU's increments since its baseline, of idle and iowait only up to maxIdle
// seconds together.
func (c *cpuCounters) add(cc *cpuCounter, raw cpuValues, maxIdle float64) {
	var idleGain float64
	for m := range raw {
		if idleMode(m) {
			idleGain += max(0, raw[m]-cc.ref[m])
		}
	}
	for m := range raw {
		inc := raw[m] - cc.ref[m]
		if inc > 0 && (!idleMode(m) || idleGain <= maxIdle) {
			cc.published[m] += inc
			c.total[m] += inc
		}
		// Idle modes keep their highest raw value as the baseline; the others follow the raw
		// value down, so a busy mode's next rise is counted in full.
		if inc > 0 || !idleMode(m) {
			cc.ref[m] = raw[m]
		}
	}
}

// onlineCPUs returns the published counters of the CPUs in the last read, by CPU id.
func (c *cpuCounters) onlineCPUs() ([]int64, []cpuValues) {
	var ids []int64
	for id, cc := range c.cpus {
		if cc.online {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	vals := make([]cpuValues, len(ids))
	for i, id := range ids {
		vals[i] = c.cpus[id].published
	}
	return ids, vals
}

func sortedIDs[V any](m map[int64]V) []int64 {
	ids := make([]int64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}
