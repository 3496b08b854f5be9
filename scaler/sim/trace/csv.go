package trace

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/internal/size"
)

// readCSV reads the generic format. Header (any order, names case-insensitive):
//
//	submit    seconds from the start of the trace (required)
//	duration  seconds the job holds its servers (required)
//	gpus      GPUs for the whole job (required; 0 for none)
//	cpus      CPU cores for the whole job (required; 0 if unknown: a job of no GPU and
//	          no CPU takes one core on each of its servers)
//	nodes     servers the job spans, all started together (optional, default 1); GPUs and
//	          CPUs are spread evenly over them, rounded up
//	class     a class name of the config (optional; empty: classified from the shape)
//	id        a job name for messages (optional)
//	partition the partition the job runs in (optional; pools whose profile names partitions
//	          take only their own)
//	requeueable  1/true if rebalancing may move the job, 0/false or empty if not (optional)
//	time_limit   the job's time limit in seconds (optional; 0 or empty: none)
//	department   the department (account) the job belongs to (optional)
//	memory       memory for the whole job, as the config gives sizes: bytes or a base-2 unit
//	             (64GiB); spread evenly over its nodes, rounded up (optional; empty: unknown)
//
// Submit 0 is 1970-01-01 UTC unless the times are Unix seconds anyway.
func readCSV(r io.Reader) (*Trace, error) {
	ints := []string{"submit", "duration", "gpus", "cpus"} // required
	tab, err := newTable(r, ints, []string{"nodes", "class", "id", "partition", "requeueable", "time_limit", "department", "memory"})
	if err != nil {
		return nil, fmt.Errorf("csv trace: %w", err)
	}
	t := &Trace{Start: time.Unix(0, 0).UTC(), Notes: []string{"generic CSV: gpus and cpus are per job, spread over its nodes"}}
	var bad rowErrors
	unknown := 0 // jobs of no GPU and no CPU given
	err = tab.rows(&bad, ints, func(v []int64) error {
		nodes := int64(1)
		if tab.has("nodes") && tab.str("nodes") != "" {
			var err error
			if nodes, err = parseInt(tab.str("nodes")); err != nil || nodes == 0 || nodes > 1<<20 {
				return fmt.Errorf("nodes: %s is not a server count", errtext.Quote(tab.str("nodes")))
			}
		}
		switch {
		case v[2] > 1<<30:
			return fmt.Errorf("gpus: %d is out of range", v[2])
		case v[3] > 1<<30:
			return fmt.Errorf("cpus: %d is out of range", v[3])
		}
		requeue, err := parseBool(tab.str("requeueable"))
		if err != nil {
			return fmt.Errorf("requeueable: %w", err)
		}
		var limit int64
		if s := tab.str("time_limit"); s != "" {
			if limit, err = parseInt(s); err != nil {
				return fmt.Errorf("time_limit: %w", err)
			}
		}
		var mem size.Bytes
		if s := tab.str("memory"); s != "" {
			if mem, err = size.Parse(s); err != nil {
				return fmt.Errorf("memory: %w", err)
			}
		}
		n := int(nodes)
		cpus := ceilDiv(int(v[3]), n)
		if v[2] == 0 && v[3] == 0 {
			// Nothing known of what it holds: one core on each of its servers, so it counts in
			// the lower bound and in placement alike (a job of no unit would need no server and
			// any number of them would share one).
			cpus, unknown = 1, unknown+1
		}
		t.Jobs = append(t.Jobs, Job{
			Line: tab.line, ID: tab.str("id"), Submit: v[0], Duration: v[1], Nodes: n,
			GPUs: ceilDiv(int(v[2]), n), CPUs: cpus, Memory: mem/size.Bytes(n) + min(mem%size.Bytes(n), 1), Class: tab.str("class"),
			Partition: tab.str("partition"), Department: tab.str("department"), Requeueable: requeue, TimeLimit: limit,
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := bad.result(CSV); err != nil {
		return nil, err
	}
	if unknown > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d job(s) of gpus 0 and cpus 0 (unknown) take one core on each of their servers", unknown))
	}
	return t, nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// parseBool reads a flag column: 1, true, yes, 0, false, no or empty (false).
func parseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "1", "true", "yes":
		return true, nil
	case "", "0", "false", "no":
		return false, nil
	}
	return false, fmt.Errorf("%q is not 0/1 or true/false", s)
}
