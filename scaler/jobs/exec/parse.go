package exec

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/internal/strictjson"
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
	// Running, optional, lists the jobs on the server; rota moves work (policy.moves) only
	// off a server whose every job is listed.
	Running []RunningJob `json:"running"`
}

// RunningJob is one job on a server: id, cpus and started are required.
type RunningJob struct {
	ID         string `json:"id"`
	Partition  string `json:"partition"`
	Department string `json:"department"`
	// CPUs, GPUs and MemoryBytes are what it holds on this server; Servers how many it spans.
	CPUs        *int   `json:"cpus"`
	GPUs        int    `json:"gpus"`
	MemoryBytes uint64 `json:"memory_bytes"`
	Servers     int    `json:"servers"`
	// Requeueable: the job manager may requeue it; DoNotDisrupt: never move it.
	Requeueable  bool `json:"requeueable"`
	DoNotDisrupt bool `json:"do_not_disrupt"`
	// Started, TimeLimitSeconds (0: none) and Checkpoint (last saved progress; absent:
	// unknown, a move loses its whole run).
	Started          *time.Time `json:"started"`
	TimeLimitSeconds int64      `json:"time_limit_seconds"`
	Checkpoint       *time.Time `json:"checkpoint"`
	Needs
}

// Needs is what a job can run on beyond its shape, all optional: a constraint expression
// (Slurm's syntax), a GPU type, the only servers it may use and those it may not
// (comma-separated), and the storage its data is on (a name of policy.storage).
type Needs struct {
	Constraint string `json:"constraint"`
	GPUType    string `json:"gpu_type"`
	Nodelist   string `json:"nodelist"`
	Exclude    string `json:"exclude"`
	Storage    string `json:"storage"`
}

func (n Needs) fleet() fleet.Needs {
	return fleet.Needs{Features: n.Constraint, GPUType: n.GPUType, Nodes: n.Nodelist, Exclude: n.Exclude, Storage: n.Storage}
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
	// TimeLimitSeconds is the shortest time limit of these jobs (0: none).
	TimeLimitSeconds int64 `json:"time_limit_seconds"`
	Needs
}

// WaitingOutput is what watch_command prints: an identifier for each piece of work waiting
// that more servers could start (a job id), stable from one run to the next. Unknown fields
// are refused.
//
//	{"waiting": ["1041", "1042"]}
type WaitingOutput struct {
	Waiting *[]string `json:"waiting"`
}

// decodeStrict decodes one JSON value into v, refusing unknown fields, trailing data, a key
// given twice and a field in another case (see strictjson).
func decodeStrict(b []byte, v any) error {
	switch err := strictjson.Decode(b, v, strictjson.RefuseUnknown); {
	case errors.Is(err, io.EOF):
		return errors.New("not the documented JSON: no output")
	case err != nil:
		return errors.New("not the documented JSON: " + err.Error())
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
		running, err := parseRunning(name, n.Running)
		if err != nil {
			return nil, err
		}
		if len(running) > *n.Jobs {
			// Allocation is read from jobs, cpus and gpus: a server listing work they call
			// empty could be powered off under it.
			return nil, fmt.Errorf(`node %s: lists %d running jobs but "jobs" is %d`, errtext.Quote(name), len(running), *n.Jobs)
		}
		views[name] = fleet.JobsView{
			Known: true, Jobs: *n.Jobs, CPUs: *n.CPUs, GPUs: *n.GPUs,
			Drained: *n.Drained, DrainedByRota: *n.DrainedByRota, Responding: *n.Responding,
			Running: running,
		}
	}
	return views, nil
}

func parseRunning(node string, list []RunningJob) ([]fleet.Job, error) {
	var out []fleet.Job
	seen := make(map[string]bool, len(list))
	for i, j := range list {
		switch {
		case j.ID == "" || j.CPUs == nil || j.Started == nil:
			return nil, fmt.Errorf("node %s: running[%d]: id, cpus and started are required", errtext.Quote(node), i)
		case seen[j.ID]:
			return nil, fmt.Errorf("node %s: running[%d]: job %s listed twice", errtext.Quote(node), i, errtext.Quote(j.ID))
		case *j.CPUs < 0 || j.GPUs < 0 || j.Servers < 0 || j.TimeLimitSeconds < 0:
			return nil, fmt.Errorf("node %s: running[%d]: negative cpus, gpus, servers or time limit", errtext.Quote(node), i)
		}
		seen[j.ID] = true
		fj := fleet.Job{ID: j.ID, Partition: j.Partition, Department: j.Department, CPUs: *j.CPUs, GPUs: j.GPUs,
			Memory: int64(min(j.MemoryBytes, 1<<62)), Servers: max(j.Servers, 1), Needs: j.Needs.fleet(),
			Requeueable: j.Requeueable, DoNotDisrupt: j.DoNotDisrupt, Started: *j.Started,
			TimeLimit: time.Duration(min(j.TimeLimitSeconds, 1<<32)) * time.Second}
		if j.Checkpoint != nil {
			fj.Checkpoint = *j.Checkpoint
		}
		out = append(out, fj)
	}
	return out, nil
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
		case *g.Nodes > maxNodes || *g.Count > maxCount:
			return nil, fmt.Errorf("demand[%d]: nodes may be at most %d and count at most %d", i, maxNodes, maxCount)
		case g.Since.IsZero():
			return nil, fmt.Errorf("demand[%d]: since is the zero time", i)
		case g.TimeLimitSeconds < 0:
			return nil, fmt.Errorf("demand[%d]: time_limit_seconds must not be negative", i)
		}
		shape := config.Shape{Partition: g.Partition, CPUs: *g.CPUs, GPUs: g.GPUs, Memory: config.Bytes(g.MemoryBytes)}
		demand = append(demand, fleet.Demand{
			Class: classify(shape), Partition: g.Partition, Department: g.Department, Region: g.Region,
			Shape: shape, Nodes: *g.Nodes, Count: *g.Count, Since: *g.Since, Needs: g.Needs.fleet(),
			TimeLimit: time.Duration(min(g.TimeLimitSeconds, 1<<32)) * time.Second,
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

// maxNodes and maxCount bound a demand group: past any real queue (Slurm's largest job is
// 65,536 nodes), and small enough that the planner's sums of servers asked for (nodes times
// count, over every group the output can hold) cannot overflow.
const (
	maxNodes = 1 << 16
	maxCount = 1 << 24
)

// MoveOutput is what move_command prints: how many of the jobs it moved.
//
//	{"moved": 2}
type MoveOutput struct {
	Moved *int `json:"moved"`
}

// parseMove reads move_command's output for asked jobs: it cannot have moved more.
func parseMove(b []byte, asked int) (int, error) {
	var out MoveOutput
	if err := decodeStrict(b, &out); err != nil {
		return 0, err
	}
	if out.Moved == nil || *out.Moved < 0 || *out.Moved > asked {
		return 0, fmt.Errorf(`"moved" is required, from 0 to the %d jobs asked`, asked)
	}
	return *out.Moved, nil
}
