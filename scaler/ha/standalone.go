package ha

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotahq/rota/scaler/api"
)

// Standalone is the leadership of a single rota on a bbolt file: the file's lock keeps other
// rotas out, so it always leads.
type Standalone struct {
	name    string
	metrics metrics
}

// NewStandalone registers the leader metrics (always leading) for the rota named name.
func NewStandalone(name string, reg prometheus.Registerer) (*Standalone, error) {
	m, err := newMetrics(reg, "")
	if err != nil {
		return nil, err
	}
	m.leader.Set(1)
	m.terms.Inc()
	return &Standalone{name: name, metrics: m}, nil
}

// Run runs lead until ctx ends.
func (s *Standalone) Run(ctx context.Context, lead func(context.Context) error) error {
	return lead(ctx)
}

// Leading is always true.
func (s *Standalone) Leading() bool { return true }

// Status says this rota leads alone.
func (s *Standalone) Status() api.HAStatus {
	return api.HAStatus{Backend: "bbolt", Self: s.name, Leading: true, Leader: s.name}
}
