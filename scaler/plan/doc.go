// Package plan is rota's decision core: Plan takes what one pass observed (a fleet.Snapshot),
// the config and the time, and returns a fleet.Decision: the actions to start and, for every
// other server, the reason it was left alone. Every server of the snapshot gets exactly one
// entry, so "why is node X still on?" always has an answer.
//
// Plan is pure: no I/O, no clock (now is an argument), no state kept between passes, and the
// same input gives the same output whatever the order of its nodes and demand. Dry-run is the
// executor's concern: the planner decides the same in dry-run and lets the executor log
// instead of act.
//
// A pass runs ordered steps, in the spirit of Karpenter's disruption controller:
//
//	index    pools, capacities, floors, ceilings and the disruption budget, computed once,
//	         before any step acts; a budget that cannot be computed is zero (fails closed)
//	screen   servers rota must not touch (paused, pinned, maintenance, power unknown, in flight)
//	floors   resume or power on servers a pool needs to stay at its (scheduled) floor
//	demand   place waiting work on capacity already on or coming, then wake the cheapest servers
//	         that fit (at once, in the home pool; dearer pools past the backlog threshold),
//	         within ceilings, quotas and regions; only servers whose pool offers what the job
//	         needs (partition, features, GPU model, node list), and not a dearer pool's empty
//	         server when a cheaper one (coming, being drained or woken) costs less over the
//	         work's run
//	settle   power off drained, empty servers; give back drains that timed out
//	shrink   drain idle servers, most expensive first, held to every cap on scale-down, applied
//	         in one place (floors, warm spares, cooldowns, dwell times, cycle caps, disruption
//	         budget, concurrency)
//	moves    move the work of servers it can leave (requeueable, room elsewhere, saving at least
//	         k times the work lost), within the move budget, held to the same caps
//	rest     give every server left a reason
package plan
