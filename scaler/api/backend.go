package api

import (
	"context"
	"errors"
	"fmt"
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
	// Explain says why node is in its state and what blocks it; for a server that left the
	// inventory, its record, or its history and forget once forgotten (Explanation.Forgotten);
	// ErrUnknownNode if none of these.
	Explain(ctx context.Context, node string) (Explanation, error)
	// Plan observes and plans now, as a dry run: it returns the decision and acts on nothing.
	Plan(ctx context.Context) (fleet.Decision, error)
	// SetPinned pins (rota never touches it) or unpins node; note says who and why.
	// ErrUnknownNode if no such node; a server that left the inventory, while the store holds
	// its record, can be unpinned (rota then settles it) but not pinned.
	SetPinned(ctx context.Context, node string, pinned bool, note string) error
	// SetMaintenance puts node in maintenance (rota never touches it, not even to finish an
	// action a crash left) or takes it out; note says who and why. ErrUnknownNode if no such
	// node; a server that left the inventory is as for SetPinned.
	SetMaintenance(ctx context.Context, node string, on bool, note string) error
	// Forget deletes the record of node, a server no longer in the config that rota has
	// settled, and audits it with note (who and why); it returns the record as status last
	// showed it. ErrUnknownNode if the store holds no record of it; a *KeptError, nothing
	// changed, if it is in the config or not settled.
	Forget(ctx context.Context, node, note string) (NodeStatus, error)
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
	Paused bool `json:"paused"`
	// PauseNote is the note given with the pause (who and why), while it holds.
	PauseNote  string    `json:"pause_note,omitempty"`
	DryRun     bool      `json:"dry_run"`
	LastPass   time.Time `json:"last_pass"`
	LastPassOK bool      `json:"last_pass_ok"`
	// LastError is why the last pass failed, if it did.
	LastError string `json:"last_error,omitempty"`
	// Telemetry and JobsKnown say whether the last pass could read Prometheus and the job
	// manager (without them nothing is scaled down).
	Telemetry bool `json:"telemetry"`
	JobsKnown bool `json:"jobs_known"`
	// JobsError is why the job manager could not be read (its bad answer, refused
	// credentials), when it could not.
	JobsError string       `json:"jobs_error,omitempty"`
	Nodes     []NodeStatus `json:"nodes"`
	Pools     []PoolStatus `json:"pools"`
	// SpendPerHour is what the servers cost per hour now (powered, of unknown power, or paid
	// whether on or off: as the books spend them); AllOnPerHour what the whole fleet would cost
	// on; both in Currency (accounting.currency: pools billed in another converted at
	// accounting.exchange_rates).
	SpendPerHour float64 `json:"spend_per_hour"`
	AllOnPerHour float64 `json:"all_on_per_hour"`
	Currency     string  `json:"currency"`
	// HA says which rota leads, and why this one does not.
	HA *HAStatus `json:"ha,omitempty"`
}

// HAStatus is the leadership as the rota that answers sees it.
type HAStatus struct {
	// Backend is the store's: bbolt (one rota, always the leader) or etcd.
	Backend string `json:"backend"`
	// Self is the answering rota's name; Leading whether it leads (plans and acts).
	Self    string `json:"self"`
	Leading bool   `json:"leading"`
	// Leader and LeaderURL name the rota that leads, empty when none does.
	Leader    string `json:"leader,omitempty"`
	LeaderURL string `json:"leader_url,omitempty"`
	// Since is when the answering rota last began or stopped leading.
	Since time.Time `json:"since,omitzero"`
	// Problem is why the answering rota cannot lead, or stopped (etcd unreachable, its lease
	// lost), empty when nothing is wrong.
	Problem string `json:"problem,omitempty"`
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
	// PinNote and MaintenanceNote are the notes given with the pin and the maintenance (who
	// and why: rotactl adds the user's name), while they hold.
	PinNote         string `json:"pin_note,omitempty"`
	MaintenanceNote string `json:"maintenance_note,omitempty"`
	// CostPerHour is what the server costs per hour while on, in Currency (its pool's).
	CostPerHour float64 `json:"cost_per_hour"`
	Currency    string  `json:"currency"`
	// Reason and Detail are the last pass's action or skip for this server.
	Reason fleet.Reason `json:"reason,omitempty"`
	Detail string       `json:"detail,omitempty"`
	// InFlight is the action under way on the server (a drain waiting for its jobs, a
	// power-off waiting for the BMC), nil when none is: State is then where it has got to.
	InFlight *InFlight `json:"in_flight,omitempty"`
	// LeftConfig is set for a server no longer in the config whose record the store still
	// holds (Pool is then empty): it says so, and what rota does or did with it.
	LeftConfig string `json:"left_config,omitempty"`
}

// InFlight is an action the executor started and has not finished.
type InFlight struct {
	Kind   fleet.Kind   `json:"kind"`
	Reason fleet.Reason `json:"reason"`
	Since  time.Time    `json:"since"`
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
	Node NodeStatus     `json:"node"`
	Jobs fleet.JobsView `json:"jobs"`
	// JobsError is why the last pass could not read the job manager, when it could not: the
	// server's allocation is then unknown, never taken as none.
	JobsError string              `json:"jobs_error,omitempty"`
	Telemetry fleet.TelemetryView `json:"telemetry"`
	// Action is what the last pass decided for the server, or Skip why it left it alone.
	Action *fleet.Action `json:"action,omitempty"`
	Skip   *fleet.Skip   `json:"skip,omitempty"`
	// History is the server's recent audit records, newest first.
	History []AuditRecord `json:"history"`
	// Forgotten is the audit record of the forget (rotactl forget: when, and in its detail who,
	// why and the state last recorded) of a server no longer in the config whose record an
	// operator deleted; only its name, History and this are then set.
	Forgotten *AuditRecord `json:"forgotten,omitempty"`
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

// KeptError is a forget refused, nothing changed: the server is in the config, or rota has
// not settled it (Why says which, and what to do). The server answers 409.
type KeptError struct{ Why string }

func (e *KeptError) Error() string { return "record kept: " + e.Why }

// ErrStopping is a wake asked of a rota that is stopping: its loop ended, or ends, before a
// pass took the request, and no pass of it will. The server answers 503 with Retry-After, where
// the client asks again (the next rota, or this one restarted, takes it).
var ErrStopping = errors.New("rota is stopping: ask again")

// NotLeaderError is a write (pin, maintenance, pause, wake) asked of a rota that does not
// lead: a follower of a highly available pair or trio, or a leader that lost its lease. The
// server answers 503 with the leader's name and URL, where the client may send it again.
type NotLeaderError struct {
	Self, Leader, LeaderURL string
}

func (e *NotLeaderError) Error() string {
	if e.Leader == "" {
		return fmt.Sprintf("%s does not lead, and no rota leads now: writes wait for a leader", e.Self)
	}
	if e.LeaderURL == "" {
		return fmt.Sprintf("%s does not lead; %s leads: send writes there", e.Self, e.Leader)
	}
	return fmt.Sprintf("%s does not lead; %s leads at %s: send writes there", e.Self, e.Leader, e.LeaderURL)
}
