package loop

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/fleet"
)

// wakes are the servers the job manager asked to be powered on (Wake), and the callers waiting
// for a pass to answer them.
type wakes struct {
	mu sync.Mutex
	// wanted is held until a pass powers the server on, finds it on or refuses it, or until
	// its pool's boot timeout has passed.
	wanted map[string]*wanted
	// callers wait for the first pass that takes their request.
	callers []*waker
	// stopped: the loop ended (endWakes) and no pass takes a request until it runs again.
	stopped bool
}

type wanted struct {
	note  string
	until time.Time
	// renudged: a pass left it waiting and asked once for the next pass at once.
	renudged bool
}

type waker struct {
	nodes []string
	done  chan wakeAnswer // buffered: a pass never blocks on a caller gone
}

// wakeAnswer is a pass's results for a caller, or why no pass of this rota will take its
// request (the term ended).
type wakeAnswer struct {
	results []api.WakeResult
	err     error
}

// Wake asks for nodes to be powered on for work the job manager placed on them (api.Backend):
// it records the request, asks for a pass, and returns each node's result once a pass took it.
// The pass powers on each asked-for node that is Off, with the reason "requested", under the
// same gate as the planner's own actions: never while paused, never a pinned server, one in
// maintenance or one whose power is unknown.
func (l *Loop) Wake(ctx context.Context, nodes []string, note string) ([]api.WakeResult, error) {
	if err := l.refuseWrite(); err != nil {
		return nil, err
	}
	now := l.o.Clock.Now()
	w := &waker{nodes: slices.Clone(nodes), done: make(chan wakeAnswer, 1)}
	l.wakes.mu.Lock()
	if l.wakes.stopped {
		l.wakes.mu.Unlock()
		return nil, api.ErrStopping
	}
	for _, n := range nodes {
		if ref, ok := l.cfg.Node(n); ok {
			// The note is the caller's: it goes to the audit cut short.
			l.wakes.wanted[n] = &wanted{note: errtext.Cut(note, errtext.Max), until: now.Add(time.Duration(ref.Pool.BootTimeout))}
		}
	}
	l.wakes.callers = append(l.wakes.callers, w)
	l.wakes.mu.Unlock()
	l.log.WithFields(logrus.Fields{"nodes": len(nodes), "note": errtext.Quote(note)}).Info("wake requested")
	l.request(triggerWake, "wake requested")
	select {
	case a := <-w.done:
		return a.results, a.err
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a pass to take the wake request (rota keeps it): %w", ctx.Err())
	}
}

// takeWakes returns the notes of the servers still wanted on (dropping those past their time)
// and the callers this pass answers.
func (l *Loop) takeWakes(now time.Time) (map[string]string, []*waker) {
	l.wakes.mu.Lock()
	defer l.wakes.mu.Unlock()
	asked := map[string]string{}
	for n, w := range l.wakes.wanted {
		if now.After(w.until) {
			l.log.WithField("node", n).Warn("wake request dropped: not powered on within its pool's boot timeout")
			delete(l.wakes.wanted, n)
			continue
		}
		asked[n] = w.note
	}
	callers := l.wakes.callers
	l.wakes.callers = nil
	return asked, callers
}

// withWakes adds a power-on for each asked-for server that is Off and has no action this pass,
// in the snapshot's order, and drops the planner's skips for it.
func withWakes(snap fleet.Snapshot, dec fleet.Decision, asked map[string]string) fleet.Decision {
	if len(asked) == 0 {
		return dec
	}
	added := map[string]bool{}
	for _, n := range snap.Nodes {
		note, ok := asked[n.Name]
		if !ok || n.State != fleet.StateOff || slices.ContainsFunc(dec.Actions, func(a fleet.Action) bool { return a.Node == n.Name }) {
			continue
		}
		dec.Actions = append(dec.Actions, fleet.Action{Kind: fleet.PowerOn, Node: n.Name, Pool: n.Pool,
			Reason: fleet.ReasonRequested, Detail: "the job manager placed work on it: " + note})
		added[n.Name] = true
	}
	dec.Skips = slices.DeleteFunc(slices.Clone(dec.Skips), func(s fleet.Skip) bool { return added[s.Node] })
	return dec
}

// answerWakes settles each asked-for server after the pass started its actions, answers the
// callers, and keeps the servers that wait. When some wait for the first time, it asks for one
// more pass at once (an action just ended or repair just moved the server, most often). A pass
// whose ctx ended (rota stops, or its term ends) answers no caller: what it read was cut short
// (a BMC read cut reads as unknown, the wake as waiting) and no pass of this loop follows to keep
// a request waiting; endWakes tells them to ask again.
func (l *Loop) answerWakes(ctx context.Context, snap fleet.Snapshot, dec fleet.Decision, asked map[string]string, callers []*waker) {
	if len(asked) == 0 && len(callers) == 0 {
		return
	}
	if ctx.Err() != nil {
		l.wakes.mu.Lock()
		l.wakes.callers = append(callers, l.wakes.callers...)
		l.wakes.mu.Unlock()
		return
	}
	results := map[string]api.WakeResult{}
	for _, n := range snap.Nodes {
		if _, ok := asked[n.Name]; ok {
			results[n.Name] = l.wakeResult(n, dec)
		}
	}
	l.wakes.mu.Lock()
	again := false
	for n, r := range results {
		w, ok := l.wakes.wanted[n]
		switch {
		case !ok:
		case r.Result != api.WakeWaiting:
			delete(l.wakes.wanted, n)
		case !w.renudged:
			w.renudged, again = true, true
		}
	}
	l.wakes.mu.Unlock()
	for _, c := range callers {
		out := make([]api.WakeResult, len(c.nodes))
		for i, n := range c.nodes {
			r, ok := results[n]
			if !ok {
				r = api.WakeResult{Node: n, Result: api.WakeRefused, Reason: fleet.SkipUnknownNode, Detail: "not in the inventory"}
			}
			out[i] = r
			l.metrics.wakes.WithLabelValues(r.Result).Inc()
		}
		c.done <- wakeAnswer{results: out}
	}
	if again {
		l.request(triggerWake, "a requested server waits")
	}
}

// wakeResult is what this pass made of a request for n.
func (l *Loop) wakeResult(n fleet.Node, dec fleet.Decision) api.WakeResult {
	r := api.WakeResult{Node: n.Name}
	if a, s := verdict(n.Name, dec); a != nil && a.Kind == fleet.PowerOn {
		r.Result, r.Reason, r.Detail = api.WakeStarted, a.Reason, a.Detail
		if l.cfg.Policy.DryRun {
			r.Result = api.WakeDryRun
		}
		return r
	} else if s != nil {
		r.Reason, r.Detail = s.Reason, s.Detail
	}
	switch {
	case n.State == fleet.StatePoweringOn || n.State == fleet.StateBooting || n.State == fleet.StateOn:
		r.Result, r.Reason, r.Detail = api.WakePowered, "", string(n.State)
	case r.Reason == fleet.SkipPaused || r.Reason == fleet.SkipPinned || r.Reason == fleet.SkipMaintenance:
		r.Result = api.WakeRefused
	case n.State == fleet.StateFailed:
		r.Result, r.Reason, r.Detail = api.WakeRefused, fleet.SkipBackoff, "failed: rota retries it after its backoff"
	case n.State == fleet.StateUnknown || n.Power == bmc.StateUnknown:
		r.Result, r.Reason, r.Detail = api.WakeWaiting, fleet.SkipPowerUnknown, "bmc state unknown"
	default:
		r.Result = api.WakeWaiting
		if r.Reason == "" {
			r.Detail = string(n.State)
		}
	}
	return r
}

// endWakes answers, when this rota's loop stops (its term ended, or it stops), the callers no
// pass took, with why: a rota that no longer leads names the leader, one that stops says so
// (api.ErrStopping); either way the caller asks again (rotactl slurm resume does). The servers
// asked for are dropped, the next leader knows nothing of them; until the loop runs again, a
// wake is refused so at once (a stopping rota serves its API a while after its loop ended).
func (l *Loop) endWakes() {
	l.wakes.mu.Lock()
	callers := l.wakes.callers
	l.wakes.callers, l.wakes.wanted, l.wakes.stopped = nil, map[string]*wanted{}, true
	l.wakes.mu.Unlock()
	if len(callers) == 0 {
		return
	}
	err := l.refuseWrite()
	if err == nil {
		err = api.ErrStopping
	}
	l.log.WithError(err).WithField("callers", len(callers)).Warn("wake requests left to the next leader")
	for _, c := range callers {
		c.done <- wakeAnswer{err: err}
	}
}
