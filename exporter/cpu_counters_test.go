package exporter

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/clock"
)

// statDir is a procfs fixture whose stat file a test rewrites between scrapes of one collector,
// and the clock of those scrapes: each write is one scrape interval (15 s) after the last.
type statDir struct {
	t   *testing.T
	dir string
	clk *clock.Manual
}

func newStatDir(t *testing.T) *statDir {
	return &statDir{t: t, dir: t.TempDir(), clk: clock.NewManual(fixedClock())}
}

// write makes stat hold the CPUs given (by id, in seconds) and a cpu line summing them, 15 s
// after the last write.
func (d *statDir) write(cpus map[int64]cpuValues) {
	d.t.Helper()
	d.clk.Advance(15 * time.Second)
	var sum cpuValues
	for _, v := range cpus {
		for m := range v {
			sum[m] += v[m]
		}
	}
	line := func(name string, v cpuValues) string {
		ticks := make([]string, 0, cpuModeCount+2)
		for _, s := range v {
			ticks = append(ticks, fmt.Sprint(int64(math.Round(s*100))))
		}
		return name + " " + strings.Join(ticks, " ") + " 0 0\n" // guest, guest_nice
	}
	out := line("cpu ", sum)
	for _, id := range sortedIDs(cpus) {
		out += line(fmt.Sprintf("cpu%d", id), cpus[id])
	}
	out += "intr 0\nctxt 0\nbtime 1764400000\nprocesses 1\nprocs_running 1\nprocs_blocked 0\n"
	if err := os.WriteFile(filepath.Join(d.dir, "stat"), []byte(out), 0o644); err != nil {
		d.t.Fatal(err)
	}
}

// cpuAt is a CPU's counters: user, idle and iowait as given, the other modes 0.
func cpuAt(user, idle, iowait float64) cpuValues {
	var v cpuValues
	v[0], v[cpuIdle], v[cpuIowait] = user, idle, iowait
	return v
}

func summed(mode string) string { return `rota_node_cpu_seconds_total{mode="` + mode + `"}` }

func logical(cpu int, mode string) string {
	return fmt.Sprintf(`rota_node_logical_cpu_seconds_total{cpu="%d",mode=%q}`, cpu, mode)
}

// TestCPUCountersNeverGoBack: what the kernel's counters do between two scrapes, and what the
// published series do.
func TestCPUCountersNeverGoBack(t *testing.T) {
	one := func(v cpuValues) map[int64]cpuValues { return map[int64]cpuValues{0: v} }
	cases := []struct {
		name  string
		reads []map[int64]cpuValues
		want  []map[string]float64 // per read, the series to check
	}{
		{
			name:  "iowait steps back (proc_stat(5)): held, user still counts",
			reads: []map[int64]cpuValues{one(cpuAt(100, 50, 1000)), one(cpuAt(110, 52, 999.99)), one(cpuAt(120, 54, 999.98))},
			want: []map[string]float64{
				{summed("iowait"): 1000, summed("user"): 100},
				{summed("iowait"): 1000, summed("user"): 110, summed("idle"): 52},
				{summed("iowait"): 1000, summed("user"): 120, summed("idle"): 54, logical(0, "iowait"): 1000},
			},
		},
		{
			name:  "idle steps back a little (a VM): held until it climbs past",
			reads: []map[int64]cpuValues{one(cpuAt(10, 500, 0)), one(cpuAt(10, 499, 0)), one(cpuAt(10, 501, 0))},
			want:  []map[string]float64{{summed("idle"): 500}, {summed("idle"): 500}, {summed("idle"): 501}},
		},
		{
			name:  "idle jumps further than the 15 s between reads (a glitch): taken as the baseline, user still counts",
			reads: []map[int64]cpuValues{one(cpuAt(100, 500, 0)), one(cpuAt(110, 10500, 5)), one(cpuAt(120, 10502, 6))},
			want: []map[string]float64{
				{summed("idle"): 500, summed("user"): 100},
				{summed("idle"): 500, summed("iowait"): 0, summed("user"): 110},
				{summed("idle"): 502, summed("iowait"): 1, summed("user"): 120, logical(0, "idle"): 502},
			},
		},
		{
			name:  "user steps back: the drop is ignored and the next rise counted in full",
			reads: []map[int64]cpuValues{one(cpuAt(100, 0, 0)), one(cpuAt(99, 0, 0)), one(cpuAt(101, 0, 0))},
			want:  []map[string]float64{{summed("user"): 100}, {summed("user"): 100}, {summed("user"): 102}},
		},
		{
			name: "hotplug: idle back by 3 s or more is a new baseline; no time counted, nothing dropped",
			reads: []map[int64]cpuValues{
				one(cpuAt(100, 5000, 20)), one(cpuAt(130, 10, 0)), one(cpuAt(140, 12, 1)),
			},
			want: []map[string]float64{
				{summed("idle"): 5000, summed("user"): 100, summed("iowait"): 20},
				{summed("idle"): 5000, summed("user"): 100, summed("iowait"): 20, logical(0, "idle"): 5000},
				{summed("idle"): 5002, summed("user"): 110, summed("iowait"): 21, logical(0, "idle"): 5002},
			},
		},
		{
			name: "a CPU goes offline and comes back with other counters: a new baseline",
			reads: []map[int64]cpuValues{
				{0: cpuAt(10, 100, 0), 1: cpuAt(10, 100, 0)},
				{0: cpuAt(20, 100, 0)},
				{0: cpuAt(30, 100, 0), 1: cpuAt(10, 9000, 0)},
				{0: cpuAt(40, 100, 0), 1: cpuAt(15, 9001, 0)},
			},
			want: []map[string]float64{
				{summed("idle"): 200, summed("user"): 20, `rota_node_cpus{}`: 2},
				{summed("idle"): 200, summed("user"): 30, `rota_node_cpus{}`: 1},
				{summed("idle"): 200, summed("user"): 40, `rota_node_cpus{}`: 2, logical(1, "idle"): 100},
				{summed("idle"): 201, summed("user"): 55, logical(1, "idle"): 101, logical(1, "user"): 15},
			},
		},
		{
			name: "a CPU brought online after start adds only what it does from then on",
			reads: []map[int64]cpuValues{
				{0: cpuAt(10, 100, 0)},
				{0: cpuAt(20, 100, 0), 1: cpuAt(5, 80000, 300)},
				{0: cpuAt(30, 100, 0), 1: cpuAt(15, 80000, 300)},
			},
			want: []map[string]float64{
				{summed("idle"): 100, summed("user"): 10},
				{summed("idle"): 100, summed("iowait"): 0, summed("user"): 20, logical(1, "idle"): 80000},
				{summed("idle"): 100, summed("user"): 40, logical(1, "user"): 15},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newStatDir(t)
			d.write(tc.reads[0])
			u := &updater{c: NewCPUCollector(d.dir, true, d.clk.Now)}
			var prev map[string]float64
			for i, r := range tc.reads {
				d.write(r)
				got := series(t, u)
				if u.err != nil {
					t.Fatalf("read %d: %v", i+1, u.err)
				}
				for k, want := range tc.want[i] {
					if v, ok := got[k]; !ok || math.Abs(v-want) > 1e-6 {
						t.Errorf("read %d: %s = %v (present %v), want %v", i+1, k, v, ok, want)
					}
				}
				for k, was := range prev {
					if v, ok := got[k]; ok && strings.Contains(k, "_seconds_total") && v < was {
						t.Errorf("read %d: %s went back from %v to %v", i+1, k, was, v)
					}
				}
				prev = got
			}
		})
	}
}

// promIncrease is Prometheus's increase() without extrapolation: a drop is a counter reset,
// after which the whole new value counts as new.
func promIncrease(samples []float64) float64 {
	var inc float64
	for i := 1; i < len(samples); i++ {
		if d := samples[i] - samples[i-1]; d >= 0 {
			inc += d
		} else {
			inc += samples[i]
		}
	}
	return inc
}

// TestCPUBusyServerNeverReadsIdle is the rules' view of a server 80% busy on four CPUs whose
// iowait counters creep back by a tick every few scrapes (as proc_stat(5) allows), one of
// whose CPUs is unplugged and plugged back halfway and another's idle time jumps by 11 days
// once: every minute's utilisation, computed as the rules do (rate() reading a drop as a
// reset), stays at 0.8. Published as read, the iowait drops were resets adding the whole
// counter (days) to idle time: 0.0014; published as a rise, the jump made its minute read
// 0.0002.
func TestCPUBusyServerNeverReadsIdle(t *testing.T) {
	const scrapes, step = 41, 15.0 // ten minutes of 15 s scrapes
	d := newStatDir(t)
	cpus := map[int64]cpuValues{}
	for id := range int64(4) {
		cpus[id] = cpuAt(1e5, 4e5, 1e5)
	}
	d.write(cpus)
	u := &updater{c: NewCPUCollector(d.dir, false, d.clk.Now)}
	samples := map[string][]float64{}
	for i := range scrapes {
		for id, v := range cpus {
			v[0] += 0.8 * step
			v[cpuIdle] += 0.2 * step
			if i%3 == 2 {
				v[cpuIowait] -= 0.01
			}
			if id == 3 && i == scrapes/2 {
				v[cpuIdle] = 4 // unplugged and back: the kernel restarted its idle time
			}
			if id == 2 && i == scrapes/4 {
				v[cpuIdle] += 1e6 // an accounting glitch: 11 days of idle time at once
			}
			cpus[id] = v
		}
		d.write(cpus)
		got := series(t, u)
		if u.err != nil {
			t.Fatal(u.err)
		}
		for _, m := range cpuModeNames {
			samples[m] = append(samples[m], got[summed(m)])
		}
	}
	for end := 4; end < scrapes; end++ { // rate over [1m] at every scrape
		var idle, all float64
		for _, m := range cpuModeNames {
			inc := promIncrease(samples[m][end-4 : end+1])
			all += inc
			if m == "idle" || m == "iowait" {
				idle += inc
			}
		}
		if util := 1 - idle/all; util < 0.79 {
			t.Fatalf("utilisation over the minute to scrape %d = %.4f, want 0.8 (a busy server must never read idle)", end+1, util)
		}
	}
}

// FuzzCPUCounters feeds arbitrary counter values, going up, down or missing, to the counters:
// no published value ever decreases, and no interval publishes more idle or iowait time than
// the kernel's counters rose by (so a CPU never reads idler than the kernel says), nor more
// than the time between the reads.
func FuzzCPUCounters(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add([]byte("\xff\xff\x00\x00\x10\x00\x00\x00\xff\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b"))
	// Two reads of two CPUs (a presence byte, then 8 modes of 2 bytes each per CPU), CPU 0's
	// idle jumping by 655 s between them, 15 s apart.
	const read = 1 + 2*cpuModeCount*2
	jump := make([]byte, 2*read)
	jump[0], jump[read] = 3, 3
	jump[read+1+2*cpuIdle], jump[read+1+2*cpuIdle+1] = 0xff, 0xff
	f.Add(jump)
	f.Fuzz(func(t *testing.T, b []byte) {
		const cpus = 2
		var c cpuCounters
		at := fixedClock()
		var prevTotal cpuValues
		prevPub := map[int64]cpuValues{}
		prevRaw := map[int64]cpuValues{}
		for len(b) >= 1+cpus*cpuModeCount*2 {
			present, b0 := b[0], b[1:]
			raws := map[int64]cpuValues{}
			for id := range int64(cpus) {
				var v cpuValues
				for m := range v {
					v[m] = float64(binary.LittleEndian.Uint16(b0)) / 100
					b0 = b0[2:]
				}
				if id == 0 || present&(1<<id) != 0 {
					raws[id] = v
				}
			}
			b = b0
			at = at.Add(15 * time.Second)
			c.update(cpuValues{}, raws, at)
			for m := range c.total {
				if c.total[m] < prevTotal[m] {
					t.Fatalf("summed %s went back from %v to %v", cpuModeNames[m], prevTotal[m], c.total[m])
				}
			}
			var idleRise, idlePublished float64
			for _, id := range sortedIDs(c.cpus) {
				pub := c.cpus[id].published
				was, seen := prevPub[id]
				var idleGain float64
				for m := range pub {
					if seen && pub[m] < was[m] {
						t.Fatalf("cpu %d %s went back from %v to %v", id, cpuModeNames[m], was[m], pub[m])
					}
					if seen && idleMode(m) {
						idleGain += pub[m] - was[m]
					}
				}
				if idleGain > maxIdleGain(15*time.Second) {
					t.Fatalf("cpu %d published %v s of idle and iowait in 15 s", id, idleGain)
				}
				idlePublished += idleGain
				prevPub[id] = pub
			}
			for id, raw := range raws {
				if before, ok := prevRaw[id]; ok {
					for _, m := range []int{cpuIdle, cpuIowait} {
						idleRise += math.Max(0, raw[m]-before[m])
					}
				}
			}
			if idlePublished > idleRise+1e-9 {
				t.Fatalf("published %v s of idle and iowait, the kernel's counters rose by %v", idlePublished, idleRise)
			}
			prevTotal = c.total
			prevRaw = raws
		}
	})
}
