package jobsfake_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs"
	"github.com/rotahq/rota/scaler/jobs/jobsfake"
)

func TestDrainAndResume(t *testing.T) {
	tests := []struct {
		name        string
		start       *fleet.JobsView // nil: node unknown
		op          jobsfake.Op
		wantErr     error // nil: success; errAny: any error
		wantDrained bool
	}{
		{name: "drain an active node", start: &fleet.JobsView{Responding: true}, op: jobsfake.OpDrain, wantDrained: true},
		{name: "drain twice is harmless", start: &fleet.JobsView{Drained: true, DrainedByRota: true}, op: jobsfake.OpDrain, wantDrained: true},
		{name: "resume rota's drain", start: &fleet.JobsView{Drained: true, DrainedByRota: true}, op: jobsfake.OpResume},
		{name: "resume an active node is harmless", start: &fleet.JobsView{}, op: jobsfake.OpResume},
		{name: "resume a person's drain", start: &fleet.JobsView{Drained: true}, op: jobsfake.OpResume, wantErr: jobs.ErrNotOurs, wantDrained: true},
		{name: "drain an unknown node", op: jobsfake.OpDrain, wantErr: errAny},
		{name: "resume an unknown node", op: jobsfake.OpResume, wantErr: errAny},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := jobsfake.New()
			if tc.start != nil {
				m.SetNode("n1", *tc.start)
			}
			var err error
			if tc.op == jobsfake.OpDrain {
				err = m.Drain(context.Background(), "n1", "idle")
			} else {
				err = m.Resume(context.Background(), "n1")
			}
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.wantErr == errAny && err == nil, tc.wantErr != nil && tc.wantErr != errAny && !errors.Is(err, tc.wantErr):
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if got := m.Calls(); len(got) != 1 || got[0].Op != tc.op || got[0].Node != "n1" {
				t.Errorf("Calls = %+v, want one %s of n1", got, tc.op)
			}
			if v, _ := m.Node("n1"); v.Drained != tc.wantDrained {
				t.Errorf("drained = %v, want %v", v.Drained, tc.wantDrained)
			}
		})
	}
}

var errAny = errors.New("any error")

func TestViewsAreCopies(t *testing.T) {
	m := jobsfake.New()
	m.SetNode("n1", fleet.JobsView{Jobs: 2})
	m.SetDemand([]fleet.Demand{{Class: "light", Shape: config.Shape{CPUs: 4}, Nodes: 1, Count: 3}})
	nodes, err := m.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !nodes["n1"].Known || nodes["n1"].Jobs != 2 {
		t.Fatalf("Nodes = %+v", nodes)
	}
	nodes["n2"] = fleet.JobsView{}
	d, err := m.Demand(context.Background())
	if err != nil || len(d) != 1 || d[0].Count != 3 {
		t.Fatalf("Demand = %+v, %v", d, err)
	}
	d[0].Count = 99
	again, _ := m.Nodes(context.Background())
	if _, ok := again["n2"]; ok {
		t.Error("a caller's change to Nodes' map reached the fake")
	}
	if d2, _ := m.Demand(context.Background()); d2[0].Count != 3 {
		t.Error("a caller's change to Demand's slice reached the fake")
	}
	m.RemoveNode("n1")
	if _, ok := m.Node("n1"); ok {
		t.Error("RemoveNode left n1")
	}
}

func TestInjectedErrors(t *testing.T) {
	boom := errors.New("boom")
	ctx := context.Background()
	m := jobsfake.New()
	m.SetNode("n1", fleet.JobsView{})
	for _, op := range []jobsfake.Op{jobsfake.OpNodes, jobsfake.OpDemand, jobsfake.OpDrain, jobsfake.OpResume} {
		m.SetError(op, boom)
	}
	if _, err := m.Nodes(ctx); !errors.Is(err, boom) {
		t.Errorf("Nodes: %v", err)
	}
	if _, err := m.Demand(ctx); !errors.Is(err, boom) {
		t.Errorf("Demand: %v", err)
	}
	if err := m.Drain(ctx, "n1", "idle"); !errors.Is(err, boom) {
		t.Errorf("Drain: %v", err)
	}
	if err := m.Resume(ctx, "n1"); !errors.Is(err, boom) {
		t.Errorf("Resume: %v", err)
	}
	if v, _ := m.Node("n1"); v.Drained {
		t.Error("a failed drain drained the node")
	}
	m.SetError(jobsfake.OpNodes, nil)
	if _, err := m.Nodes(ctx); err != nil {
		t.Errorf("Nodes after clearing the error: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := m.Nodes(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("Nodes on a cancelled context: %v", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	m := jobsfake.New()
	m.SetNode("n1", fleet.JobsView{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			ctx := context.Background()
			_ = m.Drain(ctx, "n1", "idle")
			_, _ = m.Nodes(ctx)
			_ = m.Resume(ctx, "n1")
			m.SetDemand(nil)
		})
	}
	wg.Wait()
	if got := len(m.Calls()); got != 16 {
		t.Errorf("%d calls recorded, want 16", got)
	}
}
