package store

import (
	"time"

	"github.com/rotahq/rota/scaler/fleet"
)

// AuditRecord is one action rota took (or, in dry run, would have taken), as the store keeps
// it: the core's record and its on-disk format (inside auditV1). The API shows it as
// api.AuditRecord, mapped by the loop, so the two can change apart.
type AuditRecord struct {
	Time   time.Time    `json:"time"`
	Node   string       `json:"node"`
	Pool   string       `json:"pool"`
	Action fleet.Kind   `json:"action"`
	Reason fleet.Reason `json:"reason"`
	Detail string       `json:"detail,omitempty"`
	// Result is started, succeeded, failed, aborted, dry_run or refused (a move a rule refused);
	// Error says why it failed.
	Result string `json:"result"`
	Error  string `json:"error,omitempty"`
}

// Forgotten is the audit record of an operator's forget (rotactl forget): the server's record
// deleted, its audit log kept. No planner's action, it is the operator's (ReasonOperator).
const (
	Forgotten      fleet.Kind   = "forget"
	ReasonOperator fleet.Reason = "operator"
)
