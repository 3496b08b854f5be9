package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

// Audit results (store.AuditRecord.Result).
const (
	auditStarted   = "started"
	auditSucceeded = "succeeded"
	auditFailed    = "failed"
	auditAborted   = "aborted"
	auditDryRun    = "dry_run"
	// auditObserved: no action of rota's, a change it saw (reason outside).
	auditObserved = "observed"
)

// change is one store transaction: the node's record, optionally the global record, and
// optionally an audit record.
type change struct {
	node   func(n *store.Node, now time.Time)
	global func(g *store.Global, now time.Time)
	// result is the audit record's result; empty writes no audit record.
	result string
	cause  error
}

func (e *Executor) write(a fleet.Action, c change) error {
	now := e.o.Clock.Now()
	if err := e.o.Store.Update(func(tx *store.Tx) error { return c.apply(tx, a, now) }); err != nil {
		return fmt.Errorf("recording %s of %s: %w", a.Kind, a.Node, err)
	}
	return nil
}

// apply writes c for a at now in tx.
func (c change) apply(tx *store.Tx, a fleet.Action, now time.Time) error {
	n, err := tx.Node(a.Node)
	if err != nil {
		return err
	}
	c.node(&n, now)
	if err := tx.PutNode(a.Node, n); err != nil {
		return err
	}
	if c.global != nil {
		g, err := tx.Global()
		if err != nil {
			return err
		}
		c.global(&g, now)
		if err := tx.PutGlobal(g); err != nil {
			return err
		}
	}
	if c.result == "" {
		return nil
	}
	return tx.AppendAudit(auditRecord(a, now, c.result, c.cause))
}

func auditRecord(a fleet.Action, now time.Time, result string, cause error) store.AuditRecord {
	r := store.AuditRecord{Time: now, Node: a.Node, Pool: a.Pool, Action: a.Kind, Reason: a.Reason, Detail: a.Detail, Result: result}
	if cause != nil {
		r.Error = cause.Error()
	}
	return r
}

// begin writes the action's intent (and moves the node to state, if not empty) with a
// "started" audit record: the durable promise made before any side effect. Its step is
// StepIntent.
func (e *Executor) begin(a fleet.Action, state fleet.State, extra func(*store.Node), global func(*store.Global, time.Time)) error {
	if err := e.write(a, beginning(a, state, extra, global)); err != nil {
		return err
	}
	return e.step(a, StepIntent)
}

// beginning is begin's change.
func beginning(a fleet.Action, state fleet.State, extra func(*store.Node), global func(*store.Global, time.Time)) change {
	return change{
		node: func(n *store.Node, now time.Time) {
			attempt := 1
			if n.Intent != nil && n.Intent.Kind == a.Kind {
				attempt = n.Intent.Attempt + 1
			}
			if state != "" {
				n.Enter(state, now)
			}
			n.Intent = &store.Intent{Kind: a.Kind, Reason: a.Reason, Detail: a.Detail, Started: now, Attempt: attempt, Move: a.Move}
			if extra != nil {
				extra(n)
			}
		},
		global: global,
		result: auditStarted,
	}
}

// BeginPowerOn writes in tx, at now, the start of power-on a as rota itself begins one, before
// any command: the node PoweringOn with the intent, the pool's scale-up time and the audit
// record "started". `rotactl slurm resume`, powering servers on alone while rota cannot be
// reached, records its power-ons so: rota's repair then takes each up as its own (it confirms
// the boot, or sends the command again), never as a change outside rota.
func BeginPowerOn(tx *store.Tx, a fleet.Action, now time.Time) error {
	return beginning(a, fleet.StatePoweringOn, nil, scaleUp(a.Pool)).apply(tx, a, now)
}

// setKeepingIntent moves n to state without ending the action in flight.
func setKeepingIntent(n *store.Node, state fleet.State, now time.Time) {
	if n.State != state {
		n.Since = now
	}
	n.State = state
}

// unknown records that the BMC could not say the power state: no command was sent, the node is
// Unknown, and its intent stays for Repair to finish once the BMC answers. A state read cut
// short because rota is shutting down says nothing about the BMC: nothing is recorded, as in
// fail.
func (e *Executor) unknown(ctx context.Context, a fleet.Action, cause error) error {
	if interrupted(ctx) {
		return cause
	}
	werr := e.write(a, change{
		node:   func(n *store.Node, now time.Time) { setKeepingIntent(n, fleet.StateUnknown, now) },
		result: auditFailed, cause: cause,
	})
	return joinErr(fmt.Errorf("%s %s: %w", a.Kind, a.Node, cause), werr)
}

// fail records a step that did not succeed: the node is Failed with its power left as is,
// Failures is counted and RetryAfter set with a doubling backoff; the count stays until an
// action of the same kind succeeds. A step cut short because rota is shutting down is no
// failure (interrupted).
func (e *Executor) fail(ctx context.Context, a fleet.Action, cause error) error {
	if interrupted(ctx) {
		return cause
	}
	f := e.o.Config.Policy.Failure
	werr := e.write(a, change{
		node: func(n *store.Node, now time.Time) {
			n.Enter(fleet.StateFailed, now)
			n.Failed(a.Kind, now, Backoff(time.Duration(f.Backoff), time.Duration(f.MaxBackoff), n.Failures+1))
		},
		result: auditFailed, cause: cause,
	})
	return joinErr(cause, werr)
}

// interrupted reports whether ctx, the context an action runs under, has ended: rota is
// shutting down. A step cut short then is no failure and writes nothing, whatever error the
// cut produced (a BMC read that could not finish looks like an unknown state, a job-manager
// call like a refusal): the intent already in the store stays, and the next start's repair
// pass finishes or rolls it back. Only ctx counts; a per-call timeout (jobs.timeout,
// bmc.operation_timeout) that expires is a failure of the step.
func interrupted(ctx context.Context) bool { return ctx.Err() != nil }

// Backoff is the wait after the nth consecutive failure: base doubled n-1 times, at most limit.
// A doubling past limit stops at it before it could overflow (a limit of centuries doubled a
// negative wait: a retry at once).
func Backoff(base, limit time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < limit; i++ {
		if d > limit/2 {
			return limit
		}
		d *= 2
	}
	return min(d, limit)
}

func joinErr(err, werr error) error {
	if werr == nil {
		return err
	}
	return fmt.Errorf("%w (and %w)", err, werr)
}

func scaleUp(pool string) func(*store.Global, time.Time) {
	return func(g *store.Global, now time.Time) {
		if g.LastScaleUp == nil {
			g.LastScaleUp = map[string]time.Time{}
		}
		g.LastScaleUp[pool] = now
	}
}

func scaleDown(pool string) func(*store.Global, time.Time) {
	return func(g *store.Global, now time.Time) {
		if g.LastScaleDown == nil {
			g.LastScaleDown = map[string]time.Time{}
		}
		g.LastScaleDown[pool] = now
	}
}
