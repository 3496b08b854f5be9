package exec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// StateOutput is what state_command prints: every server the job manager knows, by name.
// Every field of every node is required; unknown fields are refused (a misspelt "jobs" must
// not read as an idle server).
//
//	{"nodes": {"n1": {"jobs": 1, "cpus": 4, "gpus": 0, "drained": false,
//	                  "drained_by_rota": false, "responding": true}}}
type StateOutput struct {
	Nodes *map[string]NodeState `json:"nodes"`
}

// NodeState is one server of StateOutput.
type NodeState struct {
	// Jobs, CPUs and GPUs are allocated now.
	Jobs *int `json:"jobs"`
	CPUs *int `json:"cpus"`
	GPUs *int `json:"gpus"`
	// Drained: the job manager places no new work on it; DrainedByRota: the drain's reason
	// starts with "rota:" (rota made it).
	Drained       *bool `json:"drained"`
	DrainedByRota *bool `json:"drained_by_rota"`
	// Responding: the job manager's agent on the server answers.
	Responding *bool `json:"responding"`
}

// DemandOutput is what demand_command prints: the work waiting, grouped by shape.
// cpus, nodes, count and since are required; unknown fields are refused.
//
//	{"demand": [{"partition": "batch", "cpus": 4, "gpus": 1, "memory_bytes": 0, "nodes": 1,
//	             "count": 3, "department": "", "region": "", "since": "2026-11-20T09:00:00Z"}]}
type DemandOutput struct {
	Demand *[]DemandGroup `json:"demand"`
}

// DemandGroup is Count jobs of one shape.
type DemandGroup struct {
	Partition string `json:"partition"`
	// CPUs, GPUs and MemoryBytes are what each job asks of each of its servers.
	CPUs        *int   `json:"cpus"`
	GPUs        int    `json:"gpus"`
	MemoryBytes uint64 `json:"memory_bytes"`
	// Nodes is how many servers each job needs at once.
	Nodes      *int   `json:"nodes"`
	Count      *int   `json:"count"`
	Department string `json:"department"`
	Region     string `json:"region"`
	// Since is when the oldest of these jobs was submitted (RFC 3339).
	Since *time.Time `json:"since"`
}

// WaitingOutput is what watch_command prints: an identifier for each piece of work waiting
// that more servers could start (a job id), stable from one run to the next. Unknown fields
// are refused.
//
//	{"waiting": ["1041", "1042"]}
type WaitingOutput struct {
	Waiting *[]string `json:"waiting"`
}

// decodeStrict decodes one JSON value into v, refusing unknown fields and trailing data.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("not the documented JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("not the documented JSON: data after the JSON object")
	}
	return nil
}

// parseState reads state_command's output.
func parseState(b []byte) (map[string]fleet.JobsView, error) {
	var out StateOutput
	if err := decodeStrict(b, &out); err != nil {
		return nil, err
	}
	if out.Nodes == nil {
		return nil, errors.New(`no "nodes" object`)
	}
	views := make(map[string]fleet.JobsView, len(*out.Nodes))
	for name, n := range *out.Nodes {
		if name == "" {
			return nil, errors.New("a node with an empty name")
		}
		if n.Jobs == nil || n.CPUs == nil || n.GPUs == nil || n.Drained == nil || n.DrainedByRota == nil || n.Responding == nil {
			return nil, fmt.Errorf("node %s: jobs, cpus, gpus, drained, drained_by_rota and responding are all required", errtext.Quote(name))
		}
		if *n.Jobs < 0 || *n.CPUs < 0 || *n.GPUs < 0 {
			return nil, fmt.Errorf("node %s: negative jobs, cpus or gpus", errtext.Quote(name))
		}
		if *n.DrainedByRota && !*n.Drained {
			return nil, fmt.Errorf("node %s: drained_by_rota without drained", errtext.Quote(name))
		}
		views[name] = fleet.JobsView{
			Known: true, Jobs: *n.Jobs, CPUs: *n.CPUs, GPUs: *n.GPUs,
			Drained: *n.Drained, DrainedByRota: *n.DrainedByRota, Responding: *n.Responding,
		}
	}
	return views, nil
}

// parseDemand reads demand_command's output; classify names each group's class.
func parseDemand(b []byte, classify func(config.Shape) string) ([]fleet.Demand, error) {
	var out DemandOutput
	if err := decodeStrict(b, &out); err != nil {
		return nil, err
	}
	if out.Demand == nil {
		return nil, errors.New(`no "demand" list`)
	}
	demand := make([]fleet.Demand, 0, len(*out.Demand))
	for i, g := range *out.Demand {
		switch {
		case g.CPUs == nil || g.Nodes == nil || g.Count == nil || g.Since == nil:
			return nil, fmt.Errorf("demand[%d]: cpus, nodes, count and since are required", i)
		case *g.CPUs < 1:
			return nil, fmt.Errorf("demand[%d]: cpus must be at least 1", i)
		case g.GPUs < 0:
			return nil, fmt.Errorf("demand[%d]: gpus must not be negative", i)
		case *g.Nodes < 1 || *g.Count < 1:
			return nil, fmt.Errorf("demand[%d]: nodes and count must be at least 1", i)
		case g.Since.IsZero():
			return nil, fmt.Errorf("demand[%d]: since is the zero time", i)
		}
		shape := config.Shape{Partition: g.Partition, CPUs: *g.CPUs, GPUs: g.GPUs, Memory: config.Bytes(g.MemoryBytes)}
		demand = append(demand, fleet.Demand{
			Class: classify(shape), Partition: g.Partition, Department: g.Department, Region: g.Region,
			Shape: shape, Nodes: *g.Nodes, Count: *g.Count, Since: *g.Since,
		})
	}
	return demand, nil
}

// parseWaiting reads watch_command's output.
func parseWaiting(b []byte) ([]string, error) {
	var out WaitingOutput
	if err := decodeStrict(b, &out); err != nil {
		return nil, err
	}
	if out.Waiting == nil {
		return nil, errors.New(`no "waiting" list`)
	}
	for i, id := range *out.Waiting {
		if id == "" {
			return nil, fmt.Errorf("waiting[%d]: an empty identifier", i)
		}
	}
	return *out.Waiting, nil
}
