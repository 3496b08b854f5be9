package loop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

// historyLen is how many audit records Explain returns.
const historyLen = 20

func (l *Loop) lastPass() pass {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// Status is the fleet as of the last pass of this term; while this rota does not lead, or has
// not passed yet in its term, the fleet as the store records it (storedStatus). The
// leadership (Status.HA) is always there, even when the store cannot be read: a rota cut off
// from etcd still says why it stopped.
func (l *Loop) Status(ctx context.Context) (api.Status, error) {
	var ha *api.HAStatus
	if l.o.Leadership != nil {
		h := l.o.Leadership.Status()
		ha = &h
	}
	p := l.lastPass()
	if !l.leading() || p.at.IsZero() {
		st, err := l.storedStatus(ctx)
		st.HA = ha
		if err != nil && ha != nil {
			st.LastError = err.Error()
			return st, nil
		}
		return st, err
	}
	// What the executor recorded since the pass; unread, the pass's view alone.
	recs, err := l.o.Store.Nodes()
	if err != nil {
		recs = nil
	}
	st := l.passStatus(p, recs)
	if st.Paused { // its note is in the store alone: read only then (an etcd round trip)
		if g, err := l.o.Store.Global(); err == nil && g.Paused {
			st.PauseNote = g.PauseNote
		}
	}
	st.HA = ha
	return st, nil
}

// passStatus is the fleet as pass p saw and decided it, with what the executor recorded in
// the store since (recs, nil when unread): a server whose record changed since the pass began
// shows the state the executor reached, and one with an action under way shows it (InFlight).
func (l *Loop) passStatus(p pass, recs map[string]store.Node) api.Status {
	st := api.Status{
		Paused: p.snap.Paused, DryRun: l.cfg.Policy.DryRun, LastPass: p.at, LastPassOK: p.ok, Currency: l.cfg.Accounting.Currency,
		Telemetry: p.snap.Telemetry, JobsKnown: p.snap.JobsKnown, JobsError: p.jobsErr,
	}
	if p.err != nil {
		st.LastError = p.err.Error()
	}
	pools := map[string]*api.PoolStatus{}
	for _, pl := range l.cfg.Pools {
		st.Pools = append(st.Pools, api.PoolStatus{Name: pl.Name, Servers: len(pl.Nodes), Desired: p.dec.Desired[pl.Name]})
	}
	for i := range st.Pools {
		pools[st.Pools[i].Name] = &st.Pools[i]
	}
	for _, n := range p.snap.Nodes {
		ns := l.liveStatus(n, p, recs[n.Name])
		st.Nodes = append(st.Nodes, ns)
		if tally(&st, ns, l.cfg.Pool(n.Pool).Cost) {
			pools[n.Pool].Powered++
		}
	}
	st.Nodes = append(st.Nodes, l.leftStatus(recs)...)
	return st
}

// leftStatus are the servers no longer in the config whose records the store still holds
// (taken out of the inventory with an action under way, drained or powered on by rota), by
// name: no pass plans them and the executor settles them (executor.LeftConfig says how), so
// only their records say where they are. Pool-less, they count in no pool and no spend.
func (l *Loop) leftStatus(recs map[string]store.Node) []api.NodeStatus {
	inConfig := l.cfg.NodeNames()
	var out []api.NodeStatus
	for name, r := range recs {
		if !inConfig[name] {
			out = append(out, leftNodeStatus(name, r))
		}
	}
	slices.SortFunc(out, func(a, b api.NodeStatus) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// leftNodeStatus is server name, no longer in the config, as its record r shows it, with what
// rota does or did with it.
func leftNodeStatus(name string, r store.Node) api.NodeStatus {
	ns := recordStatus(name, r)
	ns.LeftConfig = executor.LeftConfig(r)
	return ns
}

// recordStatus is server name as its record r shows it (Unknown where it has no state yet).
func recordStatus(name string, r store.Node) api.NodeStatus {
	ns := api.NodeStatus{Name: name, State: r.State, Since: r.Since, Pinned: r.Pinned, Maintenance: r.Maintenance,
		PinNote: r.PinNote, MaintenanceNote: r.MaintenanceNote, InFlight: inFlight(r)}
	if ns.State == "" {
		ns.State = fleet.StateUnknown
	}
	return ns
}

// tally adds server ns, of a pool that costs cost, to st's spend and all-on cost, in the
// currency rota plans in, and reports whether it is powered. A server is spent as the books
// and the hourly rules spend it: when powered, when its power state is unknown (as if on), and
// when it is paid whether on or off (saves_when_off false).
func tally(st *api.Status, ns api.NodeStatus, cost config.Cost) bool {
	st.AllOnPerHour += cost.PlanPerHour()
	powered := ns.State.Powered()
	if powered || ns.State == fleet.StateUnknown || !cost.Saves() {
		st.SpendPerHour += cost.PlanPerHour()
	}
	return powered
}

func (l *Loop) nodeStatus(n fleet.Node, dec fleet.Decision) api.NodeStatus {
	ns := api.NodeStatus{Name: n.Name, Pool: n.Pool, State: n.State, Since: n.Since, Power: string(n.Power), Pinned: n.Pinned, Maintenance: n.Maintenance}
	if pl := l.cfg.Pool(n.Pool); pl != nil {
		ns.CostPerHour, ns.Currency = pl.Cost.PerHour(), pl.Cost.Currency
	}
	if a, s := verdict(n.Name, dec); a != nil {
		ns.Reason, ns.Detail = a.Reason, a.Detail
	} else if s != nil {
		ns.Reason, ns.Detail = s.Reason, s.Detail
	}
	return ns
}

// liveStatus is node n as pass p saw and decided it, moved on to its record r where the
// executor wrote r since the pass began, with the action under way.
func (l *Loop) liveStatus(n fleet.Node, p pass, r store.Node) api.NodeStatus {
	if r.State != "" && !r.Since.Before(p.at) {
		n.State, n.Since = r.State, r.Since
	}
	ns := l.nodeStatus(n, p.dec)
	ns.InFlight = inFlight(r)
	ns.PinNote, ns.MaintenanceNote = r.PinNote, r.MaintenanceNote
	return ns
}

// inFlight is the action the record says is under way, nil when none is.
func inFlight(r store.Node) *api.InFlight {
	if r.Intent == nil {
		return nil
	}
	return &api.InFlight{Kind: r.Intent.Kind, Reason: r.Intent.Reason, Since: r.Intent.Started}
}

// verdict finds the last pass's action or skip for node.
func verdict(node string, dec fleet.Decision) (*fleet.Action, *fleet.Skip) {
	for i := range dec.Actions {
		if dec.Actions[i].Node == node {
			return &dec.Actions[i], nil
		}
	}
	for i := range dec.Skips {
		if dec.Skips[i].Node == node {
			return nil, &dec.Skips[i]
		}
	}
	return nil, nil
}

// Explain says why node is in its state: the facts and verdict of the last pass and its recent
// audit records; for a server no longer in the config, its record and what rota does with it.
func (l *Loop) Explain(ctx context.Context, node string) (api.Explanation, error) {
	if _, ok := l.cfg.Node(node); !ok {
		return l.explainLeft(node)
	}
	p := l.lastPass()
	if !l.leading() {
		p = pass{} // a follower decides nothing: the store's record, and the history
	}
	ex := api.Explanation{JobsError: p.jobsErr}
	for _, n := range p.snap.Nodes {
		if n.Name == node {
			// Unread, the record is the zero one: the pass's view alone.
			r, _ := l.o.Store.Node(node)
			ex.Node, ex.Jobs, ex.Telemetry = l.liveStatus(n, p, r), n.Jobs, n.Telemetry
		}
	}
	if ex.Node.Name == "" {
		// No pass yet in this term: what the store records.
		st, err := l.storedStatus(ctx)
		if err != nil {
			return api.Explanation{}, err
		}
		for _, n := range st.Nodes {
			if n.Name == node {
				ex.Node = n
			}
		}
	}
	a, s := verdict(node, p.dec)
	if a != nil {
		c := *a
		ex.Action = &c
	}
	if s != nil {
		c := *s
		ex.Skip = &c
	}
	return l.withHistory(ex, node)
}

// explainLeft explains a server that is not in the config: one whose record the store still
// holds left it (leftStatus); one without was forgotten if its recent history holds a forget
// (rotactl forget deletes the record and keeps the history), and is otherwise no server of
// rota's (api.ErrUnknownNode).
func (l *Loop) explainLeft(node string) (api.Explanation, error) {
	recs, err := l.o.Store.Nodes()
	if err != nil {
		return api.Explanation{}, fmt.Errorf("reading the store: %w", err)
	}
	if r, ok := recs[node]; ok {
		return l.withHistory(api.Explanation{Node: leftNodeStatus(node, r)}, node)
	}
	ex, err := l.withHistory(api.Explanation{Node: api.NodeStatus{Name: node}}, node)
	if err != nil {
		return api.Explanation{}, err
	}
	i := slices.IndexFunc(ex.History, func(h api.AuditRecord) bool { return h.Action == store.Forgotten })
	if i < 0 {
		return api.Explanation{}, fmt.Errorf("%s: %w", errtext.Quote(node), api.ErrUnknownNode)
	}
	forgot := ex.History[i]
	ex.Forgotten = &forgot
	return ex, nil
}

// withHistory is ex with node's recent audit records.
func (l *Loop) withHistory(ex api.Explanation, node string) (api.Explanation, error) {
	hist, err := l.o.Store.Audit(node, historyLen)
	if err != nil {
		return api.Explanation{}, fmt.Errorf("reading %s's history: %w", node, err)
	}
	ex.History = history(hist)
	return ex, nil
}

// history is the store's audit records as the API shows them.
func history(recs []store.AuditRecord) []api.AuditRecord {
	if len(recs) == 0 {
		return nil
	}
	out := make([]api.AuditRecord, len(recs))
	for i, r := range recs {
		out[i] = api.AuditRecord{Time: r.Time, Node: r.Node, Pool: r.Pool, Action: r.Action, Reason: r.Reason, Detail: r.Detail, Result: r.Result, Error: r.Error}
	}
	return out
}

// Plan observes and plans now, and acts on nothing: no repair, no action, no store write.
func (l *Loop) Plan(ctx context.Context) (fleet.Decision, error) {
	now := l.o.Clock.Now()
	obs := l.observe(ctx, now)
	snap, _, err := l.snapshot(obs, now)
	if err != nil {
		return fleet.Decision{}, err
	}
	// What was learned, as the last pass read it: this plan learns nothing itself.
	last := l.lastPass().snap
	snap.Learned = last.Learned
	idle := make(map[string]time.Time, len(last.Nodes))
	for _, n := range last.Nodes {
		idle[n.Name] = n.IdleSince
	}
	for i := range snap.Nodes {
		snap.Nodes[i].IdleSince = idle[snap.Nodes[i].Name]
	}
	return gate(snap, l.o.Planner(snap, l.cfg, now), nil), nil
}

// SetPinned pins or unpins node, durably, and asks for a pass so Status shows it soon.
func (l *Loop) SetPinned(_ context.Context, node string, pinned bool, note string) error {
	if err := l.refuseWrite(); err != nil {
		return err
	}
	return l.setFlag(node, "pin", pinned, note, func(n *store.Node, on bool, note string) {
		n.Pinned, n.PinNote = on, note
	})
}

// SetMaintenance puts node in maintenance or takes it out, durably, and asks for a pass. In
// maintenance rota neither acts on the node nor repairs it.
func (l *Loop) SetMaintenance(_ context.Context, node string, on bool, note string) error {
	if err := l.refuseWrite(); err != nil {
		return err
	}
	return l.setFlag(node, "maintenance", on, note, func(n *store.Node, on bool, note string) {
		n.Maintenance, n.MaintenanceNote = on, note
	})
}

// setFlag sets or clears an operator's flag on node's record with set (a flag cleared loses its
// stored note), logs it with the note given (who cleared it and why) and asks for a pass. A
// server no longer in the config can have its flag cleared while the store holds its record,
// so that rota settles it and it can be forgotten (executor.LeftConfig); setting one on it is
// refused, as rota manages it no longer, and so is either on a name with no record.
func (l *Loop) setFlag(node, flag string, on bool, note string, set func(n *store.Node, on bool, note string)) error {
	unknown := fmt.Errorf("%s: %w", errtext.Quote(node), api.ErrUnknownNode)
	_, inConfig := l.cfg.Node(node)
	if !inConfig && on {
		return unknown
	}
	now := l.o.Clock.Now()
	err := l.o.Store.UpdateNode(node, func(n *store.Node) error {
		if n.State == "" {
			if !inConfig {
				return unknown // nothing written
			}
			// Never seen by a pass yet: its state is taken from the BMC at the next repair.
			n.State, n.Since = fleet.StateUnknown, now
		}
		stored := note
		if !on {
			stored = ""
			n.HandsOffEnded = true
		}
		set(n, on, stored)
		return nil
	})
	if errors.Is(err, api.ErrUnknownNode) {
		return err
	}
	if err != nil {
		return fmt.Errorf("setting %s of %s: %w", flag, node, err)
	}
	l.log.WithFields(logrus.Fields{"node": node, flag: on, "note": note}).Info(flag + " changed")
	l.Nudge(flag + " changed")
	return nil
}

// Forget deletes the record of node, a server no longer in the config that rota has settled
// (executor.Forget says when), with an audit record of who forgot it (note) and its last
// state, and logs it. The books are not touched: they hold counters of what the configured
// servers spent, never read from the records.
func (l *Loop) Forget(_ context.Context, node, note string) (api.NodeStatus, error) {
	if err := l.refuseWrite(); err != nil {
		return api.NodeStatus{}, err
	}
	now := l.o.Clock.Now()
	r, err := l.o.Executor.Forget(node, func(r store.Node) store.AuditRecord {
		return store.AuditRecord{Time: now, Node: node, Action: store.Forgotten, Reason: store.ReasonOperator, Result: "succeeded",
			Detail: fmt.Sprintf("record forgotten (%s): it was %s since %s", note, r.State, r.Since.Format(time.RFC3339))}
	})
	var kept *executor.KeptError
	switch {
	case errors.Is(err, executor.ErrNoRecord):
		return api.NodeStatus{}, fmt.Errorf("%s: %w", errtext.Quote(node), api.ErrUnknownNode)
	case errors.As(err, &kept):
		return api.NodeStatus{}, &api.KeptError{Why: kept.Why}
	case err != nil:
		return api.NodeStatus{}, fmt.Errorf("forgetting %s: %w", node, err)
	}
	l.log.WithFields(logrus.Fields{"node": node, "state": r.State, "since": r.Since, "note": note}).Info("record of a server no longer in the config forgotten")
	return leftNodeStatus(node, r), nil
}

// Backup writes a consistent copy of the store to w.
func (l *Loop) Backup(_ context.Context, w io.Writer) (int64, error) {
	return l.o.Store.Backup(w)
}

// SetPaused pauses or resumes the scaler, durably, and asks for a pass.
func (l *Loop) SetPaused(_ context.Context, paused bool, note string) error {
	if err := l.refuseWrite(); err != nil {
		return err
	}
	err := l.o.Store.UpdateGlobal(func(g *store.Global) error {
		g.Paused, g.PauseNote = paused, note
		if !paused {
			g.PauseNote = ""
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("pausing: %w", err)
	}
	l.log.WithFields(logrus.Fields{"paused": paused, "note": note}).Info("pause changed")
	l.Nudge("pause changed")
	return nil
}
