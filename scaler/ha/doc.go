// Package ha decides which rota of a highly available pair or trio leads: it plans and acts,
// while the others serve the read API and wait their turn. It is built on etcd's concurrency
// election, with a lease the elector renews itself, so it knows, at every moment, until when
// the lease surely holds: the last renewal etcd acknowledged, counted from when it was sent,
// plus the lease's TTL, less a margin.
//
// The leader's term ends, and its work is cancelled, when that moment nears (etcd cut off: the
// lease cannot be renewed), when etcd says the lease is gone, when its election key is
// deleted, or when it stops (it resigns, so another rota takes over at once). Every write to
// the store, and every command to a BMC or the job manager, is conditioned on the term
// (Elector.Conditions, the etcdstore Guard): a deposed leader can neither write nor act,
// whatever its goroutines still try. Standalone is the leadership of a single rota on a
// bbolt file: it always leads.
package ha
