package trace

import (
	"fmt"
	"io"
	"time"
)

// readITP reads job_id,submission_time,duration,num_gpu. A job of more GPUs than a server
// holds takes whole servers (ceil(num_gpu / GPUsPerNode)), all started together. A job of no
// GPU says nothing of the CPU servers it ran on (the trace has no inventory): it is skipped
// and counted.
func readITP(r io.Reader, opt Options) (*Trace, error) {
	ints := []string{"submission_time", "duration", "num_gpu"} // required
	tab, err := newTable(r, ints, []string{"job_id"})
	if err != nil {
		return nil, fmt.Errorf("itp trace: %w", err)
	}
	t := &Trace{
		// The collection began on 2021-03-04; submission times count from it.
		Start: time.Date(2021, 3, 4, 0, 0, 0, 0, time.UTC),
		Notes: []string{fmt.Sprintf("%d GPUs per server; jobs of more GPUs take whole servers, started together", opt.GPUsPerNode)},
	}
	var bad rowErrors
	err = tab.rows(&bad, ints, func(v []int64) error {
		switch {
		case v[2] > 1<<20:
			return fmt.Errorf("num_gpu: %d is not a GPU count", v[2])
		case v[2] == 0:
			t.Skipped = append(t.Skipped, Skipped{Line: tab.line, Reason: "no GPU (num_gpu 0)"})
			return nil
		}
		nodes, each := spread(int(v[2]), opt.GPUsPerNode)
		t.Jobs = append(t.Jobs, Job{Line: tab.line, ID: tab.str("job_id"), Submit: v[0], Duration: v[1], Nodes: nodes, GPUs: each})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := bad.result(ITP); err != nil {
		return nil, err
	}
	return t, nil
}
