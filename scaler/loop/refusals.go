package loop

import (
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

// auditRefused is the audit result of a move a rule refused.
const auditRefused = "refused"

// auditRefusals keeps the move refusals of a decision in the audit history, beside the moves
// the executor audits: each once, when a server's refusal first appears or its rule changes
// (the numbers in its detail change every pass; the history would drown in them).
func (l *Loop) auditRefusals(dec fleet.Decision, p pass) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[string]bool{}
	for _, s := range dec.Skips {
		if !s.Reason.RefusesMove() {
			continue
		}
		seen[s.Node] = true
		if l.refused[s.Node] == s.Reason {
			continue
		}
		r := store.AuditRecord{Time: p.at, Node: s.Node, Pool: s.Pool, Action: fleet.Move, Reason: s.Reason, Detail: s.Detail, Result: auditRefused}
		if err := l.o.Store.AppendAudit(r); err != nil {
			l.log.WithError(err).WithField("node", s.Node).Warn("recording a refused move")
			continue
		}
		l.refused[s.Node] = s.Reason
	}
	for n := range l.refused {
		if !seen[n] {
			delete(l.refused, n)
		}
	}
}
