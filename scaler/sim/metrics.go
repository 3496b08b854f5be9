package sim

import (
	"maps"
	"math"
	"slices"

	"github.com/rotahq/rota/scaler/config"
)

// Sample is the fleet at one moment of a replay: servers powered and the spend so far.
type Sample struct {
	T    int64   `json:"t"`
	On   int     `json:"on"`
	Cost float64 `json:"cost"`
}

// accounting gathers a replay's figures as it goes.
type accounting struct {
	onSec               []int64 // powered server-seconds per pool (integers: exact in any order)
	busyUnits           float64 // unit-hours of the jobs started
	powerOns, powerOffs int
	violations, ignored int
	// plannerCalls are the policy's decisions; actingCalls those that returned an action.
	plannerCalls, actingCalls int
	// moves are the moves made; badMoves the jobs moved that were not requeueable (must be
	// 0); lostUnits the work they lost (run so far plus restart), in unit-hours.
	moves, badMoves      int
	lostUnits            float64
	waits                []int64
	byClass              map[string][]int64
	notRun               []NotRun
	dropped              []int // jobs given up on or never started (indices into Env.Jobs)
	series               []Sample
	perHour, unitsPerSrv []float64
	// prices are the pools' costs; priced the pools on a time-of-use tariff, whose spend is
	// summed as it goes (touCost), at the price of each hour of the trace's wall clock.
	prices  []config.Cost
	priced  []bool
	touCost []float64
}

func (a *accounting) init(e *Env) {
	a.onSec = make([]int64, len(e.Pools))
	a.touCost = make([]float64, len(e.Pools))
	a.byClass = map[string][]int64{}
	for i, p := range e.Pools {
		a.perHour = append(a.perHour, p.PerHour)
		a.unitsPerSrv = append(a.unitsPerSrv, float64(p.capacity()))
		c := e.Config.Pools[i].Cost
		a.prices = append(a.prices, c)
		a.priced = append(a.priced, c.Tariff != "" && !c.Rented())
	}
}

func (a *accounting) advance(w *world, t int64) {
	dt := t - w.now
	if dt <= 0 {
		return
	}
	for p, n := range w.powered {
		a.onSec[p] += int64(n) * dt
		if a.priced[p] && n > 0 {
			a.touCost[p] += float64(n) * a.prices[p].EnergyCost(a.prices[p].Watts, w.wall(w.now), w.wall(t))
		}
	}
}

// cost is the spend so far: at the hourly rate, or at the tariff's price of each hour.
func (a *accounting) cost() float64 {
	c := 0.0
	for p, sec := range a.onSec {
		if a.priced[p] {
			c += a.prices[p].InPlanCurrency(a.touCost[p])
			continue
		}
		c += float64(sec) * a.perHour[p] / 3600
	}
	return c
}

// sample records the powered count after a change (one sample per time: the last wins).
func (a *accounting) sample(w *world) {
	on := 0
	for _, n := range w.powered {
		on += n
	}
	s := Sample{T: w.now, On: on, Cost: a.cost()}
	if n := len(a.series); n > 0 && a.series[n-1].T == w.now {
		a.series[n-1] = s
		return
	}
	a.series = append(a.series, s)
}

// Result is what one policy did with one trace.
type Result struct {
	Policy string `json:"policy"`
	// ServerHours powered (booting and shutting down count as on), and its ratio to the lower
	// bound of the same jobs: LowerBoundHours counts only the jobs this policy ran, so a policy
	// that gives up on jobs is not flattered by the work it never did.
	ServerHours     float64 `json:"server_hours"`
	XLowerBound     float64 `json:"x_lower_bound"`
	LowerBoundHours float64 `json:"lower_bound_server_hours"`
	// EnergyKWh is 0 when no pool gives watts; Cost is in Currency (accounting.currency), at
	// each pool's tariff (accounting.tariffs) price of each hour of the trace's time where it
	// has one.
	EnergyKWh float64 `json:"energy_kwh"`
	Cost      float64 `json:"cost"`
	Currency  string  `json:"currency"`
	// AvoidedKWh is the energy not drawn against the whole fleet on over the trace's span
	// (Days, the same for every row);
	// AvoidedCO2Kg its carbon where the pool's region has a grams_per_kwh, and
	// CarbonUnknownKWh the avoided energy of pools whose intensity is unknown (a query, which a
	// replay cannot ask, or none): its carbon is not in AvoidedCO2Kg.
	AvoidedKWh       float64 `json:"avoided_kwh"`
	AvoidedCO2Kg     float64 `json:"avoided_co2_kg"`
	CarbonUnknownKWh float64 `json:"avoided_kwh_carbon_unknown"`
	// Utilisation is work done over powered capacity (GPU-hours, or core-hours on CPU pools).
	Utilisation float64 `json:"utilisation"`
	// Waits are seconds from submission to start, over the jobs that ran.
	WaitP50  float64 `json:"wait_p50_s"`
	WaitP95  float64 `json:"wait_p95_s"`
	WaitP99  float64 `json:"wait_p99_s"`
	WaitMean float64 `json:"wait_mean_s"`
	// ExtraWaitP95 and ExtraWaitMean are the increase over always-on (set by Compare).
	ExtraWaitP95  float64 `json:"extra_wait_p95_s"`
	ExtraWaitMean float64 `json:"extra_wait_mean_s"`
	PowerOns      int     `json:"power_ons"`
	PowerOffs     int     `json:"power_offs"`
	// OnsPerServerDay and CyclesPerServerDay are power-ons and power-offs per server per day
	// of the trace's span (Days).
	OnsPerServerDay    float64 `json:"power_ons_per_server_day"`
	CyclesPerServerDay float64 `json:"cycles_per_server_day"`
	JobsRun            int     `json:"jobs_run"`
	// NotRun lists the fleet's Env.Unrunnable first, then the jobs this policy gave up on or
	// never started.
	NotRun []NotRun `json:"not_run"`
	// Moves are the moves made (servers rebalancing emptied), LostUnitHours the work they lost
	// (each moved job's run so far plus the restart cost), in GPU-hours (core-hours on CPU
	// pools), and LostShare that over the work the trace holds.
	Moves         int     `json:"moves"`
	LostUnitHours float64 `json:"lost_unit_hours"`
	LostShare     float64 `json:"lost_share"`
	// Violations are power-offs refused because the server held a job, and jobs moved that
	// were not requeueable (both must be 0); Ignored are actions the state did not allow (a
	// stale plan); PlannerCalls how often the policy decided, ActingCalls how many of those
	// decisions started an action (the rest found nothing to do: a replay's cost lies largely
	// in them).
	Violations   int `json:"violations"`
	Ignored      int `json:"ignored_actions"`
	PlannerCalls int `json:"policy_calls"`
	ActingCalls  int `json:"policy_calls_acting"`
	// Days is the trace's span (Env.Days), the same in every row: the per-day figures and the
	// avoided energy are counted over it, not over the row's own replay, which ends when its
	// last job does (later where jobs waited).
	Days float64 `json:"days"`
	// Classes are the waits of each class's jobs, by class name.
	Classes []ClassWaits `json:"classes"`
	// Series and Waits feed the plots.
	Series []Sample `json:"-"`
	Waits  []int64  `json:"-"`
}

// ClassWaits is how long the jobs of one class waited (seconds, over those that ran).
type ClassWaits struct {
	Class string  `json:"class"`
	Jobs  int     `json:"jobs"`
	P50   float64 `json:"wait_p50_s"`
	P95   float64 `json:"wait_p95_s"`
	Mean  float64 `json:"wait_mean_s"`
}

// waitsOf sorts waits and gives their median, 95th percentile and mean.
func waitsOf(waits []int64) (sorted []int64, p50, p95, mean float64) {
	sorted = slices.Clone(waits)
	slices.Sort(sorted)
	var sum float64
	for _, v := range sorted {
		sum += float64(v)
	}
	return sorted, quantile(sorted, 0.50), quantile(sorted, 0.95), ratio(sum, float64(len(sorted)))
}

// result turns the replay's accounting into a Result.
func (w *world) result(name string) Result {
	e, a := w.env, &w.acct
	r := Result{Policy: name, Cost: a.cost(), Currency: e.Config.Accounting.Currency, PowerOns: a.powerOns, PowerOffs: a.powerOffs,
		JobsRun: len(a.waits), Violations: a.violations + a.badMoves, Ignored: a.ignored, PlannerCalls: a.plannerCalls,
		ActingCalls: a.actingCalls,
		Moves:       a.moves, LostUnitHours: a.lostUnits, LostShare: ratio(a.lostUnits, e.BusyUnits),
		Days: e.Days(), Series: a.series}
	r.NotRun = append(append([]NotRun{}, e.Unrunnable...), a.notRun...)
	var capHours float64
	for p, sec := range a.onSec {
		h := float64(sec) / 3600
		r.ServerHours += h
		r.EnergyKWh += h * e.Pools[p].Watts / 1000
		capHours += h * a.unitsPerSrv[p]
		e.avoided(&r, p, h)
	}
	r.LowerBoundHours = e.LowerBound
	if len(a.dropped) > 0 {
		dropped := map[int]bool{}
		for _, i := range a.dropped {
			dropped[i] = true
		}
		r.LowerBoundHours = e.bound(func(i int) bool { return e.runnable[i] && !dropped[i] }).total
	}
	r.XLowerBound = ratio(r.ServerHours, r.LowerBoundHours)
	r.Utilisation = ratio(a.busyUnits, capHours)
	if days := r.Days; days > 0 && len(e.Servers) > 0 {
		r.OnsPerServerDay = float64(a.powerOns) / float64(len(e.Servers)) / days
		r.CyclesPerServerDay = float64(a.powerOffs) / float64(len(e.Servers)) / days
	}
	r.Waits, r.WaitP50, r.WaitP95, r.WaitMean = waitsOf(a.waits)
	r.WaitP99 = quantile(r.Waits, 0.99)
	for _, c := range slices.Sorted(maps.Keys(a.byClass)) {
		_, p50, p95, mean := waitsOf(a.byClass[c])
		r.Classes = append(r.Classes, ClassWaits{Class: c, Jobs: len(a.byClass[c]), P50: p50, P95: p95, Mean: mean})
	}
	return r
}

// LowerBoundResult is the lower bound as a row: perfect packing, no delay, no waiting.
func (e *Env) LowerBoundResult() Result {
	r := Result{Policy: "lower-bound", ServerHours: e.LowerBound, XLowerBound: 1, LowerBoundHours: e.LowerBound, Currency: e.Config.Accounting.Currency,
		JobsRun: len(e.Jobs) - len(e.Unrunnable), NotRun: append([]NotRun{}, e.Unrunnable...), Days: e.Days()}
	var capHours float64
	for p, h := range e.poolBound {
		// The bound has no timing: on a tariff, its hours cost the week's mean price.
		r.Cost += h * e.Pools[p].PerHour
		r.EnergyKWh += h * e.Pools[p].Watts / 1000
		capHours += h * float64(e.Pools[p].capacity())
		e.avoided(&r, p, h)
	}
	r.Utilisation = ratio(e.boundUnits, capHours)
	return r
}

// avoided adds to r the energy pool p did not draw in its hours powered against all its
// servers on over the trace's span (Env.Days, the same for every row, so the rows' avoided
// energy ranks as their energy does, the lower bound's highest), and that energy's carbon where
// the pool's region (its labels' region) has a number: a query cannot be asked in a replay, so
// its carbon is unknown. A pool that drew more than that (a row whose jobs waited past the
// span, always-on's among them) avoided nothing.
func (e *Env) avoided(r *Result, p int, hours float64) {
	pl := e.Pools[p]
	kwh := (float64(pl.Servers)*e.Days()*24 - hours) * pl.Watts / 1000
	if kwh <= 0 {
		return
	}
	r.AvoidedKWh += kwh
	if c := e.Config.Accounting.CarbonFor(e.Config.Pools[p].Labels["region"]); c != nil && c.GramsPerKWh != nil {
		r.AvoidedCO2Kg += kwh * *c.GramsPerKWh / 1000
		return
	}
	r.CarbonUnknownKWh += kwh
}

// quantile is the nearest-rank quantile of sorted values (0 when empty).
func quantile(sorted []int64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return float64(sorted[max(i, 0)])
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
