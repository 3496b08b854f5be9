package slurmcli

import (
	"fmt"
	"strings"

	"github.com/rotahq/rota/internal/errtext"
)

// NodeState is a node's state as sinfo's StateComplete prints it: a base state and flags,
// "idle+completing+drain", "mixed+not_responding", "idle+powered_down".
type NodeState struct {
	Base  string
	Flags []string
}

// baseState reports whether s is one of Slurm's base node states (22.05 and later).
func baseState(s string) bool {
	switch s {
	case "unknown", "down", "idle", "allocated", "error", "mixed", "future":
		return true
	}
	return false
}

// ParseNodeState reads StateComplete. A base state Slurm does not have fails; a flag rota does
// not know is kept (newer Slurm adds flags) and ignored. A trailing '*' (not responding) or '~'
// (powered down) from the compact forms is read as that flag.
func ParseNodeState(s string) (NodeState, error) {
	parts := strings.Split(strings.ToLower(s), "+")
	st := NodeState{Base: parts[0]}
	if b, ok := strings.CutSuffix(st.Base, "*"); ok {
		st.Base, parts = b, append(parts, "not_responding")
	}
	if b, ok := strings.CutSuffix(st.Base, "~"); ok {
		st.Base, parts = b, append(parts, "powered_down")
	}
	if !baseState(st.Base) {
		return NodeState{}, fmt.Errorf("node state %s", errtext.Quote(s))
	}
	for _, f := range parts[1:] {
		if f == "" || strings.Trim(f, "abcdefghijklmnopqrstuvwxyz_") != "" {
			return NodeState{}, fmt.Errorf("node state %s", errtext.Quote(s))
		}
		st.Flags = append(st.Flags, f)
	}
	return st, nil
}

// Has reports whether the state carries flag (lower case: drain, completing, not_responding,
// powered_down, powering_up, powering_down, ...).
func (s NodeState) Has(flag string) bool {
	for _, f := range s.Flags {
		if f == flag {
			return true
		}
	}
	return false
}

// Responding reports whether slurmd on the node is up and registered: not down, not flagged
// not responding, not powered down or in a power transition, not yet registered (unknown,
// future).
func (s NodeState) Responding() bool {
	switch s.Base {
	case "down", "unknown", "future", "error":
		return false
	}
	for _, f := range []string{"not_responding", "powered_down", "powering_up", "powering_down", "power_down"} {
		if s.Has(f) {
			return false
		}
	}
	return true
}

// Summary is the node's state as one word from a bounded set, for the rota_slurm_nodes{state}
// label: down, not_responding, powered_down, powering_up, powering_down, drained, draining,
// completing, allocated, mixed, idle, unknown (error and future read as down and unknown).
func (s NodeState) Summary() string {
	switch {
	case s.Has("powered_down"):
		return "powered_down"
	case s.Has("powering_up"):
		return "powering_up"
	case s.Has("powering_down"), s.Has("power_down"):
		return "powering_down"
	case s.Base == "down", s.Base == "error":
		return "down"
	case s.Has("not_responding"):
		return "not_responding"
	case s.Has("drain") && s.Busy():
		return "draining"
	case s.Has("drain"):
		return "drained"
	case s.Has("completing"):
		return "completing"
	case s.Base == "future":
		return "unknown"
	}
	return s.Base
}

// NodeSummaries lists every value Summary returns.
func NodeSummaries() []string {
	return []string{"idle", "mixed", "allocated", "completing", "draining", "drained", "down",
		"not_responding", "powered_down", "powering_up", "powering_down", "unknown"}
}

// Busy reports whether work is still on the node by its state: allocated, mixed, or completing.
func (s NodeState) Busy() bool {
	return s.Base == "allocated" || s.Base == "mixed" || s.Has("completing")
}
