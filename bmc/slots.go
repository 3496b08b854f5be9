package bmc

import (
	"context"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// slots is the concurrency cap: n slots, each held by one request out to a BMC. A request that
// waits is served in turn among its class, and a power-on's requests (urgent) before any
// other's: at the default 64 slots, thousands of shutdowns polling their servers every 2 s keep
// every slot busy and a queue of requests as long as there are shutdowns, and a power-on for
// work that waits queued behind them would wait that queue out for each of its requests (the
// open, the state read, the command) before its command went out. Safe for concurrent use.
type slots struct {
	mu   sync.Mutex
	free int
	// urgent and normal are the requests waiting, in the order they came; a slot freed goes to
	// the first urgent one, else the first normal one, else is free. So free > 0 only while
	// none waits.
	urgent, normal []chan struct{}
	waiting        prometheus.Gauge // the requests waiting (rota_bmc_requests_waiting)
}

func newSlots(n int, waiting prometheus.Gauge) *slots {
	return &slots{free: n, waiting: waiting}
}

// take waits for a slot until ctx ends.
func (s *slots) take(ctx context.Context, urgent bool) error {
	s.mu.Lock()
	if s.free > 0 {
		s.free--
		s.mu.Unlock()
		return nil
	}
	turn := make(chan struct{})
	queue := &s.normal
	if urgent {
		queue = &s.urgent
	}
	*queue = append(*queue, turn)
	s.waiting.Inc()
	s.mu.Unlock()
	select {
	case <-turn:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	select {
	case <-turn:
		// Given a slot as ctx ended: handed on (give runs without s.mu).
		s.mu.Unlock()
		s.give()
	default:
		*queue = slices.DeleteFunc(*queue, func(c chan struct{}) bool { return c == turn })
		s.waiting.Dec()
		s.mu.Unlock()
	}
	return ctx.Err()
}

// give frees a slot taken: to the first request waiting, urgent ones first.
func (s *slots) give() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, queue := range []*[]chan struct{}{&s.urgent, &s.normal} {
		if len(*queue) > 0 {
			turn := (*queue)[0]
			*queue = (*queue)[1:]
			s.waiting.Dec()
			close(turn)
			return
		}
	}
	s.free++
}
