package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/sim/trace"
)

// Never is a time that never comes.
const Never = int64(math.MaxInt64)

// Options are the replay's assumptions.
type Options struct {
	// Boot overrides every pool's boot_timeout as the time from power-on to ready (0: use it).
	Boot time.Duration
	// Shutdown is the time from power-off to off (0: one minute).
	Shutdown time.Duration
	// Fleet is "auto" (or empty: the trace's machine when its header gives one, else peak),
	// "trace" (the trace's machine), "peak", "p95", a server count, or "config" (the config's
	// nodes as listed).
	Fleet string
	// MaxWait is how long a job may wait before the replay gives up on it and reports it as not
	// run (0: seven days). It guards against a policy that never starts a job (livelock).
	MaxWait time.Duration
	// WatchDelay is how long after a job arrives rota's planner is called for it (the job
	// manager's pending-work watch and the pass it starts); negative: only at evaluation
	// intervals, as a daemon with no watch.
	WatchDelay time.Duration
	// RequeueAll makes every job requeueable (rebalancing may move it), whatever the trace says.
	RequeueAll bool
	// Context, once done, stops the lower bound NewEnv computes (minutes on a large trace of
	// work several pools take), and NewEnv returns its error; nil: never.
	Context context.Context
}

// Pool is one pool as the replay sees it.
type Pool struct {
	Name     string
	GPUs     int
	CPUs     int
	PerHour  float64
	Watts    float64
	Boot     int64
	Shutdown int64
	Servers  int
	// Partitions are the partitions its servers are in (empty: any).
	Partitions []string
	// FleetWhy says how the pool was sized ("peak need 51", "p95 need 20, largest job 8").
	FleetWhy string
}

// capacity is the pool's main unit per server: GPUs where it has them, else CPU cores.
func (p *Pool) capacity() int {
	if p.GPUs > 0 {
		return p.GPUs
	}
	return p.CPUs
}

// Job is a trace job with the pools that fit it.
type Job struct {
	trace.Job
	// Pool is the cheapest pool whose profile fits the job's per-server shape (-1: none).
	Pool int
	// fitSet indexes Env.fitSets: every pool that fits it.
	fitSet int
}

// NotRun is a job the replay could not run, and why.
type NotRun struct {
	Line   int    `json:"line"`
	ID     string `json:"id,omitempty"`
	Reason string `json:"reason"`
}

// Env is one trace on one fleet, shared read-only by every policy's replay.
type Env struct {
	Config *config.Config
	Trace  *trace.Trace
	Pools  []Pool
	// Servers holds each server's pool index; names come from the config, and each server's
	// labels (its own, else its pool's) give its region and owning department, as the
	// daemon reads them: quotas give back and work wakes its own servers first in a replay too.
	Servers []int
	Names   []string
	labels  []serverLabels
	byName  map[string]int32
	Jobs    []Job
	// fitSets are the sets of pools that fit some job (each in the config's order), one each.
	fitSets [][]int
	// Unrunnable are jobs no server of the fleet can hold (checked before any replay).
	Unrunnable []NotRun
	runnable   []bool
	// T0 is the first submission and End the last end had every job started at its
	// submission, over the jobs the fleet can run (Unrunnable left out).
	T0, End int64
	// Need is servers needed over time with perfect packing and no delay, all pools together.
	Need       []Point
	LowerBound float64 // server-hours
	poolBound  []float64
	BusyUnits  float64 // unit-hours of work (GPU-hours, or core-hours on CPU pools), each job in its cheapest pool
	// boundUnits is the work's unit-hours as the bound places it: CPU work the bound puts on
	// GPU servers holds no GPU (as the replay counts it for a row's utilisation).
	boundUnits float64
	// boundFailed counts the instants where the bound's linear program failed (bound.failed).
	boundFailed int
	// ctx is Options.Context: bound stops early once it is done.
	ctx     context.Context
	MaxWait int64
	// WatchDelay is Options.WatchDelay in seconds (-1: no watch).
	WatchDelay int64
	// order is the first-fit order of servers: cheapest pool first, then as listed.
	order []int32
	// service marks the jobs of service classes (services counts them): placed first.
	service  []bool
	services int
	// restart is what a moved job loses to starting again, in seconds (policy.moves).
	restart int64
}

// takes reports whether one server of the pool can run one share of the job: its shape, and
// its partition when the pool names partitions.
func (p *Pool) takes(j *trace.Job) bool {
	return j.GPUs <= p.GPUs && j.CPUs <= p.CPUs && (j.Partition == "" || len(p.Partitions) == 0 || slices.Contains(p.Partitions, j.Partition))
}

// serverLabels are the labels of a server the planner reads.
type serverLabels struct{ region, department string }

// requeueAll is tr with every job requeueable.
func requeueAll(tr *trace.Trace) *trace.Trace {
	c := *tr
	c.Jobs = slices.Clone(tr.Jobs)
	for i := range c.Jobs {
		c.Jobs[i].Requeueable = true
	}
	c.Notes = append(slices.Clone(tr.Notes), "every job requeueable (--requeue-all)")
	return &c
}

// chargedTo is tr with each job's department (the trace's account) the one
// accounting.chargeback.accounts charges it to, as the daemon's planner sees it.
func chargedTo(tr *trace.Trace, cb config.Chargeback) *trace.Trace {
	c := *tr
	c.Jobs = slices.Clone(tr.Jobs)
	for i := range c.Jobs {
		c.Jobs[i].Department = cb.Department(c.Jobs[i].Department)
	}
	return &c
}

// NewEnv sizes the fleet for the trace and prepares the replay. cfg is not modified.
func NewEnv(cfg *config.Config, tr *trace.Trace, opt Options) (*Env, error) {
	if len(tr.Jobs) == 0 {
		return nil, errors.New("the trace has no jobs")
	}
	c := *cfg
	c.Pools = append([]config.Pool(nil), cfg.Pools...)
	e := &Env{Config: &c, Trace: tr, MaxWait: 7 * 24 * 3600, restart: seconds(c.Policy.Moves.RestartCost), ctx: opt.Context}
	if e.ctx == nil {
		e.ctx = context.Background()
	}
	if opt.MaxWait > 0 {
		e.MaxWait = int64(opt.MaxWait / time.Second)
	}
	e.WatchDelay = int64(opt.WatchDelay / time.Second)
	if opt.WatchDelay < 0 {
		e.WatchDelay = -1
	}
	shutdown := int64(60)
	if opt.Shutdown > 0 {
		shutdown = int64(opt.Shutdown / time.Second)
	}
	if opt.RequeueAll {
		tr = requeueAll(tr)
		e.Trace = tr
	}
	if cb := c.Accounting.Chargeback; len(cb.Accounts) > 0 {
		tr = chargedTo(tr, cb)
		e.Trace = tr
	}
	for i, p := range c.Pools {
		boot := int64(time.Duration(p.BootTimeout) / time.Second)
		if opt.Boot > 0 {
			boot = int64(opt.Boot / time.Second)
		}
		cpus := p.Profile.CPUCores
		if tr.ServerCPUs > 0 && cpus != tr.ServerCPUs {
			// The trace's jobs take whole servers of its machine, every processor of each. A
			// profile of fewer cores would fit none of them; one of more would let a job of
			// one node take a share of a server, and others share it (on a log of one-processor
			// nodes and 8 cores, a machine of 4 nodes would hold the jobs of 32).
			cpus = tr.ServerCPUs
			c.Pools[i].Profile.CPUCores = cpus // what the planner is told, as the world
			e.note(fmt.Sprintf("pool %s replayed with the trace's %d processor(s) per server, as its jobs take whole servers (its profile has %d cpu_cores)", p.Name, cpus, p.Profile.CPUCores))
		}
		e.Pools = append(e.Pools, Pool{
			Name: p.Name, GPUs: p.Profile.GPUs, CPUs: cpus, PerHour: p.Cost.PlanPerHour(),
			Watts: p.Cost.Watts, Boot: boot, Shutdown: shutdown, Partitions: p.Profile.Partitions,
		})
	}
	if err := e.assignPools(); err != nil {
		return nil, err
	}
	needs := e.needs()
	if err := e.sizeFleet(opt.Fleet, needs); err != nil {
		return nil, err
	}
	e.buildServers()
	e.checkRunnable()
	if n := len(e.Unrunnable); n > 0 && n == len(e.Jobs) {
		// Every row would be zeros, as for a fleet of no server, yet read as results.
		return nil, fmt.Errorf("no job of the trace can run on this fleet (%s): all %d cannot; the first, line %d, %s",
			e.Describe(), n, e.Unrunnable[0].Line, e.Unrunnable[0].Reason)
	}
	if len(e.Unrunnable) > 0 {
		// The bound and the span count the jobs the fleet can run, as every policy's row does:
		// a job left out at time 0 would otherwise have the whole fleet on from then.
		e.setSpan(func(i int) bool { return e.runnable[i] })
		e.setBound(e.bound(func(i int) bool { return e.runnable[i] }))
	}
	if err := e.ctx.Err(); err != nil {
		return nil, err // a bound cut short
	}
	if e.LowerBound == 0 {
		// Every row would divide its server-hours by none: always-on's hours over the span
		// read as 0.000 x LB, below the bound itself. A trace.LineError: the caller names the
		// file.
		return nil, trace.LineError{Line: e.firstRunnable().Line, Msg: fmt.Sprintf("every job of the trace the fleet can run (%d, the first on this line) has a run time of 0, so the lower bound is no server-hour and no row could be compared to it",
			len(e.Jobs)-len(e.Unrunnable))}
	}
	if e.boundFailed > 0 {
		// Never a silent change of the yardstick every row is divided by.
		e.note(fmt.Sprintf("the lower bound's linear program failed at %d instant(s): there the bound counts only the servers each pool's own jobs need (a looser bound), or, where only the split over pools failed, the servers the work adds all in its cheapest pool", e.boundFailed))
	}
	return e, nil
}

// note adds a line to the replay's notes (on its own copy of the trace).
func (e *Env) note(n string) {
	c := *e.Trace
	c.Notes = append(slices.Clone(c.Notes), n)
	e.Trace = &c
}

// assignPools gives each job the cheapest pool that fits one of its servers and its class
// (the trace's, which must be one of the config's, or classified from its shape), in
// submission order (trace readers sort; a trace built otherwise is sorted here, ties in given
// order).
func (e *Env) assignPools() error {
	e.Jobs = make([]Job, len(e.Trace.Jobs))
	e.service = make([]bool, len(e.Trace.Jobs))
	sorted := slices.Clone(e.Trace.Jobs)
	slices.SortStableFunc(sorted, func(a, b trace.Job) int { return cmp.Compare(a.Submit, b.Submit) })
	several := 0 // jobs more than one pool takes
	// byShape: some job is classified from its shape; memory: some job gives its memory
	byShape, memory := false, false
	var fits []int
	for i, tj := range sorted {
		best := -1
		fits = fits[:0]
		for p := range e.Pools {
			pl := &e.Pools[p]
			if !pl.takes(&tj) {
				continue
			}
			if fits = append(fits, p); best < 0 || pl.PerHour < e.Pools[best].PerHour {
				best = p
			}
		}
		if len(fits) > 1 {
			several++
		}
		switch {
		case tj.Class == "":
			byShape, memory = true, memory || tj.Memory > 0
			tj.Class = e.Config.Classify(config.Shape{Partition: tj.Partition, CPUs: tj.CPUs, GPUs: tj.GPUs, Memory: tj.Memory})
		case e.Config.Class(tj.Class) == nil:
			// A trace.LineError, as a malformed row's: the caller names the file.
			return trace.LineError{Line: tj.Line, Msg: fmt.Sprintf("class: %s is not a class of the config (it has %s)", errtext.Quote(tj.Class), e.classNames())}
		}
		e.Jobs[i] = Job{Job: tj, Pool: best, fitSet: e.fitSetOf(fits)}
		if cl := e.Config.Class(tj.Class); cl != nil && cl.Service {
			e.service[i] = true
			e.services++
		}
	}
	if several > 0 {
		e.note(fmt.Sprintf("%d job(s) fit more than one pool: as the replay's job manager starts such a job on any server "+
			"on that fits it, the lower bound places it where the fewest servers hold the work (CPU work on GPU servers' "+
			"spare cores); --fleet peak and p95 size each pool with such jobs in their cheapest pool", several))
	}
	if cl := e.memoryClass(); cl != "" && byShape && !memory {
		e.note(fmt.Sprintf("class %s has a max_memory, but the trace gives no job's memory (the generic CSV's memory column): every job fits it", cl))
	}
	// Jobs no pool fits never run; until the fleet is sized, every other job may.
	e.setSpan(func(i int) bool { return e.Jobs[i].Pool >= 0 })
	return nil
}

// memoryClass names the first class of a max_memory ("" when none is): where no job
// classified from its shape gives its memory, it takes every job its other limits let in.
func (e *Env) memoryClass() string {
	for _, cl := range e.Config.Classes {
		if cl.MaxMemory > 0 {
			return cl.Name
		}
	}
	return ""
}

// classNames lists the config's classes for a message (a loaded config has at least the
// defaults).
func (e *Env) classNames() string {
	names := make([]string, len(e.Config.Classes))
	for i, c := range e.Config.Classes {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// fitSetOf is the index in e.fitSets of the set fits, added if new.
func (e *Env) fitSetOf(fits []int) int {
	for i, s := range e.fitSets {
		if slices.Equal(s, fits) {
			return i
		}
	}
	e.fitSets = append(e.fitSets, slices.Clone(fits))
	return len(e.fitSets) - 1
}

// setSpan sets T0 and End from the jobs include accepts (by index; all of them when it accepts
// none, so a replay of nothing still has a time to start at).
func (e *Env) setSpan(include func(i int) bool) {
	some := false
	for i := range e.Jobs {
		some = some || include(i)
	}
	first := true
	for i, j := range e.Jobs {
		if some && !include(i) {
			continue
		}
		if first {
			e.T0, e.End, first = j.Submit, j.Submit+j.Duration, false
		}
		e.End = max(e.End, j.Submit+j.Duration)
	}
}

// Days is the trace's span in days, from T0 to End: the one span over which every row's figures
// per day and its avoided energy are counted, however long its own replay ran.
func (e *Env) Days() float64 { return float64(e.End-e.T0) / 86400 }

// sizeFleet sets each pool's server count from the spec, and refuses a fleet of no server (a
// replay of it would report zeros as if they were results).
func (e *Env) sizeFleet(spec string, needs []poolNeed) error {
	if err := e.setFleet(spec, needs); err != nil {
		return err
	}
	total := 0
	for _, p := range e.Pools {
		total += p.Servers
	}
	if total > MaxServers {
		return e.tooLarge(total)
	}
	if total > 0 {
		return nil
	}
	if spec == "config" {
		return errors.New("--fleet config: the config lists no nodes, so the fleet has no server; list them, or size the fleet from the trace (--fleet auto, peak, p95 or a count)")
	}
	j := e.Jobs[0]
	var offers []string
	for _, p := range e.Pools {
		offers = append(offers, fmt.Sprintf("%s %d GPUs and %d CPUs", p.Name, p.GPUs, p.CPUs))
	}
	return fmt.Errorf("no pool of the config fits any of the trace's %d jobs, so the fleet would have no server "+
		"(the first, line %d, needs %d GPUs and %d CPUs on each server; the pools offer %s)",
		len(e.Jobs), j.Line, j.GPUs, j.CPUs, strings.Join(offers, "; "))
}

// MaxServers is the largest fleet a replay builds (all pools together): the most servers a
// generic CSV job may span. A trace whose jobs would need more (an SWF record of 10^8
// processors on a machine of one-processor nodes) is refused rather than allocated: the
// replay keeps state for every server, and such a fleet ran it out of memory.
const MaxServers = 1 << 20

// tooLarge is the error for a fleet of total servers, over MaxServers: it names the pools and
// the job that needs the most servers at once.
func (e *Env) tooLarge(total int) error {
	var parts []string
	for _, p := range e.Pools {
		if p.Servers > 0 {
			parts = append(parts, fmt.Sprintf("%s %d (%s)", p.Name, p.Servers, p.FleetWhy))
		}
	}
	widest := -1
	for i, j := range e.Jobs {
		if j.Pool >= 0 && (widest < 0 || j.Nodes > e.Jobs[widest].Nodes) {
			widest = i
		}
	}
	msg := fmt.Sprintf("the fleet would have %d servers (%s), more than a replay holds (%d)", total, strings.Join(parts, ", "), MaxServers)
	if widest >= 0 {
		j := e.Jobs[widest]
		msg += fmt.Sprintf("; the widest job, line %d, spans %d server(s)", j.Line, j.Nodes)
	}
	return errors.New(msg)
}

// CheckFleet refuses a fleet spec that is not auto (or empty), trace, peak, p95, config or a
// server count above zero, for `rotactl simulate --fleet` to refuse before the trace is read.
func CheckFleet(spec string) error {
	switch spec {
	case "", "auto", "trace", "peak", "p95", "config":
		return nil
	}
	if n, err := strconv.Atoi(spec); err == nil && n > 0 {
		return nil
	}
	return fmt.Errorf("%s is not auto, trace, peak, p95, config or a server count", errtext.Quote(spec))
}

// setFleet is sizeFleet's sizing.
func (e *Env) setFleet(spec string, needs []poolNeed) error {
	machine := e.Trace.Servers > 0 && len(e.Pools) == 1
	n, numErr := strconv.Atoi(spec)
	switch {
	case spec == "" || spec == "auto":
		spec = "peak"
		if machine {
			spec = "trace"
		}
	case spec == "trace" && !machine:
		return errors.New("--fleet trace: the trace states no machine size (SWF: MaxNodes and MaxProcs in its header), or the config has more than one pool; use --fleet peak, p95 or a count")
	}
	switch {
	case spec == "config":
		for i := range e.Pools {
			e.Pools[i].Servers = len(e.Config.Pools[i].Nodes)
			e.Pools[i].FleetWhy = "as listed in the config"
		}
		return nil
	case numErr == nil && n > 0:
		if len(e.Pools) != 1 {
			return fmt.Errorf("--fleet %d needs a config with one pool (it has %d); use --fleet config", n, len(e.Pools))
		}
		e.Pools[0].Servers, e.Pools[0].FleetWhy = n, "given"
		return nil
	case spec == "peak" || spec == "p95" || spec == "trace":
	default:
		return fmt.Errorf("fleet %w", CheckFleet(spec))
	}
	for i := range e.Pools {
		need := needs[i]
		size, why := need.peak, fmt.Sprintf("peak need %d", need.peak)
		switch spec {
		case "p95":
			size, why = need.p95, fmt.Sprintf("p95 need %d", need.p95)
		case "trace":
			size, why = e.Trace.Servers, fmt.Sprintf("the trace's machine; peak need %d", need.peak)
		}
		if need.largest > size {
			size, why = need.largest, why+fmt.Sprintf(", raised to the largest job's %d (line %d)", need.largest, need.largestLine)
		}
		e.Pools[i].Servers, e.Pools[i].FleetWhy = size, why
	}
	return nil
}

// buildServers names the servers: the config's nodes first, then <pool>-NNNN for the rest,
// and resizes the config's pools to match (max = the new count).
func (e *Env) buildServers() {
	e.byName = map[string]int32{}
	for p := range e.Pools {
		cp := &e.Config.Pools[p]
		n := e.Pools[p].Servers
		nodes := make([]config.Node, n)
		for i := range n {
			if i < len(cp.Nodes) {
				nodes[i] = cp.Nodes[i]
			} else {
				nodes[i] = config.Node{Name: fmt.Sprintf("%s-%04d", cp.Name, i+1)}
			}
		}
		if cp.Max == nil || *cp.Max > n || len(cp.Nodes) != n {
			mx := n
			cp.Max = &mx
		}
		cp.Nodes = nodes
		cp.Min = min(cp.Min, n)
		for k := range nodes {
			ref := config.NodeRef{Pool: cp, Node: &nodes[k]}
			e.byName[nodes[k].Name] = int32(len(e.Servers))
			e.Servers = append(e.Servers, p)
			e.Names = append(e.Names, nodes[k].Name)
			e.labels = append(e.labels, serverLabels{region: ref.Label("region"), department: ref.Label("department")})
		}
	}
	e.order = make([]int32, len(e.Servers))
	for i := range e.order {
		e.order[i] = int32(i)
	}
	sort.SliceStable(e.order, func(a, b int) bool {
		return e.Pools[e.Servers[e.order[a]]].PerHour < e.Pools[e.Servers[e.order[b]]].PerHour
	})
}

// checkRunnable finds jobs that no set of servers of the fleet could ever hold.
func (e *Env) checkRunnable() {
	e.runnable = make([]bool, len(e.Jobs))
	for i, j := range e.Jobs {
		fits := 0
		for p := range e.Pools {
			if e.Pools[p].takes(&j.Job) {
				fits += e.Pools[p].Servers
			}
		}
		if fits >= j.Nodes {
			e.runnable[i] = true
			continue
		}
		reason := fmt.Sprintf("needs %d server(s) of %d GPUs and %d CPUs%s; the fleet has %d that fit", j.Nodes, j.GPUs, j.CPUs, e.partitionOf(&j.Job), fits)
		e.Unrunnable = append(e.Unrunnable, NotRun{Line: j.Line, ID: j.ID, Reason: reason})
	}
}

// partitionOf names the job's partition for a message, " in partition \"gpu\"", where a pool
// lists partitions, so that it may be why no server fits the job ("" otherwise): a job of a
// partition no pool names read as one whose shape no server of the fleet holds.
func (e *Env) partitionOf(j *trace.Job) string {
	if j.Partition == "" {
		return ""
	}
	for _, p := range e.Pools {
		if len(p.Partitions) > 0 {
			return " in partition " + errtext.Quote(j.Partition)
		}
	}
	return ""
}

// firstRunnable is the first job of the trace the fleet can run (the first job when none can).
func (e *Env) firstRunnable() *Job {
	for i := range e.Jobs {
		if e.runnable[i] {
			return &e.Jobs[i]
		}
	}
	return &e.Jobs[0]
}

// Describe says in one line how the fleet was sized.
func (e *Env) Describe() string {
	var parts []string
	for _, p := range e.Pools {
		parts = append(parts, fmt.Sprintf("%s: %d servers (%s)", p.Name, p.Servers, p.FleetWhy))
	}
	return strings.Join(parts, "; ")
}
