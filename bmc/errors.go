package bmc

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rotahq/rota/internal/errtext"
)

// Sentinels for errors.Is. Each typed error below matches one of them.
var (
	// ErrStateUnknown: the power state could not be read or parsed; no command was sent.
	ErrStateUnknown = errors.New("power state unknown")
	// ErrAuth: the BMC refused the credentials; not retried.
	ErrAuth = errors.New("bmc authentication failed")
	// ErrRefused: the BMC refused the request (a 4xx other than authentication); not retried.
	ErrRefused = errors.New("bmc refused the request")
	// ErrNotConfirmed: the command was sent but the target state was not seen before the
	// confirm deadline.
	ErrNotConfirmed = errors.New("power state not confirmed")
	// ErrUnknownNode: no endpoint is registered under that node name.
	ErrUnknownNode = errors.New("unknown node")
	// ErrNoSlot: a request waited for a slot under MaxConcurrent (bmc.concurrency) until its
	// operation's deadline and never went out; the BMC was not asked anything.
	ErrNoSlot = errors.New("no slot under the concurrency cap")
)

// StateUnknownError says why a node's power state is unknown. No power command was sent.
type StateUnknownError struct {
	Node string
	// Raw is the BMC's answer when it could not be parsed; empty when the BMC did not answer.
	Raw string
	// Err is the failure that left the state unknown, if any.
	Err error
}

func (e *StateUnknownError) Error() string {
	switch {
	case e.Err != nil:
		return fmt.Sprintf("power state unknown, no command sent: %v", e.Err)
	default:
		return fmt.Sprintf("power state unknown, no command sent: unrecognised answer %s", errtext.Quote(e.Raw))
	}
}

// Is makes errors.Is(err, ErrStateUnknown) true.
func (e *StateUnknownError) Is(target error) bool { return target == ErrStateUnknown }

// Unwrap returns the cause.
func (e *StateUnknownError) Unwrap() error { return e.Err }

// AuthError is an authentication failure at a node's BMC.
type AuthError struct {
	Node string
	Err  error
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("bmc authentication failed, not retried (check username, password and certificate): %v", e.Err)
}

// Is makes errors.Is(err, ErrAuth) true.
func (e *AuthError) Is(target error) bool { return target == ErrAuth }

// Unwrap returns the cause.
func (e *AuthError) Unwrap() error { return e.Err }

// RefusedError is a request the BMC refused (HTTP 4xx other than 401/403), or one rota
// refused to make (Status 0: a setting the BMC contradicts, a tool missing).
type RefusedError struct {
	Node   string
	Status int
	Err    error
}

func (e *RefusedError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("bmc request not made, not retried: %v", e.Err)
	}
	return fmt.Sprintf("bmc refused the request (status %d), not retried: %v", e.Status, e.Err)
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Unwrap returns the cause.
func (e *RefusedError) Unwrap() error { return e.Err }

// NotConfirmedError: a command was accepted but the node did not reach Want in time.
type NotConfirmedError struct {
	Node string
	Want State
	Last State
	// Err is set when the caller's context ended the wait.
	Err error
}

func (e *NotConfirmedError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("power state did not reach %s (last seen %s): %v", e.Want, e.Last, e.Err)
	}
	return fmt.Sprintf("power state did not reach %s before the confirm deadline (last seen %s)", e.Want, e.Last)
}

// Unwrap returns the context error that ended the wait, if any.
func (e *NotConfirmedError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNotConfirmed) true.
func (e *NotConfirmedError) Is(target error) bool { return target == ErrNotConfirmed }

// TaskFailedError: the BMC took a command as a task (Redfish 202 Accepted with a task monitor)
// and the task ended failed. It is the BMC refusing the command (errors.Is(err, ErrRefused)),
// not retried.
type TaskFailedError struct {
	Node string
	// Task is the task monitor's URI, State the task's TaskState (Exception, Killed, Cancelled).
	Task, State string
	// Messages are the task's Messages, as the BMC wrote them (the first three, each cut to
	// 256 bytes, are said).
	Messages []string
}

func (e *TaskFailedError) Error() string {
	msgs := make([]string, 0, min(len(e.Messages), 3))
	for _, m := range e.Messages[:min(len(e.Messages), 3)] {
		msgs = append(msgs, strconv.Quote(errtext.Cut(m, 4*errtext.Max)))
	}
	if len(msgs) == 0 {
		msgs = append(msgs, "no message")
	}
	return fmt.Sprintf("the bmc's task %s for the command ended %s, not retried: %s", errtext.Quote(e.Task), errtext.Quote(e.State), strings.Join(msgs, "; "))
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *TaskFailedError) Is(target error) bool { return target == ErrRefused }

// transientError marks a failure worth retrying (network, timeout, 5xx). retryAfter is the
// wait the BMC asked for (Retry-After), zero when it did not. unanswered: a request was sent
// and its answer lost, so the BMC may have done it.
type transientError struct {
	err        error
	retryAfter time.Duration
	unanswered bool
}

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// Reason names why an operation failed, in a few fixed words (also the metric label
// result): success, state_unknown, auth, refused, not_confirmed, unknown_node, no_reading, error.
func Reason(err error) string { return resultLabel(err) }

// resultLabel is the bounded metric label for an operation's outcome.
func resultLabel(err error) string {
	switch {
	case err == nil:
		return "success"
	case errors.Is(err, ErrNoSlot):
		// Before state_unknown: a read that never had a slot left the state unknown, but the
		// cause is rota's own queue (bmc.concurrency), not the BMC.
		return "no_slot"
	case errors.Is(err, ErrStateUnknown):
		return "state_unknown"
	case errors.Is(err, ErrAuth):
		return "auth"
	case errors.Is(err, ErrRefused):
		return "refused"
	case errors.Is(err, ErrNotConfirmed):
		return "not_confirmed"
	case errors.Is(err, ErrUnknownNode):
		return "unknown_node"
	case errors.Is(err, ErrNoReading):
		return "no_reading"
	}
	return "error"
}
