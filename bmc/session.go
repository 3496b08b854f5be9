package bmc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rotahq/rota/internal/errtext"
)

// session is one operation on one node: it holds its BMC's lock, the bmclib connection it
// opened (reopened after a transient failure) and the password it read.
type session struct {
	c    *Controller
	n    *node
	log  logEntry
	conn conn
	pass Secret
	// task is the task monitor the last command was answered with, followed while confirming.
	task string
	// urgent: a power-on's, whose requests go first for a slot (slots).
	urgent bool
}

// logEntry is the part of *logrus.Entry a session uses.
type logEntry interface {
	Debugf(format string, args ...any)
	Infof(format string, args ...any)
	Warnf(format string, args ...any)
}

func (s *session) now() time.Time { return s.c.opts.Clock.Now() }

func (s *session) proto() string { return string(s.n.ep.Protocol) }

// close closes the connection under a slot (a Redfish session's logout is a request), or
// without one when none comes within the call timeout.
func (s *session) close() {
	if s.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.c.opts.CallTimeout)
	defer cancel()
	if release, err := s.c.slot(ctx, s.urgent); err == nil {
		defer release()
	}
	s.drop()
}

// drop closes the connection; the caller holds a slot.
func (s *session) drop() {
	ctx, cancel := context.WithTimeout(context.Background(), s.c.opts.CallTimeout)
	defer cancel()
	if err := s.conn.Close(ctx); err != nil {
		s.log.Debugf("closing bmc connection: %v", err)
	}
	s.conn = nil
}

// connect opens the connection when none is open.
func (s *session) connect(ctx context.Context) error {
	if s.conn != nil {
		return nil
	}
	pass, err := s.password()
	if err != nil {
		return err
	}
	start := s.now()
	conn, err := s.c.opts.dial.Dial(ctx, s.n.name, s.n.ep, pass)
	s.measure("open", start, err, "")
	if err != nil {
		return err
	}
	s.conn = conn
	return nil
}

// password reads the BMC's password once per session.
func (s *session) password() (Secret, error) {
	if s.pass == "" {
		p, err := s.n.ep.Password(s.c.opts.LookupEnv)
		if err != nil {
			return "", &AuthError{Node: s.n.name, Err: err}
		}
		s.pass = p
	}
	return s.pass, nil
}

// measure counts one request by result and records how long it took (and, on success, the
// provider that answered).
func (s *session) measure(op string, start time.Time, err error, provider string) {
	s.c.m.requests.WithLabelValues(s.proto(), op, requestResult(err)).Inc()
	s.c.m.reqDuration.WithLabelValues(s.proto(), op).Observe(s.now().Sub(start).Seconds())
	if err == nil && provider != "" {
		s.c.m.providers.WithLabelValues(s.proto(), provider).Inc()
	}
}

func retryable(err error) bool { return !errors.Is(err, ErrAuth) && !errors.Is(err, ErrRefused) }

// unanswered reports whether err is a transient failure of a request that was sent and whose
// answer was lost: it may have been done.
func unanswered(err error) bool {
	var te *transientError
	return errors.As(err, &te) && te.unanswered
}

// call runs fn against an open connection under the call timeout; with retry, transient
// failures are tried again (on a fresh connection) after a backoff, up to Attempts.
func (s *session) call(ctx context.Context, op string, retry bool, fn func(context.Context, conn) error) error {
	for i := 0; ; i++ {
		err := s.once(ctx, op, fn)
		if err == nil {
			return nil
		}
		if !retry || !retryable(err) || i+1 >= s.c.opts.Attempts || ctx.Err() != nil {
			return err
		}
		s.c.m.retries.WithLabelValues(s.proto(), op).Inc()
		s.log.Debugf("%s failed, retrying: %v", op, err)
		s.close()
		if serr := s.c.opts.Clock.Sleep(ctx, s.retryWait(i, err)); serr != nil {
			return err
		}
	}
}

// retryWait is the wait before attempt i+1 after err: the backoff, or the wait the BMC asked
// for in its answer (Retry-After, capped at maxRetryAfter) when that is longer.
func (s *session) retryWait(i int, err error) time.Duration {
	d := s.c.backoff(i)
	var te *transientError
	if errors.As(err, &te) {
		d = max(d, te.retryAfter)
	}
	return d
}

// once makes one request (opening the connection first when none is open) under a slot.
func (s *session) once(ctx context.Context, op string, fn func(context.Context, conn) error) error {
	release, err := s.c.slot(ctx, s.urgent)
	if err != nil {
		return err
	}
	defer release()
	cctx, cancel := context.WithTimeout(ctx, s.c.opts.CallTimeout)
	defer cancel()
	if err := s.connect(cctx); err != nil {
		return err
	}
	start := s.now()
	err = fn(cctx, s.conn)
	s.measure(op, start, err, s.conn.Provider())
	if err != nil && retryable(err) {
		s.drop()
	}
	return err
}

// read returns the node's power state. When it cannot be read or parsed the state is Unknown
// and the error a *StateUnknownError (an *AuthError stays as it is).
func (s *session) read(ctx context.Context) (State, error) {
	var raw string
	err := s.call(ctx, "state", true, func(ctx context.Context, c conn) error {
		r, err := c.PowerState(ctx)
		if err != nil {
			return err
		}
		raw = r
		if ParseState(r) == StateUnknown {
			return &transientError{err: fmt.Errorf("unrecognised power state %s", errtext.Quote(r))}
		}
		return nil
	})
	switch {
	case err == nil:
		return ParseState(raw), nil
	case errors.Is(err, ErrAuth):
		return StateUnknown, err
	}
	return StateUnknown, &StateUnknownError{Node: s.n.name, Raw: raw, Err: err}
}

// steady reads the state, waiting out a transition already in progress (up to ConfirmTimeout).
func (s *session) steady(ctx context.Context, want State) (State, error) {
	deadline := s.now().Add(s.c.opts.ConfirmTimeout)
	for {
		st, err := s.read(ctx)
		if err != nil || st != StateTransitioning {
			return st, err
		}
		if !s.now().Before(deadline) {
			return st, &NotConfirmedError{Node: s.n.name, Want: want, Last: st}
		}
		s.log.Debugf("power state is transitioning, waiting")
		if err := s.c.opts.Clock.Sleep(ctx, s.c.opts.PollInterval); err != nil {
			return StateUnknown, &StateUnknownError{Node: s.n.name, Err: err}
		}
	}
}

// send issues one power command, no sooner than MinCommandInterval after the BMC's previous one.
// It is not retried here: drive looks at the state before sending again.
func (s *session) send(ctx context.Context, action string) error {
	if !s.n.bmc.lastCommand.IsZero() {
		if wait := s.n.bmc.lastCommand.Add(s.c.opts.MinCommandInterval).Sub(s.now()); wait > 0 {
			if err := s.c.opts.Clock.Sleep(ctx, wait); err != nil {
				return err
			}
		}
	}
	// A command whose outcome could not be confirmed is not sent.
	if err := ctx.Err(); err != nil {
		return err
	}
	s.log.Infof("sending power %s", action)
	var task string
	err := s.call(ctx, action, false, func(ctx context.Context, c conn) error {
		var err error
		task, err = c.SetPower(ctx, action)
		return err
	})
	// Counted even when it failed, as the command may have reached the BMC; not when it never
	// had a slot to go out in.
	if !errors.Is(err, ErrNoSlot) {
		s.n.bmc.lastCommand = s.now()
	}
	if err == nil {
		s.task = task
	}
	return err
}

// followTask reads the task the last command was answered with, once per poll while it runs.
// A task that failed ends the operation with the BMC's reason (*TaskFailedError); one that
// completed or is gone, or that cannot be read (but for a transient failure, tried again at
// the next poll), leaves the outcome to the state.
func (s *session) followTask(ctx context.Context) error {
	var done bool
	err := s.call(ctx, "task", false, func(ctx context.Context, c conn) error {
		var err error
		done, err = c.Task(ctx, s.task)
		return err
	})
	var failed *TaskFailedError
	switch {
	case errors.As(err, &failed):
		s.task = ""
		return err
	case err != nil && retryable(err):
		s.log.Debugf("reading the command's task %s, trying again at the next poll: %v", s.task, err)
	case err != nil:
		s.log.Warnf("the command's task %s cannot be read, confirming by the state alone: %v", s.task, err)
		s.task = ""
	case done:
		s.task = ""
	}
	return nil
}

// drive brings the node to want with action: it reads the state, sends the command only when
// the node is not there, looks again before any re-send, and confirms.
func (s *session) drive(ctx context.Context, want State, action string) error {
	st, err := s.steady(ctx, want)
	if err != nil {
		return err
	}
	if st == want {
		s.log.Debugf("already %s, no command sent", want)
		return nil
	}
	reached, err := s.sendLooking(ctx, want, action)
	if err != nil || reached {
		return err
	}
	return s.confirm(ctx, want, action, s.c.opts.ConfirmTimeout)
}

// sendLooking sends action to a node that is not at want. After a failed send it reads the
// state, and sends again only when the node is still not there and the failure was transient,
// up to Attempts sends (never blind). reached: a read after a failed send found it at want.
// A nil error without reached leaves the outcome to the state: a send was accepted, or one
// sent again was refused after a failure that may have landed.
func (s *session) sendLooking(ctx context.Context, want State, action string) (reached bool, err error) {
	for attempt := 1; ; attempt++ {
		err := s.send(ctx, action)
		if err == nil {
			return false, nil
		}
		if errors.Is(err, ErrAuth) || ctx.Err() != nil {
			return false, err
		}
		// The command may have reached the BMC: look before sending again (never blind).
		st, rerr := s.steady(ctx, want)
		if rerr != nil {
			return false, fmt.Errorf("power %s failed (%v), then: %w", action, err, rerr)
		}
		if st == want {
			return true, nil
		}
		if action == actionSoft && unanswered(err) {
			// The shutdown was sent and its answer lost: the BMC may have it, and no read can
			// tell, as the OS keeps the power on while it shuts down. Sent again, it would
			// reach the OS as a second request, or, from a BMC that presses the power button
			// for it, power the server back on once it is off: the state decides, over the
			// grace period, and a node still on after it is forced off.
			s.log.Warnf("graceful shutdown sent, its answer lost, not sent again (the node stays %s while its OS shuts down); confirming by the state: %v", st, err)
			return false, nil
		}
		if errors.Is(err, ErrRefused) && attempt > 1 {
			// The send before failed and may have landed: refused now (iDRAC answers 409
			// "already powered ON" to a server coming up with its PowerState still Off), it
			// stands, and the state decides, as for a re-send while confirming.
			s.log.Warnf("power %s sent again was refused, the one before may have landed; confirming by the state: %v", action, err)
			return false, nil
		}
		if errors.Is(err, ErrRefused) || attempt >= s.c.opts.Attempts {
			return false, err
		}
		s.c.m.retries.WithLabelValues(s.proto(), action).Inc()
		s.log.Warnf("power %s failed, node still %s, retrying: %v", action, st, err)
		if serr := s.c.opts.Clock.Sleep(ctx, s.retryWait(attempt-1, err)); serr != nil {
			return false, err
		}
	}
}

// confirm polls until the node reports want or window passes. A power-on the BMC accepted
// while the node stays off is re-sent after ResendAfter, up to MaxResends times. A command the
// BMC took as a task has the task followed too (followTask): one that failed ends the wait.
func (s *session) confirm(ctx context.Context, want State, action string, window time.Duration) error {
	sent := s.now()
	deadline, lastSend, resends := sent.Add(window), sent, 0
	last := StateUnknown
	for {
		if err := s.c.opts.Clock.Sleep(ctx, s.c.opts.PollInterval); err != nil {
			return &NotConfirmedError{Node: s.n.name, Want: want, Last: last, Err: err}
		}
		st, err := s.read(ctx)
		switch {
		case err == nil:
			last = st
			if st == want {
				s.c.m.confirm.WithLabelValues(s.proto(), action).Observe(s.now().Sub(sent).Seconds())
				s.log.Infof("confirmed %s", want)
				return nil
			}
		case errors.Is(err, ErrAuth) || ctx.Err() != nil:
			return err
		default:
			last = StateUnknown
			s.log.Warnf("confirming %s: %v", want, err)
		}
		if s.task != "" {
			if err := s.followTask(ctx); err != nil {
				return err
			}
		}
		if !s.now().Before(deadline) {
			return &NotConfirmedError{Node: s.n.name, Want: want, Last: last}
		}
		if action == actionOn && err == nil && st == StateOff && resends < s.c.opts.MaxResends && s.now().Sub(lastSend) >= s.c.opts.ResendAfter {
			s.log.Warnf("power on accepted but node still off after %s, sending it again", s.now().Sub(lastSend))
			resends++
			// A re-send that fails, even refused (iDRAC answers 409 "already powered ON" to a
			// server still coming up), leaves the first command standing: the state decides,
			// until the deadline. Only an auth failure ends the wait here (the end of ctx
			// ends it at the next sleep, as not confirmed).
			if err := s.send(ctx, actionOn); err != nil {
				if errors.Is(err, ErrAuth) {
					return err
				}
				s.log.Warnf("re-sent power on failed, still confirming by the state: %v", err)
			}
			lastSend = s.now()
		}
	}
}

// gracefulOff asks the OS to shut down, waits up to GracePeriod, then cuts the power.
func (s *session) gracefulOff(ctx context.Context) error {
	st, err := s.steady(ctx, StateOff)
	if err != nil {
		return err
	}
	if st == StateOff {
		s.log.Debugf("already off, no command sent")
		return nil
	}
	// A send that failed transiently is sent again, as any command, once the state says the
	// node is still on: waiting the grace period out for a request that never reached the BMC
	// would cut the power of an OS never asked to shut down. One sent whose answer was lost is
	// not (sendLooking): the BMC may have it.
	reached, err := s.sendLooking(ctx, StateOff, actionSoft)
	switch {
	case reached:
		return nil
	case errors.Is(err, ErrAuth) || errors.Is(err, ErrStateUnknown) || errors.Is(err, ErrNotConfirmed) || ctx.Err() != nil:
		return err
	case errors.Is(err, ErrRefused):
		// Refused by the BMC, or not offered by it (no GracefulShutdown among the system's
		// reset types): the OS cannot be asked, so waiting the grace period would gain nothing.
		s.log.Warnf("graceful shutdown refused or not offered, the OS was not asked to shut down; forcing off now: %v", err)
		return s.drive(ctx, StateOff, actionOff)
	case err != nil:
		// Every send failed, transiently: one may yet have reached the BMC, so the state decides.
		s.log.Warnf("graceful shutdown request failed %d times (%v); confirming by reading the state", s.c.opts.Attempts, err)
	}
	cerr := s.confirm(ctx, StateOff, actionSoft, s.c.opts.GracePeriod)
	if errors.Is(cerr, ErrRefused) && ctx.Err() == nil {
		// The BMC took the request as a task that failed: the OS was not asked, as when it
		// refuses the request.
		s.log.Warnf("graceful shutdown failed at the bmc; forcing off now: %v", cerr)
		return s.drive(ctx, StateOff, actionOff)
	}
	if !errors.Is(cerr, ErrNotConfirmed) || ctx.Err() != nil {
		return cerr
	}
	s.log.Warnf("graceful shutdown did not finish within %s, forcing off", s.c.opts.GracePeriod)
	return s.drive(ctx, StateOff, actionOff)
}

// cycle restarts a node that is on as a confirmed off then a confirmed on; a node that is off
// is simply powered on. Not IPMI's native cycle: its end state is its start state, so reading
// On after it confirms nothing (a BMC that took the command and did nothing, or one polled
// before the power went down, read as done), and Redfish BMCs (the DMTF mockup among them) may
// lack PowerCycle.
func (s *session) cycle(ctx context.Context) error {
	st, err := s.steady(ctx, StateOn)
	if err != nil {
		return err
	}
	if st == StateOn {
		if err := s.drive(ctx, StateOff, actionOff); err != nil {
			return err
		}
	}
	return s.drive(ctx, StateOn, actionOn)
}
