package api

import (
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// Clock is the server's time source.
type Clock interface{ Now() time.Time }

// rejectLogEvery is the least time between two log lines about rejected webhook calls.
const rejectLogEvery = time.Minute

// rejectLog keeps the log of rejected webhook calls to one line a minute: anyone who reaches
// the listener can send them, and a line each would let them fill the disk (1,000 calls made
// 1,001 lines). Every rejection is counted by rota_webhook_requests_total{result}; the next line
// says how many went unlogged. Safe for concurrent use.
type rejectLog struct {
	clock Clock
	mu    sync.Mutex
	next  time.Time
	quiet int // rejections not logged since the last line
}

func (l *rejectLog) warn(log *logrus.Entry, result, reason string) {
	l.mu.Lock()
	now := l.clock.Now()
	if now.Before(l.next) {
		l.quiet++
		l.mu.Unlock()
		return
	}
	quiet := l.quiet
	l.quiet, l.next = 0, now.Add(rejectLogEvery)
	l.mu.Unlock()
	log.WithFields(logrus.Fields{"result": result, "reason": reason, "unlogged_before": quiet}).
		Warn("webhook rejected (one line a minute at most; rota_webhook_requests_total counts each)")
}
