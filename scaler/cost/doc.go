// Package cost keeps rota's books: monotonic counters of what the fleet spent and saved, by
// pool, department, region and currency; the energy each server drew (measured by its BMC
// where it offers a reading, the pool's watts otherwise, and which was used); the energy and
// carbon avoided by servers that are off; the idle time and borrowed capacity behind each
// department's bill.
//
// The books are closed pass by pass: Ledger.Accrue books the time since the last pass at what
// that pass observed (the left point: a pass's decisions take effect after it), so increase()
// over any range is the sum of whole, non-overlapping pieces. Time no observation stands for
// (a pass that failed, rota stopped or restarting, more than accounting.stale_after since the
// last pass) is booked as unknown power: spend as if on, no saving, as for a server whose BMC
// cannot be read. The caller persists each new Ledger before exporting it, so the exported
// counters never run ahead of what a restart reads back: they continue, with no reset.
//
// Accrue is pure (no clock, no I/O): the loop feeds it live passes, and the simulator could
// feed it replayed ones.
package cost
