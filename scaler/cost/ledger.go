package cost

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/rotahq/rota/bmc/spec"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// Power is how the books see a server's power over an interval.
type Power string

// The power buckets.
const (
	// PowerOn: the BMC said on (or changing state).
	PowerOn Power = "on"
	// PowerFailed: on, and rota marked the server failed: it keeps costing, and says so.
	PowerFailed Power = "failed"
	// PowerOff: the BMC said off.
	PowerOff Power = "off"
	// PowerUnknown: the BMC could not be read, or no observation stands for the time: spend
	// as if on, never a saving.
	PowerUnknown Power = "unknown"
)

// Observation is what one pass saw of one server.
type Observation struct {
	Node string
	Pool string
	// Region and Owner (the server's department) are its inventory labels.
	Region, Owner string
	Power         Power
	// Holds are what each account's jobs held on it.
	Holds []Hold
	// Watts is the measured draw, when Measured: Source says by what (SourceBMC: the BMC's
	// reading; SourceGPU: the pool's base_watts plus the GPUs' own readings).
	Watts    float64
	Measured bool
	Source   string
	// TakeDown is set when a dry-run pass decided to drain or power the server off: what it
	// would have saved is booked (rota_cost_would_save_total).
	TakeDown bool
}

// Pass is what one pass saw of the fleet.
type Pass struct {
	At    time.Time
	Nodes []Observation
	// Carbon is the carbon intensity (g/kWh) of each region whose intensity is known now.
	Carbon map[string]float64
}

// Hold is what the jobs of one department held on one server: the job manager's account
// (Slurm's account, the exec adapter's department, a pod's namespace) as the snapshot gives it,
// already charged to its department (accounting.chargeback.accounts, by the loop).
type Hold struct {
	Department string
	CPUs, GPUs int
}

// holds sums the running jobs' CPUs and GPUs per department, in the order they first appear.
func holds(jobs []fleet.Job) []Hold {
	var out []Hold
	at := map[string]int{}
	for _, j := range jobs {
		i, ok := at[j.Department]
		if !ok {
			i = len(out)
			at[j.Department] = i
			out = append(out, Hold{Department: j.Department})
		}
		out[i].CPUs += j.CPUs
		out[i].GPUs += j.GPUs
	}
	return out
}

// Draw is a server's measured power draw and where it was measured (SourceBMC, SourceGPU).
type Draw struct {
	Watts  float64
	Source string
}

// Observe turns a pass's snapshot into the books' observation: power from the BMC's reading
// (unknown when it could not be read), failed from rota's state, holds from the jobs the job
// manager lists running there (JobsView.Running; none listed: nothing held),
// measured draws (by node; absent: none). takeDown names the servers a dry-run pass decided to
// drain or power off.
func Observe(snap fleet.Snapshot, at time.Time, draws map[string]Draw, takeDown map[string]bool, carbon map[string]float64) Pass {
	p := Pass{At: at, Carbon: carbon, Nodes: make([]Observation, 0, len(snap.Nodes))}
	for _, n := range snap.Nodes {
		o := Observation{Node: n.Name, Pool: n.Pool, Region: n.Region, Owner: n.Department,
			Holds: holds(n.Jobs.Running), TakeDown: takeDown[n.Name]}
		switch n.Power {
		case spec.StateOn, spec.StateTransitioning:
			o.Power = PowerOn
			if n.State == fleet.StateFailed {
				o.Power = PowerFailed
			}
		case spec.StateOff:
			o.Power = PowerOff
		default:
			o.Power = PowerUnknown
		}
		if d, ok := draws[n.Name]; ok {
			o.Watts, o.Measured, o.Source = d.Watts, true, d.Source
		}
		p.Nodes = append(p.Nodes, o)
	}
	return p
}

// family is one counter of the books; its labels are in the order of familyLabels.
type family uint8

// The families.
const (
	famSpend family = iota
	famSaving
	famWouldSave
	famNodeIdle
	famBorrowedSeconds
	famBorrowed
	famNodeEnergy
	famAvoidedEnergy
	famAvoidedCarbon
	numFamilies
)

// familyNames are the families' names in the store (stable: renaming one loses its totals).
var familyNames = [numFamilies]string{"spend", "saving", "would_save", "node_idle", "borrowed_seconds",
	"borrowed", "node_energy", "avoided_energy", "avoided_carbon"}

// familyLabels are each family's label names, in key order.
var familyLabels = [numFamilies][]string{
	famSpend:           {"pool", "department", "region", "currency", "power", "basis"},
	famSaving:          {"pool", "department", "region", "currency"},
	famWouldSave:       {"pool", "department", "region", "currency"},
	famNodeIdle:        {"node", "pool", "currency"},
	famBorrowedSeconds: {"pool", "department", "owner"},
	famBorrowed:        {"pool", "department", "owner", "currency"},
	famNodeEnergy:      {"node", "pool", "source"},
	famAvoidedEnergy:   {"pool", "department", "region", "carbon"},
	famAvoidedCarbon:   {"pool", "department", "region"},
}

const maxLabels = 6

// key is one series of one family.
type key struct {
	f      family
	labels [maxLabels]string
}

func newKey(f family, values ...string) key {
	k := key{f: f}
	copy(k.labels[:], values)
	return k
}

// Ledger is the books up to At. A Ledger is never changed once made: Accrue returns a new one.
type Ledger struct {
	At     time.Time
	totals map[key]float64
	// prev is the observation the next interval is booked at (none after a restart); after
	// the first pass since a restart it is later than At, and the time between is unobserved.
	prev *Pass
	// prepared is, per server, what its series were last prepared for (prepare skips a server
	// whose pool, labels, accounts and measurement are as they were).
	prepared map[string]string
}

// Counter is one series of the books as the store keeps it.
type Counter struct {
	Family string
	Labels []string
	Value  float64
}

// Restore rebuilds the books from what the store kept (no observation: the time until the
// next pass is unknown power). A counter of an unknown family, with the wrong number of
// labels, a value that is no total (negative, NaN, infinite) or listed twice is an error.
func Restore(at time.Time, counters []Counter) (*Ledger, error) {
	l := &Ledger{At: at, totals: make(map[key]float64, len(counters))}
	for _, c := range counters {
		f, ok := familyByName(c.Family)
		if !ok {
			return nil, fmt.Errorf("books: unknown counter %q", c.Family)
		}
		if len(c.Labels) != len(familyLabels[f]) {
			return nil, fmt.Errorf("books: counter %s has %d labels, want %d", c.Family, len(c.Labels), len(familyLabels[f]))
		}
		if !(c.Value >= 0) || math.IsInf(c.Value, 1) {
			return nil, fmt.Errorf("books: counter %s%v is %v, not a total", c.Family, c.Labels, c.Value)
		}
		k := newKey(f, c.Labels...)
		if _, ok := l.totals[k]; ok {
			// Which of two totals is the series'? Either would lose or invent money.
			return nil, fmt.Errorf("books: counter %s%v is listed twice", c.Family, c.Labels)
		}
		l.totals[k] = c.Value
	}
	return l, nil
}

func familyByName(name string) (family, bool) {
	for f, n := range familyNames {
		if n == name {
			return family(f), true
		}
	}
	return 0, false
}

// Counters lists the books for the store, sorted.
func (l *Ledger) Counters() []Counter {
	out := make([]Counter, 0, len(l.totals))
	for k, v := range l.totals {
		n := len(familyLabels[k.f])
		out = append(out, Counter{Family: familyNames[k.f], Labels: slices.Clone(k.labels[:n]), Value: v})
	}
	slices.SortFunc(out, func(a, b Counter) int {
		if c := strings.Compare(a.Family, b.Family); c != 0 {
			return c
		}
		return slices.Compare(a.Labels, b.Labels)
	})
	return out
}

// Accrue books the time from l.At to p.At and returns the books that follow, with p as the
// observation for the next interval. The first pass of new books books nothing. Time after
// the previous observation by more than cfg.Accounting.StaleAfter is booked as unknown power
// for the servers p names. The first pass after a restart books nothing either: the next one
// books the time up to it as unknown power for the servers it named (so that every series
// that time goes to was exported at 0 first). A pass no later than l.At (a clock that stepped
// back) books nothing and replaces the observation.
func (l *Ledger) Accrue(cfg *config.Config, p Pass) *Ledger {
	next := &Ledger{At: l.At, totals: maps.Clone(l.totals), prev: &p, prepared: maps.Clone(l.prepared)}
	if next.totals == nil {
		next.totals = map[key]float64{}
	}
	if next.prepared == nil {
		next.prepared = map[string]string{}
	}
	defer next.prepare(cfg, p)
	if l.At.IsZero() || !p.At.After(l.At) {
		if l.At.IsZero() || p.At.After(l.At) {
			next.At = p.At
		}
		return next
	}
	if l.prev == nil {
		// Restored books: the time since l.At is booked by the next pass, once the series it
		// books into (a server new in the config has none) were exported at 0.
		return next
	}
	b := &booker{cfg: cfg, totals: next.totals}
	from, to := l.At, p.At
	if gap := l.prev.At; gap.After(from) {
		// The first pass after a restart: the time until it no pass observed.
		if gap.After(to) {
			gap = to
		}
		b.book(unobserved(*l.prev), from, gap)
		from = gap
	}
	end := to
	if stale := from.Add(time.Duration(cfg.Accounting.StaleAfter)); stale.Before(end) {
		end = stale
	}
	b.book(*l.prev, from, end)
	from = end
	if from.Before(to) {
		b.book(unobserved(p), from, to)
	}
	next.At = to
	return next
}

// prepare makes every series the next interval may book into exist, at 0 when new: booked at
// p, or as unknown power. Prometheus' increase() takes a series' first sample as its start, so
// a series born holding an amount would lose that amount; born at 0 and scraped so before it
// grows, it loses nothing.
//
// The series prepared are those each server could book into next: in any power bucket, by
// its pool's watts and, where they may come, by a BMC's reading or by its GPUs' readings.
// With idle time shared by pool, a server's idle time goes to the departments that held any
// server of its pool, under its own region and power: a change to one server prepares its
// whole pool again.
func (l *Ledger) prepare(cfg *config.Config, p Pass) {
	b := &booker{cfg: cfg, totals: l.totals, touch: true}
	variants := Pass{At: p.At, Carbon: p.Carbon}
	sigs := make([]string, len(p.Nodes))
	changed := map[string]bool{} // pools with a server not prepared as it is now
	for i, o := range p.Nodes {
		sigs[i] = signature(o, p.Carbon)
		if l.prepared[o.Node] != sigs[i] {
			changed[o.Pool] = true
		}
	}
	byPool := cfg.Accounting.Chargeback.Idle == config.IdleToPool
	for i, o := range p.Nodes {
		if l.prepared[o.Node] == sigs[i] && !(byPool && changed[o.Pool]) {
			continue
		}
		l.prepared[o.Node] = sigs[i]
		for _, pw := range []Power{PowerOn, PowerFailed, PowerOff, PowerUnknown} {
			v := o
			v.Power, v.Measured = pw, false
			variants.Nodes = append(variants.Nodes, v)
			v.Measured, v.Watts = true, max(o.Watts, 1)
			if o.Source == SourceBMC || cfg.BMC.PowerReadingInterval > 0 {
				v.Source = SourceBMC
				variants.Nodes = append(variants.Nodes, v)
			}
			if pl := cfg.Pool(o.Pool); o.Source == SourceGPU || (pl != nil && pl.Cost.BaseWatts > 0) {
				v.Source = SourceGPU
				variants.Nodes = append(variants.Nodes, v)
			}
		}
	}
	b.book(variants, p.At, p.At.Add(time.Second))
}

// signature is what decides which series a server may book into, but its power: its pool,
// labels, accounts, how it is measured and whether its region's carbon is known.
func signature(o Observation, carbon map[string]float64) string {
	var b strings.Builder
	_, known := carbon[o.Region]
	fmt.Fprintf(&b, "%s\x00%s\x00%s\x00%s\x00%t\x00%t", o.Pool, o.Region, o.Owner, o.Source, o.TakeDown, known)
	for _, h := range o.Holds {
		b.WriteString("\x00")
		b.WriteString(h.Department)
	}
	return b.String()
}

// unobserved is p's fleet with nothing known of it: every server's power unknown, no holds,
// no readings.
func unobserved(p Pass) Pass {
	u := Pass{At: p.At, Carbon: p.Carbon, Nodes: make([]Observation, len(p.Nodes))}
	for i, o := range p.Nodes {
		u.Nodes[i] = Observation{Node: o.Node, Pool: o.Pool, Region: o.Region, Owner: o.Owner, Power: PowerUnknown}
	}
	return u
}

// Value returns the total of one series (0 when the books have none), for tests and tools:
// family is a counter's store name, labels its values in order.
func (l *Ledger) Value(familyName string, labels ...string) float64 {
	f, ok := familyByName(familyName)
	if !ok {
		return 0
	}
	return l.totals[newKey(f, labels...)]
}
