// Package trace reads workload traces for the simulator: the Microsoft ITP GPU cluster CSV, the
// Standard Workload Format of the Parallel Workloads Archive, and a documented generic CSV;
// plain or packed with gzip or bzip2. Every reader returns the same Trace: jobs in submission
// order, each asking for a number of servers at once (a gang) and a per-server share of GPUs and
// CPUs.
//
// Readers are pure (an io.Reader in, a Trace out) and strict: a malformed row is an error that
// names its line; records the format itself marks unknown (SWF's -1) or as a part of a job
// recorded whole elsewhere (SWF's partial executions) are skipped and counted, never dropped
// silently. A UTF-8 byte order mark at the start is dropped.
package trace
