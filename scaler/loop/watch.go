package loop

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
)

// What started a pass: the rota_scaler_pass_triggers_total label.
const (
	triggerStart    = "start"    // the first pass, at start
	triggerInterval = "interval" // policy.evaluation_interval passed
	triggerNudge    = "nudge"    // an Alertmanager webhook or an operator's change
	triggerWatch    = "watch"    // the pending-work watch saw new work
	triggerWake     = "wake"     // the job manager asked for servers (Wake)
)

// watchLogEvery bounds how often a failing watch is logged.
const watchLogEvery = time.Minute

// nudge is a request for a pass, with what asked for it.
type nudge struct {
	trigger, reason string
}

// request asks for a pass soon; it never blocks, and merges with a request already pending
// (the pass it waits for serves both).
func (l *Loop) request(trigger, reason string) {
	ch := l.work
	if trigger == triggerNudge {
		ch = l.nudges
	}
	select {
	case ch <- nudge{trigger, reason}:
	default:
	}
}

// watch reads the job manager's waiting work every jobs.watch_interval until ctx ends and asks
// for a pass when an identifier appears that the last successful read lacked: new work is
// planned for within seconds instead of at the next interval. The pass waits its turn (one at
// a time) and a burst of arrivals asks for one pass per read. A read that fails is counted,
// logged at most once a minute, and changes nothing: the passes go on at their interval, and
// the next read that works compares with the last one that did, so work that arrived during
// the failure still asks for a pass.
func (l *Loop) watch(ctx context.Context, every time.Duration) {
	seen := map[string]bool{}
	var failing int
	var lastLog time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.o.Clock.After(every):
		}
		ids, err := l.o.Watch.Waiting(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			l.metrics.watchReads.WithLabelValues("error").Inc()
			failing++
			if now := l.o.Clock.Now(); failing == 1 || now.Sub(lastLog) >= watchLogEvery {
				l.log.WithError(err).WithField("failed_reads", failing).Warn("pending-work watch failed; passes run at the evaluation interval until it reads again")
				lastLog = now
			}
			continue
		}
		l.metrics.watchReads.WithLabelValues("success").Inc()
		if failing > 0 {
			l.log.WithField("failed_reads", failing).Info("pending-work watch reads again")
			failing = 0
		}
		next := make(map[string]bool, len(ids))
		fresh := 0
		for _, id := range ids {
			if !seen[id] && !next[id] {
				fresh++
			}
			next[id] = true
		}
		seen = next
		if fresh > 0 {
			l.log.WithFields(logrus.Fields{"new": fresh, "waiting": len(next)}).Debug("new work waits")
			l.request(triggerWatch, fmt.Sprintf("%d new jobs waiting", fresh))
		}
	}
}
