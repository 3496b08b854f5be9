package loop

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

// observation is what one pass read from the world.
type observation struct {
	// at is when the reads began: each BMC was read after it.
	at        time.Time
	power     map[string]bmc.State
	jobs      map[string]fleet.JobsView
	demand    []fleet.Demand
	jobsOK    bool
	jobsErr   error
	telemetry map[string]fleet.TelemetryView
	teleOK    bool
}

func (o observation) forRepair() executor.Observed {
	return executor.Observed{At: o.at, Power: o.power, Jobs: o.jobs, JobsKnown: o.jobsOK}
}

// observe reads the BMCs (at most bmc.concurrency at once), the job manager and Prometheus,
// each call bounded by its configured timeout. A source that fails is logged and marked
// unknown; the pass goes on without it.
func (l *Loop) observe(ctx context.Context, now time.Time) observation {
	names := l.nodeNames()
	o := observation{at: now, power: l.readPower(ctx, names, now)}
	var err error
	jctx, cancel := context.WithTimeout(ctx, time.Duration(l.cfg.Jobs.Timeout))
	defer cancel()
	o.jobs, err = l.o.Jobs.Nodes(jctx)
	if err == nil {
		o.demand, err = l.o.Jobs.Demand(jctx)
	}
	if o.jobsOK = err == nil; !o.jobsOK {
		l.log.WithError(err).Warn("job manager not read: no scale-down this pass")
		o.jobs, o.demand, o.jobsErr = nil, nil, err
	} else {
		o.jobs, o.demand = chargedTo(l.cfg.Accounting.Chargeback, o.jobs, o.demand)
	}
	pctx, cancelProm := context.WithTimeout(ctx, time.Duration(l.cfg.Prometheus.Timeout))
	defer cancelProm()
	o.telemetry, err = l.o.Telemetry.Read(pctx, names, now)
	if o.teleOK = err == nil; !o.teleOK {
		l.log.WithError(err).Warn("telemetry not read: no server counts as idle this pass")
		o.telemetry = nil
	}
	return o
}

// chargedTo is the job manager's jobs and demand with each account (Slurm's account, the exec
// adapter's department, a pod's namespace) as the department it is charged as
// (accounting.chargeback.accounts): quotas and the books read the same departments.
func chargedTo(cb config.Chargeback, jobs map[string]fleet.JobsView, demand []fleet.Demand) (map[string]fleet.JobsView, []fleet.Demand) {
	if len(cb.Accounts) == 0 {
		return jobs, demand
	}
	out := make(map[string]fleet.JobsView, len(jobs))
	for name, v := range jobs {
		v.Running = slices.Clone(v.Running)
		for i := range v.Running {
			v.Running[i].Department = cb.Department(v.Running[i].Department)
		}
		out[name] = v
	}
	demand = slices.Clone(demand)
	for i := range demand {
		demand[i].Department = cb.Department(demand[i].Department)
	}
	return out, demand
}

func (l *Loop) readPower(ctx context.Context, names []string, now time.Time) map[string]bmc.State {
	out := make(map[string]bmc.State, len(names))
	var mu sync.Mutex
	sem := make(chan struct{}, max(l.cfg.BMC.Concurrency, 1))
	var wg sync.WaitGroup
	for _, n := range names {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			bctx, cancel := context.WithTimeout(ctx, time.Duration(l.cfg.BMC.OperationTimeout))
			defer cancel()
			s, err := l.o.Power.State(bctx, n)
			if err != nil {
				l.log.WithFields(logrus.Fields{"node": n}).WithError(err).Warn("power state not read")
				s = bmc.StateUnknown
			}
			l.readDraw(bctx, n, s, now)
			mu.Lock()
			out[n] = s
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func (l *Loop) nodeNames() []string {
	var out []string
	for _, p := range l.cfg.Pools {
		for _, n := range p.Nodes {
			out = append(out, n.Name)
		}
	}
	return out
}

// snapshot joins the store (after repair) with the observation; it returns the records read.
func (l *Loop) snapshot(o observation, now time.Time) (fleet.Snapshot, map[string]store.Node, error) {
	recs, err := l.o.Store.Nodes()
	if err != nil {
		return fleet.Snapshot{}, nil, fmt.Errorf("reading the store: %w", err)
	}
	g, err := l.o.Store.Global()
	if err != nil {
		return fleet.Snapshot{}, nil, fmt.Errorf("reading the store: %w", err)
	}
	snap := fleet.Snapshot{
		Demand: o.demand, Telemetry: o.teleOK, JobsKnown: o.jobsOK,
		NoJobManager: !l.cfg.Jobs.ReportsAllocation(),
		Paused:       g.Paused, History: g.History(now),
	}
	for _, p := range l.cfg.Pools {
		for _, cn := range p.Nodes {
			ref, _ := l.cfg.Node(cn.Name)
			snap.Nodes = append(snap.Nodes, node(ref, recs[cn.Name], o, now))
		}
	}
	return snap, recs, nil
}

func node(ref config.NodeRef, r store.Node, o observation, now time.Time) fleet.Node {
	name := ref.Node.Name
	power, ok := o.power[name]
	if !ok {
		power = bmc.StateUnknown
	}
	state := r.State
	if state == "" || (power == bmc.StateUnknown && !state.InFlight()) {
		// A resting server whose BMC cannot be read is Unknown: it gets no power command.
		state = fleet.StateUnknown
	}
	return fleet.Node{
		Name: name, Pool: ref.Pool.Name,
		Region: ref.Label("region"), Department: ref.Label("department"),
		State: state, Since: r.Since, Power: power,
		Pinned: r.Pinned, Maintenance: r.Maintenance,
		Jobs: o.jobs[name], Telemetry: o.telemetry[name],
		LastOn: r.LastOn, LastOff: r.LastOff, CyclesToday: r.CyclesToday(now),
		Failures: r.Failures, RetryAfter: r.RetryAfter,
	}
}
