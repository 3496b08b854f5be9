// Package redfishemu is a Redfish BMC emulator for tests, the lab and the demo. Each emulated
// server has its own TLS listener and answers with the DMTF reference mockup
// "public-rackmount1" (embedded, BSD 3-Clause, see mockup/LICENSE.md), plus the state a mockup
// lacks: a PowerState that moves through PoweringOn/PoweringOff to On/Off after a delay when
// #ComputerSystem.Reset is posted, sessions and basic auth, ETag/If-Match, injectable faults
// (latency, 5xx answers, 409 on same-state requests, dropped power-ons, stuck transitions,
// rejected credentials, If-Match refused on actions, transitions hidden, logins answered with
// a status) changeable at run time through a control endpoint, vendor shapes (the reset types
// offered, no session service), a hook run on each power transition, and a count of the most
// requests answered at once across the servers (PeakRequests).
// cmd/rota-redfish-emulator runs it from a YAML config.
package redfishemu
