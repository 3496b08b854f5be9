// Package etcdstore keeps rota's store in etcd, for a highly available pair or trio of rotas:
// a store.Backend whose every write is one etcd transaction conditioned on the leader's lease
// (Guard, which package ha's elector gives), and whose Fence asks etcd, right before each BMC
// or job-manager command, whether this rota still holds it.
//
// Keys live under one prefix per fleet: PREFIX/fleet is the fleet marker (the fleet's name,
// written at the first start; a rota of another fleet, or a prefix holding anything else, is
// refused), PREFIX/election/ the leader election, PREFIX/data/BUCKET/KEY the records and
// PREFIX/log/LOG/NAME/SEQ the audit log (SEQ in 16 hex digits; KEY and NAME path-escaped).
// Values are the same versioned JSON records a bbolt store holds, so `rotactl store migrate`
// moves them either way unchanged.
package etcdstore
