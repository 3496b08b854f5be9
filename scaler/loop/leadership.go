package loop

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotahq/rota/scaler/api"
)

// Leadership says whether this rota leads (plans and acts) and who does: package ha's
// elector for a highly available pair or trio on etcd, or its Standalone for one rota on a
// bbolt file. Safe for concurrent use.
type Leadership interface {
	Leading() bool
	Status() api.HAStatus
}

// leading reports whether this rota leads (always, without a Leadership).
func (l *Loop) leading() bool { return l.o.Leadership == nil || l.o.Leadership.Leading() }

// refuseWrite is the error of an operator's write (pin, maintenance, pause, wake) asked of a
// rota that does not lead: it names the leader, where the caller may send it. Nil when this
// rota leads.
func (l *Loop) refuseWrite() error {
	if l.leading() {
		return nil
	}
	st := l.o.Leadership.Status()
	return &api.NotLeaderError{Self: st.Self, Leader: st.Leader, LeaderURL: st.LeaderURL}
}

// storedStatus is the fleet as the store records it, for a rota that has not passed in this
// term (a follower: it reads no BMC and decides nothing): each server's recorded state,
// since, pin and maintenance, with no power reading and no verdict.
func (l *Loop) storedStatus(ctx context.Context) (api.Status, error) {
	st := api.Status{DryRun: l.cfg.Policy.DryRun, Currency: l.cfg.Accounting.Currency}
	g, err := l.o.Store.Global()
	if err != nil {
		return st, fmt.Errorf("reading the store: %w", err)
	}
	recs, err := l.o.Store.Nodes()
	if err != nil {
		return st, fmt.Errorf("reading the store: %w", err)
	}
	st.Paused, st.PauseNote = g.Paused, g.PauseNote
	for _, pl := range l.cfg.Pools {
		ps := api.PoolStatus{Name: pl.Name, Servers: len(pl.Nodes)}
		for _, cn := range pl.Nodes {
			ns := recordStatus(cn.Name, recs[cn.Name])
			ns.Pool, ns.CostPerHour, ns.Currency = pl.Name, pl.Cost.PerHour(), pl.Cost.Currency
			st.Nodes = append(st.Nodes, ns)
			if tally(&st, ns, pl.Cost) {
				ps.Powered++
			}
		}
		st.Pools = append(st.Pools, ps)
	}
	st.Nodes = append(st.Nodes, l.leftStatus(recs)...)
	return st, ctx.Err()
}

// leaderOnly is a collector that yields its metrics only while this rota leads: a follower
// exports no fleet view (the rules would see each server twice) and no pass results (a
// follower's never-set last-pass time would read as a scaler that stopped reconciling).
type leaderOnly struct {
	prometheus.Collector
	leading func() bool
}

func (c leaderOnly) Collect(ch chan<- prometheus.Metric) {
	if c.leading() {
		c.Collector.Collect(ch)
	}
}
