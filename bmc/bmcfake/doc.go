// Package bmcfake is an in-memory bmc.Power for other packages' tests: scripted power states,
// errors and transition delays, and a record of every command "sent". It keeps the guarantees
// of bmc.Power: idempotent, never a command while the state is unknown, one operation at a
// time per node, safe for concurrent use.
package bmcfake
