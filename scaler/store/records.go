package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/scaler/fleet"
)

// recordVersion is the format every record is written in. A reader meeting an older version
// migrates it in decode*; a newer one is an error (a downgrade would lose fields).
const recordVersion = 1

// CycleWindow is how long power-off times are kept: the cycle cap counts power-offs per 24 hours,
// and no disruption window is longer.
const CycleWindow = 24 * time.Hour

// clockSkew is how far after now a recorded time (a power-off, a move, a scale-up or -down) may
// lie and still count, as now: the clocks of rotas taking over from one another on etcd differ
// a little, and when unsure a power-off counts. A time further ahead was written by a clock that
// was wrong (a bad NTP step, a dead RTC) and is dropped: counted, it would hold a node's cycle
// cap, the budgets and the cooldowns for as long as the clock had jumped ahead, a year if it had.
const clockSkew = 5 * time.Minute

// Intent is the action in flight on a node, written before its first side effect and cleared
// when the action reached a resting state. A node with an intent after a restart is what the
// repair pass finishes or rolls back.
type Intent struct {
	Kind    fleet.Kind   `json:"kind"`
	Reason  fleet.Reason `json:"reason"`
	Detail  string       `json:"detail,omitempty"`
	Started time.Time    `json:"started"`
	// Attempt counts how many times the action was (re)started, the first time included.
	Attempt int `json:"attempt"`
	// Move is a move's plan (its jobs and where they may not go), for its repair.
	Move *fleet.MovePlan `json:"move,omitempty"`
}

// Node is what the store keeps about one server. The zero Node is a server rota has never
// recorded (State "").
type Node struct {
	State  fleet.State `json:"state"`
	Since  time.Time   `json:"since"`
	Intent *Intent     `json:"intent,omitempty"`
	// DrainedByRota is set when rota drained the server in the job manager and has not resumed
	// it yet: whatever else happens, it must be resumed or powered off (never drained forever).
	DrainedByRota bool      `json:"drained_by_rota,omitempty"`
	LastOn        time.Time `json:"last_on,omitzero"`
	LastOff       time.Time `json:"last_off,omitzero"`
	// PowerOffs are the server's power-offs within CycleWindow.
	PowerOffs []time.Time `json:"power_offs,omitempty"`
	// Failures counts the failed actions since an action of FailedKind (the kind that failed
	// last) last succeeded; RetryAfter is when the node may be tried again. The count outlives
	// the node's coming back On, so a step that keeps failing backs off longer each time.
	Failures    int        `json:"failures,omitempty"`
	FailedKind  fleet.Kind `json:"failed_kind,omitempty"`
	RetryAfter  time.Time  `json:"retry_after,omitzero"`
	Pinned      bool       `json:"pinned,omitempty"`
	PinNote     string     `json:"pin_note,omitempty"`
	Maintenance bool       `json:"maintenance,omitempty"`
	// MaintenanceNote says who put the node in maintenance, and why.
	MaintenanceNote string `json:"maintenance_note,omitempty"`
	// HandsOffEnded: a pin or maintenance ended since State was read from the BMC, so the
	// power may have changed meanwhile by the operator's hand. The next repair takes the BMC's
	// state without counting it as a change outside rota, and clears it.
	HandsOffEnded bool `json:"hands_off_ended,omitempty"`
	// Unread are the power changes at rest rota saw while the job manager could not be read,
	// not judged yet (its power saving may have made them): the first repair that reads the
	// job manager excuses them, or counts them as changes outside rota, and clears them.
	Unread *UnreadChanges `json:"unread_changes,omitempty"`
}

// UnreadChanges count a node's power changes at rest seen while the job manager could not be
// read, by the state the BMC was found in.
type UnreadChanges struct {
	On  int `json:"on,omitempty"`
	Off int `json:"off,omitempty"`
	// First is when the first of them was seen.
	First time.Time `json:"first"`
}

// AddUnread counts a change to state (on or off) seen at now while the job manager could not
// be read.
func (n *Node) AddUnread(state fleet.State, now time.Time) {
	if n.Unread == nil {
		n.Unread = &UnreadChanges{First: now}
	}
	if state == fleet.StateOn {
		n.Unread.On++
	} else {
		n.Unread.Off++
	}
}

// Enter moves the node to state at now, clearing the intent.
func (n *Node) Enter(state fleet.State, now time.Time) {
	if n.State != state {
		n.Since = now
	}
	n.State = state
	n.Intent = nil
}

// ChangedAfter reports whether the record's state or its action in flight changed after t
// (Since, or the intent's start, is later): a reading of the world begun at t may predate what
// the record says, and is no ground for judging it.
func (n Node) ChangedAfter(t time.Time) bool {
	return n.Since.After(t) || n.Intent != nil && n.Intent.Started.After(t)
}

// Failed counts a failure of an action of kind at now and sets the retry time after backoff.
func (n *Node) Failed(kind fleet.Kind, now time.Time, backoff time.Duration) {
	n.Failures++
	n.FailedKind = kind
	n.RetryAfter = now.Add(backoff)
}

// Succeeded forgets the failures when an action of kind succeeded and kind is the one that
// failed (or the record predates FailedKind): a power-on that works says nothing of a
// power-off that keeps failing.
func (n *Node) Succeeded(kind fleet.Kind) {
	if n.FailedKind == kind || n.FailedKind == "" {
		n.Failures, n.FailedKind, n.RetryAfter = 0, "", time.Time{}
	}
}

// AheadOfTheClock corrects the times a clock that had jumped ahead stamped on the record (see
// clockSkew): the state's start, the last power-on and power-off and the intent's start, dated
// further ahead of now than clockSkew, are taken as now (when unsure, a hold runs from now:
// min_on, min_off, a drain's or a boot's timeout), and a retry later than now plus limit (the
// longest backoff) is moved to it. Left as they were, each would hold the node until the date
// the clock had jumped to: a drain never timed out, a boot never failed, a failed server never
// tried again. It reports whether anything changed, for the caller to write the record back.
func (n *Node) AheadOfTheClock(now time.Time, limit time.Duration) bool {
	changed := false
	asNow := func(t *time.Time) {
		if t.After(now.Add(clockSkew)) {
			*t, changed = now, true
		}
	}
	asNow(&n.Since)
	asNow(&n.LastOn)
	asNow(&n.LastOff)
	if n.Intent != nil {
		asNow(&n.Intent.Started)
	}
	if n.RetryAfter.After(now.Add(limit + clockSkew)) {
		n.RetryAfter, changed = now.Add(limit), true
	}
	return changed
}

// RecordPowerOff notes a confirmed power-off at now and forgets those older than CycleWindow.
func (n *Node) RecordPowerOff(now time.Time) {
	n.LastOff = now
	n.PowerOffs = Recent(append(n.PowerOffs, now), now)
}

// CyclesToday counts the node's power-offs within CycleWindow before now.
func (n *Node) CyclesToday(now time.Time) int { return len(Recent(n.PowerOffs, now)) }

// Recent returns the times within CycleWindow before now, oldest first: those in
// (now-CycleWindow, now], a time up to clockSkew after now taken as now, and none further ahead.
// What is written back through it (RecordPowerOff, the executor's budgets) keeps the times so
// taken as now, and so forgets them a window later.
func Recent(ts []time.Time, now time.Time) []time.Time {
	cutoff := now.Add(-CycleWindow)
	out := slices.Clone(ts)[:0]
	for _, t := range ts {
		if t, ok := asOf(t, now); ok && t.After(cutoff) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// asOf is a recorded time t as seen at now: t itself when it is not after now; now when it is
// at most clockSkew after; not at all (false) when it is further ahead.
func asOf(t, now time.Time) (time.Time, bool) {
	switch {
	case !t.After(now):
		return t, true
	case !t.After(now.Add(clockSkew)):
		return now, true
	}
	return time.Time{}, false
}

// asOfEach is asOf over a map of times by pool (nil for nil).
func asOfEach(m map[string]time.Time, now time.Time) map[string]time.Time {
	if m == nil {
		return nil
	}
	out := make(map[string]time.Time, len(m))
	for k, t := range m {
		if t, ok := asOf(t, now); ok {
			out[k] = t
		}
	}
	return out
}

// Global is the scaler-wide state.
type Global struct {
	Paused    bool   `json:"paused,omitempty"`
	PauseNote string `json:"pause_note,omitempty"`
	// LastScaleUp and LastScaleDown are per pool, for cooldowns.
	LastScaleUp   map[string]time.Time `json:"last_scale_up,omitempty"`
	LastScaleDown map[string]time.Time `json:"last_scale_down,omitempty"`
	// PowerOffs are the fleet's power-offs within CycleWindow, for the disruption budget.
	PowerOffs []time.Time `json:"power_offs,omitempty"`
	// Moves are the fleet's moves within CycleWindow, for the move budget.
	Moves []time.Time `json:"moves,omitempty"`
}

// History is the planner's view of the global record at now: times after now as Recent takes
// them (a scale-up or -down dated further ahead than clockSkew is none, so a cooldown it began
// is over).
func (g Global) History(now time.Time) fleet.History {
	return fleet.History{
		LastScaleUp:   asOfEach(g.LastScaleUp, now),
		LastScaleDown: asOfEach(g.LastScaleDown, now),
		PowerOffs:     Recent(g.PowerOffs, now),
		Moves:         Recent(g.Moves, now),
	}
}

// ErrVersion is wrapped by RecordError for a record of a format this build does not read.
var ErrVersion = errors.New("unsupported record version")

// RecordError is a record that could not be decoded; it names where it lies.
type RecordError struct {
	Bucket string
	Key    string
	Err    error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("store: bucket %s key %s: %v", errtext.Quote(e.Bucket), errtext.Quote(e.Key), e.Err)
}

// Unwrap returns the decoding error.
func (e *RecordError) Unwrap() error { return e.Err }

// The on-disk forms: the version beside the fields.
type nodeV1 struct {
	V int `json:"v"`
	Node
}

type globalV1 struct {
	V int `json:"v"`
	Global
}

type auditV1 struct {
	V int `json:"v"`
	AuditRecord
}

func encode[T any](v T) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding: %w", err)
	}
	return b, nil
}

// version reads a record's format version.
func version(b []byte) (int, error) {
	var h struct {
		V int `json:"v"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return 0, fmt.Errorf("decoding: %w", err)
	}
	if h.V != recordVersion {
		return 0, fmt.Errorf("%w %d (this build reads %d)", ErrVersion, h.V, recordVersion)
	}
	return h.V, nil
}

func decodeNode(b []byte) (Node, error) {
	if _, err := version(b); err != nil {
		return Node{}, err
	}
	var r nodeV1
	if err := json.Unmarshal(b, &r); err != nil {
		return Node{}, fmt.Errorf("decoding: %w", err)
	}
	if !slices.Contains(fleet.States, r.State) {
		return Node{}, fmt.Errorf("decoding: unknown state %s", errtext.Quote(string(r.State)))
	}
	if r.Intent != nil && !knownKind(r.Intent.Kind) {
		return Node{}, fmt.Errorf("decoding: unknown intent kind %s", errtext.Quote(string(r.Intent.Kind)))
	}
	if r.FailedKind != "" && !knownKind(r.FailedKind) {
		return Node{}, fmt.Errorf("decoding: unknown failed kind %s", errtext.Quote(string(r.FailedKind)))
	}
	// Counts rota only ever adds to from zero: a negative one is damage, not a count (read as
	// is, failures -5 would hold the backoff at its shortest for six more failures).
	if r.Failures < 0 {
		return Node{}, fmt.Errorf("decoding: negative failure count %d", r.Failures)
	}
	if u := r.Unread; u != nil && (u.On < 0 || u.Off < 0) {
		return Node{}, fmt.Errorf("decoding: negative count of unread changes (on %d, off %d)", u.On, u.Off)
	}
	if r.Intent != nil && r.Intent.Attempt < 0 {
		return Node{}, fmt.Errorf("decoding: negative intent attempt %d", r.Intent.Attempt)
	}
	return r.Node, nil
}

func knownKind(k fleet.Kind) bool { return slices.Contains(fleet.Kinds(), k) }

func decodeGlobal(b []byte) (Global, error) {
	if _, err := version(b); err != nil {
		return Global{}, err
	}
	var r globalV1
	if err := json.Unmarshal(b, &r); err != nil {
		return Global{}, fmt.Errorf("decoding: %w", err)
	}
	return r.Global, nil
}

func decodeAudit(b []byte) (AuditRecord, error) {
	if _, err := version(b); err != nil {
		return AuditRecord{}, err
	}
	var r auditV1
	if err := json.Unmarshal(b, &r); err != nil {
		return AuditRecord{}, fmt.Errorf("decoding: %w", err)
	}
	return r.AuditRecord, nil
}
