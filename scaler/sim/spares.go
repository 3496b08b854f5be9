package sim

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/plan"
)

// SparesNote says which pools keep no warm spares at all because policy.spares.max_share of
// their servers rounds down to none (plan.SparesCap), and, with sweep, which of the sweep's
// rows therefore replay as rota does or differ only on the other pools; "" when every pool can
// keep one. Rows that equal rota's with nothing said made users think the knobs were ignored.
func SparesNote(e *Env, sweep bool) string {
	sp := &e.Config.Policy.Spares
	var capped []string
	with := 0 // pools of some server
	for _, p := range e.Pools {
		if p.Servers == 0 {
			continue
		}
		with++
		if plan.SparesCap(sp, p.Servers) == 0 {
			capped = append(capped, fmt.Sprintf("%s (%d servers)", p.Name, p.Servers))
		}
	}
	if len(capped) == 0 {
		return ""
	}
	pools := "pool " + capped[0] + " keeps"
	if len(capped) > 1 {
		pools = "pools " + strings.Join(capped, ", ") + " keep"
	}
	n := pools + " no warm spares: policy.spares.max_share is 0"
	if sp.MaxShare > 0 {
		n = fmt.Sprintf("%s no warm spares: their cap, policy.spares.max_share %g of a pool's servers rounded down, is none under %d servers",
			pools, sp.MaxShare, fewestWithSpare(sp))
	}
	rows := sparesRows(&e.Config.Policy)
	switch {
	case !sweep || len(rows) == 0:
	case len(capped) == with:
		n += "; so " + strings.Join(rows, ", ") + " replay as rota does"
	default:
		n += "; so " + strings.Join(rows, ", ") + " differ from rota only on the other pools"
	}
	return n
}

// fewestWithSpare is the fewest servers a pool keeps a spare from, max_share above 0.
func fewestWithSpare(sp *config.Spares) int {
	n := int(math.Ceil(1 / sp.MaxShare))
	for n > 1 && plan.SparesCap(sp, n-1) > 0 {
		n--
	}
	for plan.SparesCap(sp, n) == 0 {
		n++
	}
	return n
}

// sparesRows names the sweep's variants that move only how many spares a pool wants (the
// spares' settings but their cap): under a cap of none they change nothing.
func sparesRows(pol *config.Policy) []string {
	var out []string
	for _, v := range SweepVariants(pol) {
		p := *pol
		v.Set(&p)
		if p.Spares.MaxShare != pol.Spares.MaxShare {
			continue
		}
		p.Spares = pol.Spares
		if reflect.DeepEqual(p, *pol) {
			out = append(out, v.Name)
		}
	}
	return out
}
