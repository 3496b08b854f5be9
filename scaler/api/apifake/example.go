package apifake

import (
	"time"

	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/fleet"
)

// Example returns a fake of a small fleet, the same every call: two CPU servers (one on and
// busy, one off) and one GPU server draining, an explanation for each, and a plan that powers
// the GPU server off and skips the others. Tests of output formats use it.
func Example() *Backend {
	at := time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)
	nodes := []api.NodeStatus{
		{Name: "cpu01", Pool: "cpu-epyc", State: fleet.StateOn, Since: at.Add(-3 * time.Hour), Power: "on", CostPerHour: 0.135, Currency: "EUR", Reason: fleet.SkipAllocated, Detail: "3 jobs running"},
		{Name: "cpu02", Pool: "cpu-epyc", State: fleet.StateOff, Since: at.Add(-time.Hour), Power: "off", CostPerHour: 0.135, Currency: "EUR", Reason: fleet.SkipNotNeeded, Detail: "no demand for cpu-epyc"},
		{Name: "gpu01", Pool: "gpu-h100", State: fleet.StateDraining, Since: at.Add(-5 * time.Minute), Power: "on", CostPerHour: 24, Currency: "EUR", Reason: fleet.ReasonIdle, Detail: "cpu max 2% and gpu max 0% over 10m"},
	}
	b := New(api.Status{
		LastPass: at, LastPassOK: true, Telemetry: true, JobsKnown: true,
		Nodes: nodes,
		Pools: []api.PoolStatus{
			{Name: "cpu-epyc", Servers: 2, Powered: 1, Desired: 1},
			{Name: "gpu-h100", Servers: 1, Powered: 1, Desired: 0},
		},
		SpendPerHour: 24.135, AllOnPerHour: 24.27, Currency: "EUR",
	})
	b.SetExplanation("gpu01", api.Explanation{
		Node:      nodes[2],
		Jobs:      fleet.JobsView{Known: true, Drained: true, DrainedByRota: true, Responding: true},
		Telemetry: fleet.TelemetryView{Present: true, LastSample: at.Add(-15 * time.Second), CPUMax: 0.02},
		Action:    &fleet.Action{Kind: fleet.PowerOff, Node: "gpu01", Pool: "gpu-h100", Reason: fleet.ReasonDrained, Detail: "drained and empty"},
		History: []api.AuditRecord{
			{Time: at.Add(-5 * time.Minute), Node: "gpu01", Pool: "gpu-h100", Action: fleet.Drain, Reason: fleet.ReasonIdle, Detail: "cpu max 2% and gpu max 0% over 10m", Result: "succeeded"},
		},
	})
	b.SetExplanation("cpu01", api.Explanation{
		Node:      nodes[0],
		Jobs:      fleet.JobsView{Known: true, Jobs: 3, CPUs: 24, Responding: true},
		Telemetry: fleet.TelemetryView{Present: true, LastSample: at.Add(-10 * time.Second), CPUMax: 0.71},
		Skip:      &fleet.Skip{Node: "cpu01", Pool: "cpu-epyc", Reason: fleet.SkipAllocated, Detail: "3 jobs running"},
	})
	b.SetDecision(fleet.Decision{
		Actions: []fleet.Action{{Kind: fleet.PowerOff, Node: "gpu01", Pool: "gpu-h100", Reason: fleet.ReasonDrained, Detail: "drained and empty"}},
		Skips: []fleet.Skip{
			{Node: "cpu01", Pool: "cpu-epyc", Reason: fleet.SkipAllocated, Detail: "3 jobs running"},
			{Node: "cpu02", Pool: "cpu-epyc", Reason: fleet.SkipNotNeeded, Detail: "no demand for cpu-epyc"},
		},
		Desired: map[string]int{"cpu-epyc": 1, "gpu-h100": 0},
	})
	return b
}
