package cost

import (
	"time"

	"github.com/rotahq/rota/scaler/config"
)

// Where a spend's energy figure came from (the label basis), and an energy counter's (source).
const (
	basisHourly   = "hourly"   // rent by the hour: energy is not what it costs
	basisMeasured = "measured" // a measured draw, at the pool's energy price
	basisProfile  = "profile"  // the pool's watts, at its energy price
	sourceProfile = "profile"
)

// The sources of a measured draw.
const (
	// SourceBMC is the BMC's power reading (Redfish, IPMI DCMI).
	SourceBMC = "bmc"
	// SourceGPU is the pool's base_watts plus the GPUs' own readings (NVML, DCGM).
	SourceGPU = "gpu"
)

const joulesPerKWh = 3.6e6

// booker books one interval into totals. With touch, it books nothing but makes each series
// it would add to exist (at 0 when new).
type booker struct {
	cfg    *config.Config
	totals map[key]float64
	touch  bool
}

func (b *booker) add(k key, v float64) {
	switch {
	case b.touch:
		if _, ok := b.totals[k]; !ok {
			b.totals[k] = 0
		}
	case v > 0:
		b.totals[k] += v
	}
}

// charge is one server's spend over the interval before it is split among departments.
type charge struct {
	o      Observation
	pool   *config.Pool
	amount float64
	power  Power
	basis  string
}

// book books [from, to) at observation p.
func (b *booker) book(p Pass, from, to time.Time) {
	dt := to.Sub(from)
	if dt <= 0 {
		return
	}
	var charges []charge
	for _, o := range p.Nodes {
		pl := b.cfg.Pool(o.Pool)
		if pl == nil {
			continue // a pool the config no longer has: its totals stay as they were
		}
		if c, ok := b.server(p, o, pl, from, to); ok {
			charges = append(charges, c)
		}
	}
	b.split(charges, dt)
}

// server books one server's energy, saving and avoided energy, and returns its spend.
func (b *booker) server(p Pass, o Observation, pl *config.Pool, from, to time.Time) (charge, bool) {
	cost := pl.Cost
	sec := to.Sub(from).Seconds()
	cur := cost.Currency
	onCost := cost.Hourly * to.Sub(from).Hours()
	if !cost.Rented() {
		onCost = cost.EnergyCost(cost.Watts, from, to)
	}
	onBasis := basisProfile
	if cost.Rented() {
		onBasis = basisHourly
	}
	if o.TakeDown && o.Power == PowerOn && cost.Saves() {
		b.add(newKey(famWouldSave, o.Pool, o.Owner, o.Region, cur), onCost)
	}
	if o.Power != PowerOff {
		// On, failed or unknown: drawing power, as measured or as the pool's watts say.
		c := charge{o: o, pool: pl, amount: onCost, power: o.Power, basis: onBasis}
		watts, source := cost.Watts, sourceProfile
		if o.Measured && o.Power != PowerUnknown {
			watts, source = o.Watts, o.Source
			if !cost.Rented() {
				c.amount, c.basis = cost.EnergyCost(watts, from, to), basisMeasured
			}
		}
		b.add(newKey(famNodeEnergy, o.Node, o.Pool, source), watts*sec)
		return c, true
	}
	// Off: the standby draw the BMC measures (none without a reading), and what staying on
	// would have cost and drawn.
	standby, standbyCost := 0.0, 0.0
	if o.Measured {
		standby = o.Watts
		b.add(newKey(famNodeEnergy, o.Node, o.Pool, o.Source), standby*sec)
		if !cost.Rented() {
			standbyCost = cost.EnergyCost(standby, from, to)
		}
	}
	if avoided := (cost.Watts - standby) * sec; avoided > 0 {
		grams, known := p.Carbon[o.Region]
		if known || b.touch {
			b.add(newKey(famAvoidedCarbon, o.Pool, o.Owner, o.Region), avoided/joulesPerKWh*grams)
			b.add(newKey(famAvoidedEnergy, o.Pool, o.Owner, o.Region, "known"), avoided)
		}
		if !known || b.touch {
			b.add(newKey(famAvoidedEnergy, o.Pool, o.Owner, o.Region, "unknown"), avoided)
		}
	}
	if !cost.Saves() {
		// Paid whether on or off (rent by the month): the off server costs as if on.
		return charge{o: o, pool: pl, amount: onCost, power: PowerOff, basis: onBasis}, true
	}
	b.add(newKey(famSaving, o.Pool, o.Owner, o.Region, cur), onCost-standbyCost)
	if standbyCost > 0 {
		return charge{o: o, pool: pl, amount: standbyCost, power: PowerOff, basis: basisMeasured}, true
	}
	return charge{}, false
}

// StandbyAboveWatts reports whether o is a server off whose measured standby draw is above its
// pool's watts (c; none given: nothing to compare with). The books then count no avoided energy
// and, on a pool paid by its energy, no saving while it stays off: the difference would be
// negative. A sign that cost.watts is too low, or that the reading is not the server's.
func StandbyAboveWatts(o Observation, c config.Cost) bool {
	return o.Power == PowerOff && o.Measured && c.Watts > 0 && o.Watts > c.Watts
}

// split charges each server's spend to the departments whose jobs held it, by what they held
// (the larger of their share of its CPUs and of its GPUs); the idle rest by the chargeback
// rule. Capacity a department held on another department's server is borrowed.
func (b *booker) split(charges []charge, dt time.Duration) {
	cb := b.cfg.Accounting.Chargeback
	type idle struct {
		c      charge
		amount float64
	}
	var idles []idle
	poolUse := map[string]map[string]float64{} // pool -> department -> spend on held capacity
	for _, c := range charges {
		o, cur := c.o, c.pool.Cost.Currency
		shares := heldShares(c)
		rest := 1.0
		for dept, share := range shares {
			amount := c.amount * share
			b.add(newKey(famSpend, o.Pool, dept, o.Region, cur, string(c.power), c.basis), amount)
			if dept != o.Owner {
				b.add(newKey(famBorrowedSeconds, o.Pool, dept, o.Owner), dt.Seconds()*share)
				b.add(newKey(famBorrowed, o.Pool, dept, o.Owner, cur), amount)
			}
			if poolUse[o.Pool] == nil {
				poolUse[o.Pool] = map[string]float64{}
			}
			poolUse[o.Pool][dept] += amount
			rest -= share
		}
		if rest > 1e-12 || b.touch {
			amount := c.amount * rest
			if c.power != PowerOff {
				b.add(newKey(famNodeIdle, o.Node, o.Pool, cur), amount)
			}
			idles = append(idles, idle{c, amount})
		}
	}
	for _, i := range idles {
		o, cur := i.c.o, i.c.pool.Cost.Currency
		use := poolUse[o.Pool]
		var total float64
		for _, v := range use {
			total += v
		}
		if cb.Idle != config.IdleToPool || total == 0 || b.touch {
			b.add(newKey(famSpend, o.Pool, o.Owner, o.Region, cur, string(i.c.power), i.c.basis), i.amount)
			if !b.touch {
				continue
			}
		}
		for dept, v := range use {
			b.add(newKey(famSpend, o.Pool, dept, o.Region, cur, string(i.c.power), i.c.basis), i.amount*v/total)
		}
	}
}

// heldShares is the share of the server each department's jobs held, by department: per
// department the larger of its CPUs over the profile's and its GPUs over the profile's, scaled
// down when the holds add up to more than the whole server. A job without one is the owner's.
func heldShares(c charge) map[string]float64 {
	if len(c.o.Holds) == 0 {
		return nil
	}
	prof := c.pool.Profile
	out := map[string]float64{}
	var sum float64
	for _, h := range c.o.Holds {
		share := 0.0
		if prof.CPUCores > 0 {
			share = float64(h.CPUs) / float64(prof.CPUCores)
		}
		if prof.GPUs > 0 {
			share = max(share, float64(h.GPUs)/float64(prof.GPUs))
		}
		share = min(max(share, 0), 1)
		dept := h.Department
		if dept == "" {
			dept = c.o.Owner
		}
		out[dept] += share
		sum += share
	}
	if sum > 1 {
		for d := range out {
			out[d] /= sum
		}
	}
	return out
}
