// Package none is the job-manager adapter for a fleet without one: it knows no server and no
// demand, and its drain and resume do nothing.
//
// What that costs in safety: with no job manager, rota cannot see allocation, so a server's
// idleness rests on telemetry alone (CPU and GPU under threshold for the whole idle window, data
// present and fresh). A job that uses no CPU and no GPU for the whole window (waiting on a
// network file system, a lock, a human) looks idle and its server can be powered off under it.
// Nothing is drained first either, so a scheduler of some other kind can still place work on a
// server in the seconds before the power-off. Use a real adapter (slurm, or exec around your
// scheduler) wherever jobs run; none fits fleets of stateless services that tolerate a lost
// server.
package none
