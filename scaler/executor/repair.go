package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs"
	"github.com/rotahq/rota/scaler/store"
)

// Observed is what a pass saw, for Repair.
type Observed struct {
	// At is when the pass began to read the BMCs: each state in Power was read after it. A
	// node whose record changed after At is not judged by them (zero: only nodes never
	// recorded are).
	At time.Time
	// Power is what each BMC said; a node absent is unknown.
	Power map[string]bmc.State
	// Jobs is the job manager's view; JobsKnown is false when it could not be read.
	Jobs      map[string]fleet.JobsView
	JobsKnown bool
}

// Repair brings every inventory node without an action under way, and neither pinned nor in
// maintenance, to a resting state: it finishes or rolls back what a crash interrupted (a node
// with an intent), moves booting nodes on when ready or to Failed past their boot timeout,
// resumes what rota left drained, and aligns resting states with what the BMC says. A node
// whose BMC cannot say its state is left as it is, and logged. It returns an error only when
// the store cannot be read; each node's trouble is logged and left for the next pass.
//
// A node is judged only by a reading that post-dates its record: each node is claimed before
// the records are read (an action on it has written its last), and one whose record changed
// after obs.At (an action that ended while the pass read the BMCs: a power-on confirmed after
// its BMC was read off) is left for the next pass, which reads its BMC again.
func (e *Executor) Repair(ctx context.Context, obs Observed) error {
	type claimed struct{ node, pool string }
	var mine []claimed
	for _, p := range e.o.Config.Pools {
		for _, cn := range p.Nodes {
			if ok, _ := e.claim(cn.Name, false); ok {
				mine = append(mine, claimed{cn.Name, p.Name})
			}
		}
	}
	recs, err := e.o.Store.Nodes()
	if err != nil {
		for _, c := range mine {
			e.release(c.node)
		}
		return err
	}
	sem := make(chan struct{}, e.maxInFlight())
	var wg sync.WaitGroup
	for _, c := range mine {
		if r := recs[c.node]; r.Pinned || r.Maintenance {
			e.release(c.node)
			continue // never touched, not even to finish
		}
		if r := recs[c.node]; r.ChangedAfter(obs.At) {
			e.release(c.node)
			e.log.WithFields(logrus.Fields{"node": c.node, "state": r.State}).Debug("record changed since its BMC was read; judged at the next pass")
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer e.release(c.node)
			power, ok := obs.Power[c.node]
			if !ok {
				power = bmc.StateUnknown
			}
			if err := e.repairNode(ctx, c.node, c.pool, recs[c.node], power, obs); err != nil {
				e.log.WithFields(logrus.Fields{"node": c.node, "state": recs[c.node].State}).WithError(err).Warn("repair did not finish; next pass tries again")
			}
		}()
	}
	wg.Wait()
	e.giveBackLeft(ctx, recs, obs)
	return nil
}

// giveBackLeft settles each server rota drained or powered on that is no longer in the config
// (taken out of its pool, or its pool removed): no pass plans or repairs it any more, so it
// would stay drained, or powering on, forever. A move left unfinished on it (work it took off
// held) is finished first, as repair finishes one (jobs.Mover, the job manager alone), or
// that work would wait for good. One On or Draining with rota's drain is resumed
// in the job manager. One powering on or booting (or Failed) is let finish: once the job
// manager sees it respond it is up with no work, and, as rota no longer reads its BMC nor
// powers it off, it is left on, its drain given back, recorded On and said, as repair takes a
// Failed server that came up back; until then it is left as it is. One
// powering off or off is left as it is (rota reads no BMC of a server outside the config: it
// may be off, and must not be offered work), and so is one pinned or in maintenance.
func (e *Executor) giveBackLeft(ctx context.Context, recs map[string]store.Node, obs Observed) {
	inConfig := e.o.Config.NodeNames()
	for name, n := range recs {
		if inConfig[name] {
			continue
		}
		var settle func() error
		var done string
		switch v := obs.Jobs[name]; leftFate(n) {
		case leftMove:
			settle = func() error {
				return e.repairMove(ctx, fleet.Action{Node: name, Kind: fleet.Move, Reason: n.Intent.Reason, Detail: n.Intent.Detail, Move: n.Intent.Move})
			}
			done = "a server no longer in the config: rota's unfinished move on it finished, the work it took off let go; a drain of rota's is given back next"
		case leftDrained:
			settle = func() error {
				return e.giveBack(ctx, fleet.Action{Node: name}, "not in the config any more: rota's drain given back")
			}
			done = "a server no longer in the config, drained by rota, given back to the job manager; rota leaves it alone from now on"
		case leftComingUp:
			if !obs.JobsKnown || !v.Known || !v.Responding {
				continue
			}
			settle = func() error {
				return e.up(ctx, fleet.Action{Node: name, Kind: fleet.PowerOn, Reason: fleet.ReasonRepair,
					Detail: "not in the config any more: up (the job manager sees it respond); left on"}, n, obs, time.Time{})
			}
			done = "a server no longer in the config, powering on, booting or failed, is up: left on with no work (rota no longer reads its BMC nor powers it off; power it off by hand if it should be off), rota's drain given back; rota leaves it alone from now on"
		default:
			continue
		}
		if ok, _ := e.claim(name, false); !ok {
			continue
		}
		err := settle()
		e.release(name)
		l := e.log.WithFields(logrus.Fields{"node": name, "state": n.State})
		if err != nil {
			l.WithError(err).Warn("a server no longer in the config not settled; next pass tries again")
			continue
		}
		l.Warn(done)
	}
}

func (e *Executor) repairNode(ctx context.Context, name, pool string, n store.Node, power bmc.State, obs Observed) error {
	a := fleet.Action{Node: name, Pool: pool}
	if n.Unread != nil && obs.JobsKnown {
		// Accounting alone: its trouble never holds the repair.
		if err := e.judgeUnread(a, *n.Unread, obs); err != nil {
			e.log.WithField("node", name).WithError(err).Warn("power changes seen while the job manager could not be read not judged; next pass tries again")
		}
	}
	if n.Intent != nil {
		a.Kind, a.Reason, a.Detail, a.Move = n.Intent.Kind, n.Intent.Reason, n.Intent.Detail, n.Intent.Move
	}
	if e.o.Config.Policy.DryRun {
		if done, err := e.repairDryRun(ctx, a, n, power); done {
			return err
		}
	}
	if n.Intent != nil {
		return e.finishIntent(ctx, a, n, power, obs)
	}
	return e.repairAtRest(ctx, a, n, power, obs)
}

// repairDryRun is repair's one rule for dry run: no action leads a server away from serving,
// so what is under way towards off is given back now (a drain or a power-off left in flight by
// a crash, or a server left Draining from before dry run: no power-off follows in dry run),
// and a power-on whose command never landed is recorded Off. It reports false for the rest,
// which repair handles as it always does (a boot, a resume, a resting node aligned).
func (e *Executor) repairDryRun(ctx context.Context, a fleet.Action, n store.Node, power bmc.State) (bool, error) {
	switch {
	case a.Kind == fleet.Drain, a.Kind == fleet.Move, a.Kind == fleet.PowerOff && power == bmc.StateOn:
		return true, e.giveBack(ctx, a, "dry run: interrupted "+string(a.Kind)+" rolled back")
	case a.Kind == "" && n.State == fleet.StateDraining:
		return true, e.giveBack(ctx, a, "dry run: drain given back")
	case a.Kind == fleet.PowerOn && n.State != fleet.StateBooting && power == bmc.StateOff:
		return true, e.align(a, n, fleet.StateOff, Observed{})
	}
	return false, nil
}

// finishIntent takes an interrupted action up from where the store and the world say it is,
// in the action kind's own repair.
func (e *Executor) finishIntent(ctx context.Context, a fleet.Action, n store.Node, power bmc.State, obs Observed) error {
	var done bool
	var err error
	switch a.Kind {
	case fleet.Resume:
		done, err = true, e.finishResume(ctx, a)
	case fleet.Drain:
		// Continued (idempotent); its timeout then bounds it.
		done, err = true, e.sendDrain(ctx, a)
	case fleet.PowerOff:
		done, err = e.repairPowerOff(ctx, a, power)
	case fleet.PowerOn:
		done, err = e.repairPowerOn(ctx, a, n, power, obs)
	case fleet.Move:
		done, err = true, e.repairMove(ctx, a)
	}
	if !done {
		e.log.WithFields(logrus.Fields{"node": a.Node, "intent": a.Kind, "power": power}).Warn("power state unknown or changing; interrupted action left for the next pass")
	}
	return err
}

// repairAtRest handles a node with no action in flight. A drain past policy.drain.timeout is
// given back by the rule the planner uses (config.Drain.TimedOut), so a drain the planner
// cannot settle (the job manager unread) still ends.
func (e *Executor) repairAtRest(ctx context.Context, a fleet.Action, n store.Node, power bmc.State, obs Observed) error {
	switch {
	case n.State == fleet.StateDraining:
		if e.o.Config.Policy.Drain.TimedOut(n.Since, e.o.Clock.Now()) {
			a.Kind, a.Reason, a.Detail = fleet.Resume, fleet.ReasonDrainTimeout, "drain did not finish in time"
			return e.resume(ctx, a)
		}
		return e.continueDrain(ctx, a.Node, obs)
	case power == bmc.StateOn && n.State == fleet.StateFailed:
		// A failed node that came up after all is taken back.
		a.Kind, a.Reason, a.Detail = fleet.PowerOn, fleet.ReasonRepair, "failed node is up"
		return e.finishBoot(ctx, a, n, obs, time.Time{})
	case power == bmc.StateOn && n.State != fleet.StateOn && n.State != fleet.StateFailed:
		return e.align(a, n, fleet.StateOn, obs)
	case power == bmc.StateOff && n.State != fleet.StateOff && n.State != fleet.StateFailed:
		return e.align(a, n, fleet.StateOff, obs)
	case power == bmc.StateUnknown && n.State == "":
		return e.align(a, n, fleet.StateUnknown, obs)
	case n.State == fleet.StateOn && drainedByRota(a.Node, n, obs):
		// Never drained by rota forever: an On node rota drained (an aborted or failed step) is
		// given back.
		return e.giveBack(ctx, a, "left drained by an interrupted action")
	case n.HandsOffEnded && (power == bmc.StateOn || power == bmc.StateOff):
		// The BMC agrees with the record: the hands-off spell changed nothing.
		return e.write(a, change{node: func(n *store.Node, _ time.Time) { n.HandsOffEnded = false }})
	}
	return nil
}

// continueDrain asks a job manager whose drain moves work itself (jobs.DrainContinuer) to go
// on with a drain rota made, once the job manager could be read this pass. Its trouble is
// logged and left for the next pass: the drain's timeout bounds it either way.
func (e *Executor) continueDrain(ctx context.Context, name string, obs Observed) error {
	dc, ok := e.o.Jobs.(jobs.DrainContinuer)
	if !ok || !obs.JobsKnown {
		return nil
	}
	jctx, cancel := e.jobsCall(ctx)
	defer cancel()
	if err := dc.ContinueDrain(jctx, name); err != nil {
		return fmt.Errorf("continuing the drain of %s: %w", name, err)
	}
	return nil
}

// align records a resting state the BMC reports: a node seen for the first time, one whose
// BMC could not say before, or one at rest powered on or off by something other than rota
// (from On to off, or from Off to on). That last is counted, audited (reason outside) and
// logged as a warning: a person, the BMC's power policy after a power cut, `rotactl power`, or
// another controller on the same BMCs (a second rota on another store), which would fight rota
// over the servers. Not counted: a change after a pin or maintenance ended (the operator's
// hand), or one the job manager's own power saving made (Slurm's SuspendProgram). One seen
// while the job manager could not be read (it may have been that) is kept in the record for
// judgeUnread, never forgotten.
func (e *Executor) align(a fleet.Action, rec store.Node, state fleet.State, obs Observed) error {
	from := rec.State
	flipped := !rec.HandsOffEnded && (from == fleet.StateOn && state == fleet.StateOff || from == fleet.StateOff && state == fleet.StateOn)
	unread := flipped && !obs.JobsKnown
	outside := flipped && obs.JobsKnown && !obs.Jobs[a.Node].PowerSaving
	c := change{node: func(n *store.Node, now time.Time) {
		n.HandsOffEnded = false
		n.Enter(state, now)
		switch state {
		case fleet.StateOn:
			n.LastOn = now
		case fleet.StateOff:
			n.LastOff = now
		}
		if unread {
			n.AddUnread(state, now)
		}
	}}
	if outside {
		a, c.result = outsideAction(a, from, state), auditObserved
	}
	if err := e.write(a, c); err != nil {
		return err
	}
	log := e.log.WithFields(logrus.Fields{"node": a.Node, "state": state})
	switch {
	case outside:
		e.countOutside(a, from, state, 1)
	case unread:
		log.WithField("recorded", from).Warn("state taken from the BMC; whether the job manager's power saving changed it is judged once the job manager can be read")
	default:
		log.Info("state taken from the BMC")
	}
	return nil
}

// judgeUnread settles the power changes a node went through at rest while the job manager
// could not be read, at the first repair that reads it. When the job manager's own power saving
// has the server now (Slurm's powered down, or powering up or down), they were its own and are
// excused; otherwise each is a change outside rota, counted, audited and logged as align does,
// its audit saying it was seen while the job manager could not be read. Accounting alone:
// nothing rota commands depends on it.
func (e *Executor) judgeUnread(a fleet.Action, u store.UnreadChanges, obs Observed) error {
	if obs.Jobs[a.Node].PowerSaving {
		if err := e.write(a, change{node: func(n *store.Node, _ time.Time) { n.Unread = nil }}); err != nil {
			return err
		}
		e.log.WithField("node", a.Node).Info("the power changes seen while the job manager could not be read were its power saving's")
		return nil
	}
	for _, to := range []fleet.State{fleet.StateOn, fleet.StateOff} {
		count, from := u.On, fleet.StateOff
		if to == fleet.StateOff {
			count, from = u.Off, fleet.StateOn
		}
		if count == 0 {
			continue
		}
		b := outsideAction(a, from, to)
		b.Detail += fmt.Sprintf("; seen %d time(s) while the job manager could not be read, from %s", count, u.First.UTC().Format(time.RFC3339))
		err := e.write(b, change{result: auditObserved, node: func(n *store.Node, _ time.Time) {
			if n.Unread == nil {
				return
			}
			if to == fleet.StateOn {
				n.Unread.On = 0
			} else {
				n.Unread.Off = 0
			}
			if n.Unread.On == 0 && n.Unread.Off == 0 {
				n.Unread = nil
			}
		}})
		if err != nil {
			return err
		}
		e.countOutside(b, from, to, count)
	}
	return nil
}

// outsideAction is a's audit of a change outside rota from one resting state to another.
func outsideAction(a fleet.Action, from, to fleet.State) fleet.Action {
	a.Kind, a.Reason = fleet.PowerOn, fleet.ReasonOutside
	if to == fleet.StateOff {
		a.Kind = fleet.PowerOff
	}
	a.Detail = fmt.Sprintf("the BMC says %s where rota recorded %s, and rota sent no command", to, from)
	return a
}

// countOutside counts and warns of count changes outside rota, once they are recorded.
func (e *Executor) countOutside(a fleet.Action, from, to fleet.State, count int) {
	e.metrics.outside.WithLabelValues(a.Pool, string(to)).Add(float64(count))
	e.log.WithFields(logrus.Fields{"node": a.Node, "state": to, "recorded": from, "detail": a.Detail}).
		Warn("powered " + string(to) + " outside rota (by hand, the BMC's power policy, or another controller on the same BMCs); state taken from the BMC")
}

// left is what giveBackLeft does with a server no longer in the config, by its record.
type left int

const (
	leftAlone    left = iota // pinned, in maintenance, settled, or powering off or off: left as it is
	leftMove                 // a move of rota's unfinished on it: finished
	leftDrained              // on or draining with rota's drain: the drain given back
	leftComingUp             // powering on, booting or failed: left on once the job manager sees it respond
)

func leftFate(n store.Node) left {
	switch {
	case n.Pinned || n.Maintenance:
		return leftAlone
	case n.Intent != nil && n.Intent.Kind == fleet.Move:
		return leftMove
	case n.DrainedByRota && (n.State == fleet.StateOn || n.State == fleet.StateDraining):
		return leftDrained
	case n.State == fleet.StatePoweringOn || n.State == fleet.StateBooting || n.State == fleet.StateFailed:
		return leftComingUp
	}
	return leftAlone
}

// LeftConfig says, for status and explain, what rota does or did with a server no longer in
// the config whose record the store still holds (n): what giveBackLeft does with it.
func LeftConfig(n store.Node) string {
	const gone = "not in the config any more: "
	switch leftFate(n) {
	case leftMove:
		return gone + "rota finishes its unfinished move on it, then gives back its drain; then leaves it alone"
	case leftDrained:
		return gone + "rota gives its drain back to the job manager at the next pass, then leaves it alone"
	case leftComingUp:
		return gone + "once the job manager sees it respond, rota leaves it on with its drain given back (it no longer reads its BMC nor powers it off)"
	}
	switch {
	case n.Pinned || n.Maintenance:
		return gone + "pinned or in maintenance: rota leaves it as it is; unpinned, out of maintenance, rota settles it"
	case n.State == fleet.StatePoweringOff || n.State == fleet.StateOff:
		return gone + "rota leaves it as it is, maybe off (it no longer reads its BMC); power it on by hand to use it; rotactl forget drops this record"
	}
	return gone + "rota leaves it as it is (it no longer reads its BMC nor powers it off); rotactl forget drops this record"
}

// ErrNoRecord is a Forget of a server the store holds no record of.
var ErrNoRecord = errors.New("no record of it in the store")

// KeptError is a record Forget kept, and why: the server is in the config, or rota has not
// settled it (an action under way, one the repair pass still finishes or gives back, a pin or
// maintenance that holds it as it is).
type KeptError struct{ Why string }

func (e *KeptError) Error() string { return e.Why }

// Forget deletes the record of name, a server no longer in the config that rota has settled
// (LeftConfig: nothing left to finish or give back, no action under way, neither pinned nor in
// maintenance), and appends audit(record) to its audit log, in one transaction (on etcd, fenced
// by the leader's lease); it returns the record deleted. Anything else is a *KeptError, or
// ErrNoRecord, and changes nothing. The server is claimed meanwhile, so no repair acts on it.
func (e *Executor) Forget(name string, audit func(store.Node) store.AuditRecord) (store.Node, error) {
	if _, ok := e.o.Config.Node(name); ok {
		return store.Node{}, &KeptError{Why: "it is in the config: rota manages it; take it out of its pool and restart rota first"}
	}
	if ok, _ := e.claim(name, false); !ok {
		return store.Node{}, &KeptError{Why: "an action is under way on it; ask again once it has ended"}
	}
	defer e.release(name)
	var n store.Node
	err := e.o.Store.Update(func(tx *store.Tx) error {
		var err error
		if n, err = tx.Node(name); err != nil {
			return err
		}
		switch {
		case n.State == "":
			return ErrNoRecord
		case n.Pinned || n.Maintenance:
			return &KeptError{Why: handsOffWhy(name, n)}
		case n.Intent != nil:
			return &KeptError{Why: fmt.Sprintf("an action is under way on it (%s since %s); ask again once it has ended", n.Intent.Kind, n.Intent.Started.Format(time.RFC3339))}
		case leftFate(n) != leftAlone:
			return &KeptError{Why: "rota has not settled it: " + LeftConfig(n)}
		}
		if err := tx.DeleteNode(name); err != nil {
			return err
		}
		return tx.AppendAudit(audit(n))
	})
	return n, err
}

// handsOffWhy is why Forget keeps the record of name, pinned or in maintenance (n): the flag
// holds the server as it is, and what ends it (rota settles it then, as LeftConfig says).
func handsOffWhy(name string, n store.Node) string {
	var held, undo, cmds []string
	if n.Pinned {
		held, undo, cmds = append(held, "pinned"), append(undo, "unpin it"), append(cmds, "rotactl unpin "+name)
	}
	if n.Maintenance {
		held, undo, cmds = append(held, "in maintenance"), append(undo, "take it out of maintenance"), append(cmds, "rotactl maintenance "+name+" off")
	}
	return fmt.Sprintf("it is %s, which rota keeps as it is: %s first (%s), then forget it once rota has settled it",
		strings.Join(held, " and "), strings.Join(undo, " and "), strings.Join(cmds, "; "))
}
