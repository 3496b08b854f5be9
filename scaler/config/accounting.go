package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/internal/errtext"
)

// Accounting is how rota books what the fleet spent and saved, the energy it drew and avoided,
// and the carbon that energy stands for.
type Accounting struct {
	// Tariffs are time-of-use electricity prices, one per site; a pool names its own.
	Tariffs []Tariff `yaml:"tariffs"`
	// Carbon is the carbon intensity of each region's electricity; a region without an entry
	// has an unknown intensity (its avoided energy is counted, its carbon is not).
	Carbon     []Carbon   `yaml:"carbon"`
	Chargeback Chargeback `yaml:"chargeback"`
	// Currency is the one rota plans in: pools are ranked by cost, a power cycle is weighed
	// against an idle hour, and totals across pools are summed, in it. Default: the pools'
	// currency, where they share one.
	Currency string `yaml:"currency"`
	// ExchangeRates gives what one unit of each other currency a pool bills in is worth in
	// Currency (with USD, `EUR: 1.08`). The books keep each pool's own currency.
	ExchangeRates map[string]float64 `yaml:"exchange_rates"`
	// StaleAfter bounds how long one observation of the fleet stands for it: time since the
	// last pass beyond this (a pass that failed, rota stopped) is booked as unknown power:
	// spend as if on, no saving. Default: three evaluation intervals.
	StaleAfter model.Duration `yaml:"stale_after" max:"1w"`
}

// Tariff is a site's electricity price by time of day: windows that cover every minute of the
// week exactly once, in one time zone and one currency.
type Tariff struct {
	Name     string        `yaml:"name"`
	Currency string        `yaml:"currency"`
	Timezone string        `yaml:"timezone"`
	Windows  []PriceWindow `yaml:"windows"`

	loc  *time.Location
	mean float64 // the price averaged over the week
}

// PriceWindow is one price of a tariff and when it holds.
type PriceWindow struct {
	Name   string `yaml:"name"`
	Window `yaml:",inline"`
	// PricePerKWh is in the tariff's currency.
	PricePerKWh float64 `yaml:"price_per_kwh"`
}

// Carbon is the carbon intensity (grams of CO2-equivalent per kWh) of one region: a fixed
// number, or a PromQL query read every pass that must answer one sample (absent, several or
// negative: unknown for that pass, never zero).
type Carbon struct {
	Region      string   `yaml:"region"`
	GramsPerKWh *float64 `yaml:"grams_per_kwh"`
	Query       string   `yaml:"query"`
}

// The rules for idle time (capacity on that no job holds).
const (
	// IdleToOwner books a server's idle time to its own department (its department label).
	IdleToOwner = "owner"
	// IdleToPool shares a pool's idle time among the departments whose jobs used the pool in
	// that pass, by their use; to the server's owner when none did.
	IdleToPool = "pool"
)

// Chargeback says who pays for a server: the departments whose jobs held it, in proportion to
// what they held (the larger of their share of its CPUs and of its GPUs), and the idle rest by
// the Idle rule. Capacity a department's jobs held on a server of another department is
// borrowed: charged to the borrower, and counted as such.
type Chargeback struct {
	Idle string `yaml:"idle"`
	// Accounts maps the job manager's accounts (Slurm's account, the exec adapter's running
	// jobs' department) to departments; an account not listed is a department of its name, and
	// a job without one is charged to the server's owner.
	Accounts map[string]string `yaml:"accounts"`
}

// Department returns the department an account is charged as ("" for no account).
func (c Chargeback) Department(account string) string {
	if d, ok := c.Accounts[account]; ok {
		return d
	}
	return account
}

// Tariff returns the tariff named name, or nil.
func (a *Accounting) Tariff(name string) *Tariff {
	for i := range a.Tariffs {
		if a.Tariffs[i].Name == name {
			return &a.Tariffs[i]
		}
	}
	return nil
}

// CarbonFor returns the region's carbon entry, or nil.
func (a *Accounting) CarbonFor(region string) *Carbon {
	for i := range a.Carbon {
		if a.Carbon[i].Region == region {
			return &a.Carbon[i]
		}
	}
	return nil
}

func (c *Config) validateAccounting(p *problems) {
	a := &c.Accounting
	switch a.Chargeback.Idle {
	case IdleToOwner, IdleToPool:
	default:
		p.add("accounting.chargeback.idle", "%s is not one of owner, pool", errtext.Quote(a.Chargeback.Idle))
	}
	for acct, dept := range a.Chargeback.Accounts {
		if acct == "" || dept == "" {
			p.add("accounting.chargeback.accounts", "an account and its department must both be named (%s: %s)", errtext.Quote(acct), errtext.Quote(dept))
		}
	}
	positive(p, "accounting.stale_after", a.StaleAfter)
	names := map[string]bool{}
	for i := range a.Tariffs {
		t := &a.Tariffs[i]
		path := fmt.Sprintf("accounting.tariffs[%d]", i)
		uniqueName(p, names, path, t.Name)
		t.compile(p, path)
	}
	regions := c.regions()
	seen := map[string]bool{}
	for i, cb := range a.Carbon {
		path := fmt.Sprintf("accounting.carbon[%d]", i)
		switch {
		case cb.Region == "":
			p.add(path+".region", "required")
		case seen[cb.Region]:
			p.add(path+".region", "%s is given twice", errtext.Quote(cb.Region))
		case !regions[cb.Region]:
			p.add(path+".region", "%s", noRegion(cb.Region))
		}
		seen[cb.Region] = true
		switch {
		case (cb.GramsPerKWh == nil) == (cb.Query == ""):
			p.add(path, "give grams_per_kwh or query, one of them")
		case cb.GramsPerKWh != nil && (!finite(*cb.GramsPerKWh) || *cb.GramsPerKWh < 0):
			notNegative(p, path+".grams_per_kwh", *cb.GramsPerKWh)
		}
	}
}

// regions are the region labels of the fleet's servers and pools (a replay's pools list no
// servers).
func (c *Config) regions() map[string]bool {
	out := map[string]bool{}
	for i := range c.Pools {
		if r, ok := c.Pools[i].Labels["region"]; ok {
			out[r] = true
		}
		for j := range c.Pools[i].Nodes {
			ref := NodeRef{Pool: &c.Pools[i], Node: &c.Pools[i].Nodes[j]}
			out[ref.Label("region")] = true
		}
	}
	return out
}

// validCurrency: an ISO 4217 code, three upper-case letters.
func validCurrency(s string) bool {
	return len(s) == 3 && strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == ""
}

// compile checks the tariff's zone, currency and windows, and that the windows price every
// minute of the week once: a gap would book energy at no price, an overlap at two.
func (t *Tariff) compile(p *problems, path string) {
	t.loc = loadZone(p, path+".timezone", t.Timezone)
	if !validCurrency(t.Currency) {
		p.add(path+".currency", "%s is not a currency code (three capital letters, ISO 4217)", errtext.Quote(t.Currency))
	}
	if len(t.Windows) == 0 {
		p.add(path+".windows", "required: the prices and when they hold")
		return
	}
	before := len(*p)
	for i := range t.Windows {
		w := &t.Windows[i]
		wpath := fmt.Sprintf("%s.windows[%d]", path, i)
		w.Window.compile(p, wpath)
		notNegative(p, wpath+".price_per_kwh", w.PricePerKWh)
	}
	if len(*p) == before {
		t.checkCoverage(p, path+".windows")
		t.mean = t.meanPrice()
	}
}

// checkCoverage reports the first few stretches of the week no window prices, and those two
// windows price.
func (t *Tariff) checkCoverage(p *problems, path string) {
	type stretch struct {
		day        time.Weekday
		from, to   int
		kind, what string
	}
	var found []stretch
	var open *stretch
	flush := func() {
		if open != nil {
			found = append(found, *open)
			open = nil
		}
	}
	for d := time.Sunday; d <= time.Saturday; d++ {
		for m := 0; m < minutesPerDay; m++ {
			var by []string
			for i := range t.Windows {
				if t.Windows[i].openAt(d, m) {
					by = append(by, t.windowName(i))
				}
			}
			kind, what := "", ""
			switch {
			case len(by) == 0:
				kind = "gap"
			case len(by) > 1:
				kind, what = "overlap", strings.Join(by, " and ")
			}
			if open != nil && (open.day != d || open.kind != kind || open.what != what) {
				flush()
			}
			if kind == "" {
				continue
			}
			if open == nil {
				open = &stretch{day: d, from: m, kind: kind, what: what}
			}
			open.to = m + 1
		}
		flush()
	}
	for i, s := range found {
		if i == 3 {
			p.add(path, "and %d more stretches without exactly one price", len(found)-3)
			break
		}
		at := fmt.Sprintf("%s %s-%s", dayNames[s.day], hhmm(s.from), hhmm(s.to))
		if s.kind == "gap" {
			p.add(path, "no window prices %s (the windows must cover the whole week)", at)
		} else {
			p.add(path, "%s both price %s (each minute of the week has one price)", s.what, at)
		}
	}
}

func (t *Tariff) windowName(i int) string {
	if n := t.Windows[i].Name; n != "" {
		return errtext.Quote(n)
	}
	return fmt.Sprintf("windows[%d]", i)
}

func hhmm(m int) string { return fmt.Sprintf("%02d:%02d", m/60, m%60) }

// PriceAt is the tariff's price per kWh at t and when that price ends.
func (t *Tariff) PriceAt(at time.Time) (price float64, until time.Time) {
	for i := range t.Windows {
		w := &t.Windows[i]
		if w.active(at, t.loc) {
			return w.PricePerKWh, w.closesAfter(at, t.loc)
		}
	}
	// Validation proves the windows cover the week; an uncompiled tariff prices nothing, and
	// says so by the next minute.
	return 0, at.Truncate(time.Minute).Add(time.Minute)
}

// meanPrice is the tariff's price averaged over a week.
func (t *Tariff) meanPrice() float64 {
	var sum float64
	for i := range t.Windows {
		w := &t.Windows[i]
		for d := time.Sunday; d <= time.Saturday; d++ {
			for m := 0; m < minutesPerDay; m++ {
				if w.openAt(d, m) {
					sum += w.PricePerKWh
				}
			}
		}
	}
	return sum / (7 * minutesPerDay)
}

// EnergyCost is what drawing watts from..to costs at the pool's prices: the tariff's, split at
// each change of price, or the flat price_per_kwh.
func (c Cost) EnergyCost(watts float64, from, to time.Time) float64 {
	if !to.After(from) || watts == 0 {
		return 0
	}
	if c.tariff == nil {
		return watts / 1000 * to.Sub(from).Hours() * c.PricePerKWh
	}
	var sum float64
	for at := from; at.Before(to); {
		price, until := c.tariff.PriceAt(at)
		end := until
		if end.After(to) {
			end = to
		}
		sum += watts / 1000 * end.Sub(at).Hours() * price
		at = end
	}
	return sum
}

// Rented reports whether the pool's cost is rent by the hour (energy is then not what it costs).
func (c Cost) Rented() bool { return c.Hourly > 0 }

// resolveTariffs points each pool at its tariff and checks that the pool's money and the
// tariff's are the same currency (one sum never adds two).
func (c *Config) resolveTariffs(p *problems) {
	for i := range c.Pools {
		cost := &c.Pools[i].Cost
		path := fmt.Sprintf("pools[%d].cost", i)
		cost.tariff = nil
		if !validCurrency(cost.Currency) {
			p.add(path+".currency", "%s is not a currency code (three capital letters, ISO 4217)", errtext.Quote(cost.Currency))
		}
		if cost.Tariff == "" {
			continue
		}
		t := c.Accounting.Tariff(cost.Tariff)
		switch {
		case t == nil:
			p.add(path+".tariff", "no tariff named %s in accounting.tariffs", errtext.Quote(cost.Tariff))
		case t.Currency != cost.Currency:
			p.add(path+".tariff", "tariff %s bills in %s but the pool's currency is %s: one sum would add two currencies", errtext.Quote(t.Name), errtext.Quote(t.Currency), errtext.Quote(cost.Currency))
		default:
			cost.tariff = t
		}
	}
}

// resolveCurrencies settles the currency rota plans in and what each pool's money is worth in
// it: ranking pools by their price numbers across currencies would take 1,000 JPY an hour for
// dearer than 10 USD.
func (c *Config) resolveCurrencies(p *problems) {
	a := &c.Accounting
	for code, rate := range a.ExchangeRates {
		path := "accounting.exchange_rates." + code
		switch {
		case !validCurrency(code):
			p.add(path, "%s is not a currency code (three capital letters, ISO 4217)", errtext.Quote(code))
		case !(rate > 0):
			p.add(path, "%v: what one %s is worth must be a positive number", rate, code)
		}
	}
	if a.Currency == "" {
		for i := range c.Pools {
			cur := c.Pools[i].Cost.Currency
			if a.Currency != "" && cur != a.Currency {
				p.add("accounting.currency", "pools bill in %s (%s) and %s (%s): name the currency rota ranks them in, and accounting.exchange_rates for the others",
					a.Currency, c.Pools[0].Name, cur, c.Pools[i].Name)
				return
			}
			a.Currency = cur
		}
		if a.Currency == "" { // no pools: validatePools says so
			return
		}
	}
	if !validCurrency(a.Currency) {
		p.add("accounting.currency", "%s is not a currency code (three capital letters, ISO 4217)", errtext.Quote(a.Currency))
		return
	}
	if _, ok := a.ExchangeRates[a.Currency]; ok {
		p.add("accounting.exchange_rates."+a.Currency, "%s is accounting.currency, which needs no rate", a.Currency)
	}
	for i := range c.Pools {
		cost := &c.Pools[i].Cost
		cost.rate = 0
		if cost.Currency == a.Currency {
			continue
		}
		rate, ok := a.ExchangeRates[cost.Currency]
		if !ok {
			p.add(fmt.Sprintf("pools[%d].cost.currency", i), "%s is not %s, the currency rota plans in (accounting.currency), and accounting.exchange_rates gives no rate for it",
				cost.Currency, a.Currency)
		}
		cost.rate = rate
	}
}

// HasBaseWatts reports whether a pool measures its servers by their GPUs (cost.base_watts).
func (c *Config) HasBaseWatts() bool {
	return slices.ContainsFunc(c.Pools, func(p Pool) bool { return p.Cost.BaseWatts > 0 })
}

// noRegion says that a region a config names has no server.
func noRegion(r string) string {
	return fmt.Sprintf("no server is in region %s (pools[].labels.region or nodes[].labels.region)", errtext.Quote(r))
}
