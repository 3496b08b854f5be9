package api

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/rotahq/rota/scaler/fleet"
)

// Backend is what the HTTP API (and through it rotactl) asks of the scaler. The scaler's loop
// implements it; tests use a fake.
//
// Guarantees: safe for concurrent use; every method is bounded by ctx; SetPinned,
// SetMaintenance and SetPaused are durable (written to the store) before they return nil, and
// idempotent.
type Backend interface {
	// Status is the fleet as of the last pass.
	Status(ctx context.Context) (Status, error)
	// Explain says why node is in its state and what blocks it; ErrUnknownNode if no such node.
	Explain(ctx context.Context, node string) (Explanation, error)
	// Plan observes and plans now, as a dry run: it returns the decision and acts on nothing.
	Plan(ctx context.Context) (fleet.Decision, error)
	// SetPinned pins (rota never touches it) or unpins node; note says who and why.
	SetPinned(ctx context.Context, node string, pinned bool, note string) error
	// SetMaintenance puts node in maintenance (rota never touches it, not even to finish an
	// action a crash left) or takes it out; note says who and why. ErrUnknownNode if no such
	// node.
	SetMaintenance(ctx context.Context, node string, on bool, note string) error
	// SetPaused pauses or resumes the whole scaler.
	SetPaused(ctx context.Context, paused bool, note string) error
	// Backup writes a consistent copy of the store to w (a hot backup: the copy opens as a
	// store) and returns the bytes written.
	Backup(ctx context.Context, w io.Writer) (int64, error)
	// Nudge asks for a pass soon (an Alertmanager webhook arrived); it never blocks, and
	// nudges that arrive while one is pending are merged.
	Nudge(reason string)
	// Wake asks for nodes to be powered on because the job manager placed work on them
	// (Slurm's ResumeProgram): a pass runs soon and powers on each that is Off, under the same
	// gate as the planner's actions (paused, pinned, maintenance, unknown power). It returns
	// one WakeResult per node, in order, once a pass has taken the request, or ctx's error
	// (the request then stays with the scaler). A node not in the inventory is refused, not
	// an error.
	Wake(ctx context.Context, nodes []string, note string) ([]WakeResult, error)
}

// Status is the fleet as the scaler last saw it.
type Status struct {
	Paused     bool      `json:"paused"`
	DryRun     bool      `json:"dry_run"`
	LastPass   time.Time `json:"last_pass"`
	LastPassOK bool      `json:"last_pass_ok"`
	// LastError is why the last pass failed, if it did.
	LastError string `json:"last_error,omitempty"`
	// Telemetry and JobsKnown say whether the last pass could read Prometheus and the job
	// manager (without them nothing is scaled down).
	Telemetry bool         `json:"telemetry"`
	JobsKnown bool         `json:"jobs_known"`
	Nodes     []NodeStatus `json:"nodes"`
	Pools     []PoolStatus `json:"pools"`
	// SpendPerHour is what the powered servers cost per hour; AllOnPerHour what the whole
	// fleet would cost on.
	SpendPerHour float64 `json:"spend_per_hour"`
	AllOnPerHour float64 `json:"all_on_per_hour"`
	Currency     string  `json:"currency"`
}

// NodeStatus is one server in Status.
type NodeStatus struct {
	Name        string      `json:"name"`
	Pool        string      `json:"pool"`
	State       fleet.State `json:"state"`
	Since       time.Time   `json:"since"`
	Power       string      `json:"power"`
	Pinned      bool        `json:"pinned"`
	Maintenance bool        `json:"maintenance,omitempty"`
	CostPerHour float64     `json:"cost_per_hour"`
	// Reason and Detail are the last pass's action or skip for this server.
	Reason fleet.Reason `json:"reason,omitempty"`
	Detail string       `json:"detail,omitempty"`
}

// PoolStatus is one pool in Status.
type PoolStatus struct {
	Name    string `json:"name"`
	Servers int    `json:"servers"`
	Powered int    `json:"powered"`
	Desired int    `json:"desired"`
}

// Explanation is Explain's answer: the server, the facts the last pass saw, and its verdict.
type Explanation struct {
	Node      NodeStatus          `json:"node"`
	Jobs      fleet.JobsView      `json:"jobs"`
	Telemetry fleet.TelemetryView `json:"telemetry"`
	// Action is what the last pass decided for the server, or Skip why it left it alone.
	Action *fleet.Action `json:"action,omitempty"`
	Skip   *fleet.Skip   `json:"skip,omitempty"`
	// History is the server's recent audit records, newest first.
	History []AuditRecord `json:"history"`
}

// AuditRecord is one action rota took (or, in dry run, would have taken): the store's
// store.AuditRecord as the API shows it.
type AuditRecord struct {
	Time   time.Time    `json:"time"`
	Node   string       `json:"node"`
	Pool   string       `json:"pool"`
	Action fleet.Kind   `json:"action"`
	Reason fleet.Reason `json:"reason"`
	Detail string       `json:"detail,omitempty"`
	// Result is started, succeeded, failed or dry_run; Error says why it failed.
	Result string `json:"result"`
	Error  string `json:"error,omitempty"`
}

// ErrUnknownNode is returned for a node that is not in the inventory.
var ErrUnknownNode = errors.New("no such node in the inventory")
