package none_test

import (
	"context"
	"errors"
	"testing"

	"github.com/rotahq/rota/scaler/jobs/none"
)

func TestNoneKnowsNothingAndDoesNothing(t *testing.T) {
	ctx := context.Background()
	var m none.Manager
	nodes, err := m.Nodes(ctx)
	if err != nil || nodes == nil || len(nodes) != 0 {
		t.Fatalf("Nodes = %v, %v; want an empty non-nil map", nodes, err)
	}
	if d, err := m.Demand(ctx); err != nil || len(d) != 0 {
		t.Fatalf("Demand = %v, %v; want nothing", d, err)
	}
	if err := m.Drain(ctx, "n1", "idle"); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if err := m.Resume(ctx, "n1"); err != nil {
		t.Fatalf("Resume: %v", err)
	}
}

func TestNoneHonoursCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var m none.Manager
	if _, err := m.Nodes(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Nodes: %v, want context.Canceled", err)
	}
	if _, err := m.Demand(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Demand: %v, want context.Canceled", err)
	}
	if err := m.Drain(ctx, "n1", "idle"); !errors.Is(err, context.Canceled) {
		t.Errorf("Drain: %v, want context.Canceled", err)
	}
	if err := m.Resume(ctx, "n1"); !errors.Is(err, context.Canceled) {
		t.Errorf("Resume: %v, want context.Canceled", err)
	}
}
