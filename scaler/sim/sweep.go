package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/rotahq/rota/scaler/config"
)

// SweepTimeouts are the idle timeouts a sweep runs the baseline at.
func SweepTimeouts() []time.Duration {
	return []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute,
		20 * time.Minute, 30 * time.Minute, time.Hour}
}

// Variant is rota under the environment's policy with one knob moved.
type Variant struct {
	Name string
	Set  func(*config.Policy)
}

// SweepVariants are the settings of rota's knobs a sweep runs besides the config's own: the
// quantile its warm spares cover (none, 0.5, 0.95) and the wear a cycle is priced at (half,
// double), the knobs that trade waiting for server-hours and cycles; and the break-even rule
// on the learned idle periods switched the other way (on where the config leaves it off), which
// moves rota toward the timeouts' frontier rather than along it where idle periods differ by
// the server's rank (NASA: half the distance at the defaults; beyond it with no spares).
func SweepVariants(pol *config.Policy) []Variant {
	wear, periods := pol.BreakEven.WearTime, !pol.BreakEven.IdlePeriods
	return []Variant{
		{"rota spares.quantile=0", func(p *config.Policy) { p.Spares.Quantile = 0 }},
		{"rota spares.quantile=0.5", func(p *config.Policy) { p.Spares.Quantile = 0.5 }},
		{"rota spares.quantile=0.95", func(p *config.Policy) { p.Spares.Quantile = 0.95 }},
		{fmt.Sprintf("rota break_even.wear_time=%s", time.Duration(wear/2)), func(p *config.Policy) { p.BreakEven.WearTime = wear / 2 }},
		{fmt.Sprintf("rota break_even.wear_time=%s", time.Duration(wear*2)), func(p *config.Policy) { p.BreakEven.WearTime = wear * 2 }},
		{fmt.Sprintf("rota break_even.idle_periods=%t", periods), func(p *config.Policy) { p.BreakEven.IdlePeriods = periods }},
	}
}

// SweepPolicies is the baseline at every timeout of SweepTimeouts and at baseline (the
// timeout rota is judged against) where it is not one of them, in order, rota under the
// config's policy, and rota at each of SweepVariants.
func SweepPolicies(e *Env, baseline time.Duration) []Policy {
	timeouts := SweepTimeouts()
	if !slices.Contains(timeouts, baseline) {
		timeouts = append(timeouts, baseline)
		slices.Sort(timeouts)
	}
	var out []Policy
	for _, t := range timeouts {
		out = append(out, IdleTimeout(t))
	}
	out = append(out, Rota("rota"))
	for _, v := range SweepVariants(&e.Config.Policy) {
		c := *e.Config
		v.Set(&c.Policy)
		out = append(out, RotaWith(v.Name, &c))
	}
	return out
}
