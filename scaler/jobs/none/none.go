package none

import (
	"context"

	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs"
)

// Manager is the adapter. Its zero value is ready and safe for concurrent use.
type Manager struct{}

var _ jobs.Manager = Manager{}

// Nodes returns an empty view: no server's allocation is known.
func (Manager) Nodes(ctx context.Context) (map[string]fleet.JobsView, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return map[string]fleet.JobsView{}, nil
}

// Demand returns no demand: without a job manager nothing is waiting that rota can see.
func (Manager) Demand(ctx context.Context) ([]fleet.Demand, error) { return nil, ctx.Err() }

// Drain does nothing: there is nothing to drain.
func (Manager) Drain(ctx context.Context, _, _ string) error { return ctx.Err() }

// Resume does nothing.
func (Manager) Resume(ctx context.Context, _ string) error { return ctx.Err() }
