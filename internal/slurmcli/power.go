package slurmcli

import (
	"fmt"
	"slices"
	"strings"
)

// PowerSave is what slurmctld's configuration says of Slurm's own power saving.
type PowerSave struct {
	SuspendProgram string
	ResumeProgram  string
	SuspendTime    string
	// ExcludedNodes (SuspendExcNodes, expanded) and ExcludedPartitions (SuspendExcParts) are
	// never powered down by Slurm.
	ExcludedNodes      []string
	ExcludedPartitions []string
}

// Enabled reports whether Slurm's power saving is on: both programs set and SuspendTime not
// INFINITE/NONE. (Slurm 22.05 refuses state=POWER_DOWN with power saving off, and
// SuspendTime=INFINITE turns it off: a cluster that wants rota alone to decide sets SuspendTime
// very long instead.)
func (p PowerSave) Enabled() bool {
	switch strings.ToUpper(p.SuspendTime) {
	case "", "INFINITE", "NONE", "-1":
		return false
	}
	return p.SuspendProgram != "" && p.ResumeProgram != ""
}

// Covers reports whether Slurm's power saving applies to the node: on, and the node neither
// excluded by name (SuspendExcNodes, with or without a ":count") nor by partition.
func (p PowerSave) Covers(n Node) bool {
	if !p.Enabled() || slices.Contains(p.ExcludedNodes, n.Name) {
		return false
	}
	for _, part := range n.Partitions {
		if slices.Contains(p.ExcludedPartitions, part) {
			return false
		}
	}
	return true
}

// ParsePowerSave reads `scontrol show config` ("Key = Value" lines after a header line).
func ParsePowerSave(out []byte) (PowerSave, error) {
	var p PowerSave
	seen := 0
	for _, line := range lines(out) {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), nullable(v)
		var err error
		switch k {
		case "SuspendProgram":
			p.SuspendProgram, seen = v, seen+1
		case "ResumeProgram":
			p.ResumeProgram, seen = v, seen+1
		case "SuspendTime":
			p.SuspendTime, seen = v, seen+1
		case "SuspendExcNodes":
			p.ExcludedNodes, err = excludedNodes(v)
		case "SuspendExcParts":
			if v != "" {
				p.ExcludedPartitions = strings.Split(v, ",")
			}
		}
		if err != nil {
			return PowerSave{}, fmt.Errorf("%w: SuspendExcNodes: %v", ErrUnexpected, err)
		}
	}
	if seen != 3 {
		return PowerSave{}, fmt.Errorf("%w: scontrol show config lacks SuspendProgram, ResumeProgram or SuspendTime", ErrUnexpected)
	}
	return p, nil
}

// excludedNodes expands SuspendExcNodes: hostlists, each with an optional ":count" (keep that
// many of them up), "node[1-4]:2,gpu01". Every node named counts as excluded; at most MaxHosts
// in all, as for one hostlist.
func excludedNodes(v string) ([]string, error) {
	var names []string
	hosts := newHostBudget(MaxHosts)
	for _, term := range splitOutside(v, ',', '[', ']') {
		if i := strings.LastIndexByte(term, ':'); i >= 0 {
			if _, err := count(term[i+1:]); err != nil {
				return nil, err
			}
			term = term[:i]
		}
		expanded, err := hosts.expand(term)
		if err != nil {
			return nil, err
		}
		names = append(names, expanded...)
	}
	return names, nil
}
