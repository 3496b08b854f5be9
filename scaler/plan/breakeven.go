package plan

import (
	"fmt"
	"iter"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/learn"
)

// Break-even power-off. An idle server is powered off when staying on is expected to cost
// more than a power cycle. A cycle costs the energy of a boot and a shutdown at the pool's
// cost per hour, policy.break_even.wear_cost, and the waiting it causes: the work expected to
// arrive during a boot (learned; one job without history) waits a boot, priced per job-hour
// and per GPU-hour. An idle hour costs the pool's cost per hour (a pool without a cost counts
// one per server-hour, as the prices then are).
//
// With history (package learn), the rule is the probabilistic one of dynamic power
// management: for a server that is the level-th warm server of its pool, the chance F(t) that
// the pool's need rises by level within t is the chance it is needed within t. Staying on for
// t and then powering off costs idle·E[min(X, t)] + (1-F(t))·cycle, powering off now a cycle:
// the server stays on when some horizon t has F(t)·cycle > idle·E[min(X, t)], with
// E[min(X, t)] the integral of 1-F up to t. Without history it is the ski-rental rule: off
// once idle for the break-even time cycle/idle, never worse than twice the best possible.

// costs is a pool's price of a cycle and of an idle hour, with the parts of a cycle.
type costs struct {
	cycle, idle        float64
	energy, wear, wait float64
	arrivals           float64
	boot, shutdown     time.Duration
}

// costs is the pool's prices, worked out once a pass: those of the pass before, with the
// rule's answers, while what they are worked out from is the same (see ruleKey).
func (p *pass) costs(pl *pool) costs {
	if !pl.priced {
		pl.priced = true
		if k := ruleKeyOf(pl, p.pol, &p.cfg.BMC); !pl.rule.valid || pl.rule.key != k {
			pl.rule = ruleMemo{key: k, valid: true, prices: poolCosts(pl.cfg, p.pol, &p.cfg.BMC, pl.view),
				answers: emptied(pl.rule.answers)}
		}
	}
	return pl.rule.prices
}

// ruleMemo is a pool's prices and the break-even rule's answers (by level and cycles of the
// day), for the settings and View in key; valid once worked out.
type ruleMemo struct {
	key     ruleKey
	valid   bool
	prices  costs
	answers map[dpmKey]dpmMemo
}

// ruleKey is what a pool's prices and the rule's answers are worked out from: the pool's and
// the policy's settings, and the pool's View less what says what its distributions were read
// for (origins, hour, regime, need, until), which changes far more often than they do.
type ruleKey struct {
	view                         learn.View
	cost                         float64
	bootTimeout, gracefulTimeout time.Duration
	gpus, maxCyclesPerDay        int
	breakEven                    config.BreakEven
}

func ruleKeyOf(pl *pool, pol *config.Policy, bmc *config.BMCLimits) ruleKey {
	k := ruleKey{
		view: pl.view, cost: pl.cfg.Cost.PlanPerHour(),
		bootTimeout: time.Duration(pl.cfg.BootTimeout), gracefulTimeout: time.Duration(bmc.GracefulTimeout),
		gpus: pl.cfg.Profile.GPUs, maxCyclesPerDay: pol.Node.MaxCyclesPerDay, breakEven: pol.BreakEven,
	}
	k.view.Origins, k.view.HourOfWeek, k.view.Regime, k.view.Need, k.view.Until = 0, 0, 0, 0, time.Time{}
	// Neither the prices nor the answers kept read the idle periods (the rule on them is asked
	// afresh for each server): a pool's learning them keeps what was worked out.
	k.view.Idle = nil
	return k
}

// typicalShutdown is what a shutdown is taken to last before any was seen, unless
// bmc.graceful_timeout is shorter: the hard off follows that, so no shutdown lasts longer.
const typicalShutdown = time.Minute

// Before a boot was seen it is taken to last the pool's boot_timeout (rota's bound on it).
func poolCosts(pl *config.Pool, pol *config.Policy, bmc *config.BMCLimits, v learn.View) costs {
	be := pol.BreakEven
	c := costs{idle: pl.Cost.PlanPerHour(), boot: v.Boot, shutdown: v.Shutdown, arrivals: 1}
	if c.idle <= 0 {
		c.idle = 1
	}
	if c.boot <= 0 {
		c.boot = time.Duration(pl.BootTimeout)
	}
	if c.shutdown <= 0 {
		c.shutdown = min(typicalShutdown, time.Duration(bmc.GracefulTimeout))
	}
	if v.Ready {
		c.arrivals = max(1, v.Mean(c.boot))
	}
	c.energy = c.idle * (c.boot + c.shutdown).Hours()
	c.wear = be.WearCost + c.idle*time.Duration(be.WearTime).Hours()
	c.wait = c.arrivals * c.boot.Hours() * (be.WaitPerJobHour + float64(pl.Profile.GPUs)*be.WaitPerGPUHour)
	c.cycle = c.energy + c.wear + c.wait
	return c
}

// BreakEvenTime is how long an idle server of pool that was powered off cycles times in the
// last 24 hours stays on before it is powered off while the pool has no history (v not
// Ready): what a cycle costs over what an idle hour costs.
func BreakEvenTime(pl *config.Pool, pol *config.Policy, bmc *config.BMCLimits, v learn.View, cycles int) time.Duration {
	return poolCosts(pl, pol, bmc, v).spending(cycles, pol.Node.MaxCyclesPerDay).breakEven()
}

// IdlePeriodsPrice is what a cycle and an idle hour cost a server of pool pl with cycles
// power-offs in the day, as the rule on the learned idle periods (policy.break_even.idle_periods)
// weighs them: a replay works out with learn.Idle.Verdicts when that rule's verdict flips for
// an idle server rather than calling the planner at every minute of its idle time.
func IdlePeriodsPrice(pl *config.Pool, pol *config.Policy, bmc *config.BMCLimits, v learn.View, cycles int) (cycle, idle float64) {
	c := poolCosts(pl, pol, bmc, v).spending(cycles, pol.Node.MaxCyclesPerDay)
	return c.cycle, c.idle
}

// MinIdleAtRisk is how many learned idle periods must have lasted as long as a server has been
// idle before the rule on them decides for it (learn.Idle.Decide's minAtRisk).
const MinIdleAtRisk = minAtRisk

// maxBreakEven is the longest break-even time. A cycle dearer than a year of idling (a
// wear_cost of 10^12, which validates, on a pool at 1 an hour) keeps an idle server on for a
// year: its hours made a time.Duration past the largest, which came out negative, and the
// server was powered off at once.
const maxBreakEven = 365 * 24 * time.Hour

func (c costs) breakEven() time.Duration {
	hours := c.cycle / c.idle
	if !(hours < maxBreakEven.Hours()) {
		return maxBreakEven
	}
	return time.Duration(hours * float64(time.Hour)).Round(time.Second)
}

// spending prices the cycle budget: the day's cycles of a server are max_cycles_per_day, so
// each one spent makes the next dearer (wear times cap/(cap-used)), and they go where idle
// spells are longest instead of running out early and leaving the server on for the rest
// of the day.
func (c costs) spending(used, budget int) costs {
	if budget > used && used > 0 {
		extra := c.wear * (float64(budget)/float64(budget-used) - 1)
		c.wear += extra
		c.cycle += extra
	}
	return c
}

func (c costs) words() string {
	return fmt.Sprintf("a cycle costs %.3g (boot and shutdown %.3g, wear %.3g, waiting %.3g), an idle hour %.3g",
		c.cycle, c.energy, c.wear, c.wait, c.idle)
}

// verdict is the break-even rule's answer for an idle server, the level-th warm server of
// its pool: why it stays on (a skip reason), or that it may go (reason ""), with the numbers
// that word it (see words).
type verdict struct {
	reason fleet.Reason
	level  int
	c      costs
	// periods: the rule on the learned idle periods decided (policy.break_even.idle_periods),
	// ans its answer for the server of rank idle for age.
	periods bool
	ans     learn.IdleAnswer
	rank    int
	age     time.Duration
	// ready: the pool has history, and m is the rule's answer; without, the server has been
	// idle for idle, and stays on until breakEven.
	ready           bool
	m               dpmMemo
	idle, breakEven time.Duration
}

// breakEven is the rule's verdict on idle server i, the level-th warm server of its pool.
func (p *pass) breakEven(i, level int) verdict {
	pl, n := p.servers[i].pool, p.servers[i].node
	v := verdict{level: level, c: p.costs(pl).spending(n.CyclesToday, p.pol.Node.MaxCyclesPerDay), ready: pl.view.Ready}
	if p.idlePeriods(i, &v) {
		return v
	}
	if !v.ready {
		// Ski rental: on until idle for the break-even time.
		v.breakEven = v.c.breakEven()
		v.idle = time.Duration(p.pol.Idle.Window)
		if !n.IdleSince.IsZero() {
			v.idle = max(p.now.Sub(n.IdleSince), 0)
		}
		if v.idle < v.breakEven {
			v.reason = fleet.SkipBreakEven
		}
		return v
	}
	v.m = pl.dpm(level, n.CyclesToday, v.c)
	if v.m.gain > 0 {
		v.reason = fleet.SkipBreakEven
	}
	return v
}

// minAtRisk is how many learned idle periods must have lasted as long as a server has been
// idle (and bound the horizons read) before the idle-period rule decides for it.
const minAtRisk = 20

// idlePeriods is the rule on the pool's learned idle periods (policy.break_even.idle_periods):
// for idle server i, by its rank in placement order, the part of the day its idle period
// began in and how long it has lasted (learn.Idle.Decide). It reports false where too few
// periods were seen (or the key is off): the rule on the rise of need decides.
func (p *pass) idlePeriods(i int, v *verdict) bool {
	s, n, rank := &p.servers[i], p.servers[i].node, p.state[i].idleRank
	if !p.pol.BreakEven.IdlePeriods || s.pool.view.Idle == nil || n.IdleSince.IsZero() {
		return false
	}
	age := max(p.now.Sub(n.IdleSince), 0)
	ans := s.pool.view.Idle.Decide(rank, n.IdleSince, age, v.c.cycle, v.c.idle, MinIdleAtRisk)
	if !ans.Known {
		return false
	}
	v.periods, v.ans, v.rank, v.age = true, ans, rank, age
	if ans.Stay {
		v.reason = fleet.SkipBreakEven
	}
	return true
}

// words are the verdict's numbers, for the skip's detail or the action's; view is the pool's.
func (v *verdict) words(view *learn.View) string {
	if v.periods {
		at := fmt.Sprintf("rank %d, idle %s; %d periods lasted as long; %s", v.rank, v.age.Round(time.Second), v.ans.AtRisk, v.c.words())
		if v.reason != "" {
			return fmt.Sprintf("P(a job within %s) %.2f x cycle %.3g > idle %.3g (%s)", v.ans.Best, v.ans.F, v.c.cycle, v.c.idle*v.ans.E, at)
		}
		return "no horizon where staying on pays (" + at + ")"
	}
	if !v.ready {
		return fmt.Sprintf("idle %s, break-even %s: %s (no history yet)", v.idle.Round(time.Second), v.breakEven, v.c.words())
	}
	at := fmt.Sprintf("level %d; %s", v.level, view.Context())
	if v.reason != "" {
		return fmt.Sprintf("P(needed within %s) %.2f x cycle %.3g > idle %.3g (%s; %s)",
			v.m.best, v.m.f, v.c.cycle, v.c.idle*v.m.e, at, v.c.words())
	}
	return fmt.Sprintf("P(needed within 2h) %.2f; no horizon where staying on pays (%s; %s)",
		view.AtLeast(v.level, learn.Horizon(learn.Horizons-1)), at, v.c.words())
}

// offSaving is what freeing server i of pool pl now, as its level-th warm server, is expected
// to save against keeping it on for d and then powering it off: the other side of the rule
// above. With history, idle·E[min(X, d)] - F(d)·cycle, X the time until the pool needs it
// back, d cut to the longest horizon (2 h): what was learned says nothing of the time past
// it, and counting the server off there with the chance it was not needed by 2 h would price
// a job's long time limit as hours off, and moves would lose more work than they save
// (TestMoveWeighsTheTimeOff, "needed back within hours").
// Without history, idle·d - cycle, as if it were not needed again within d.
func (p *pass) offSaving(i, level int, d time.Duration) float64 {
	pl := p.servers[i].pool
	c := p.costs(pl).spending(p.servers[i].node.CyclesToday, p.pol.Node.MaxCyclesPerDay)
	if !pl.view.Ready {
		return c.idle*d.Hours() - c.cycle
	}
	var last horizonStep
	for st := range horizonSteps(&pl.view, level, d) {
		last = st
	}
	return c.idle*last.e - last.f*c.cycle
}

// horizonStep is the learned view at horizon t: F(t), the chance the pool's need rises by
// level within t, and E[min(X, t)] in hours, the integral of 1-F up to t.
type horizonStep struct {
	t    time.Duration
	f, e float64
}

// horizonSteps walks the learned horizons up to d (the last step at d when d falls before
// the longest), F linear between horizons.
func horizonSteps(v *learn.View, level int, d time.Duration) iter.Seq[horizonStep] {
	return func(yield func(horizonStep) bool) {
		var prev horizonStep
		for h := range learn.Horizons {
			t := min(learn.Horizon(h), d)
			f := v.AtLeast(level, t)
			st := horizonStep{t: t, f: f, e: prev.e + (t-prev.t).Hours()*(1-(f+prev.f)/2)}
			if !yield(st) || t == d {
				return
			}
			prev = st
		}
	}
}

// dpmMemo is one answer of the break-even rule. The idle servers that stay on in a pass share
// one level, and their cycles of the day take a few values: each pair is worked out once
// while the pool's prices and View are the same (see ruleMemo).
type dpmMemo struct {
	best       time.Duration
	gain, f, e float64
}

type dpmKey struct{ level, cycles int }

// dpm is the rule's answer for the pool's level-th warm server cycled cycles times today,
// at prices c (which follow from the cycles).
func (pl *pool) dpm(level, cycles int, c costs) dpmMemo {
	k := dpmKey{level, cycles}
	if m, ok := pl.rule.answers[k]; ok {
		return m
	}
	var m dpmMemo
	m.best, m.gain, m.f, m.e = dpm(&pl.view, level, c)
	pl.rule.answers[k] = m
	return m
}

// dpm finds the horizon where staying on pays most: its time, the gain (>0: stay on), F(t)
// and E[min(X, t)] in hours.
func dpm(v *learn.View, level int, c costs) (best time.Duration, gain, fBest, eBest float64) {
	first := true
	for st := range horizonSteps(v, level, learn.Horizon(learn.Horizons-1)) {
		if g := st.f*c.cycle - c.idle*st.e; g > gain || first {
			best, gain, fBest, eBest = st.t, g, st.f, st.e
		}
		first = false
	}
	return best, gain, fBest, eBest
}
