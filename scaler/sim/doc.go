// Package sim replays a workload trace against a fleet, in virtual time, to show what a power
// policy costs and how long it makes jobs wait. The policy under test is rota's own planner
// (scaler/plan), imported, fed a Snapshot built from the simulated world at each evaluation
// interval; the baselines are always-on and Slurm's idle timeout (SuspendTime); the lower bound
// is perfect packing with no boot delay.
//
// The world: servers of the config's pools (sized to the trace's peak or p95 need, or a given
// count) that take their boot and shutdown times; jobs placed first-fit in arrival order with
// EASY backfilling (a later job may start only if it ends before the oldest blocked job could
// start), gang jobs starting on all their servers at once. The replay is event-driven: arrivals,
// job ends, boots and shutdowns are events, and a policy is asked again between events only at
// the times it names (for rota: when a policy duration can expire), so empty stretches cost
// nothing. Everything runs on int64 seconds from the trace's start; the same inputs always give
// the same result.
package sim
