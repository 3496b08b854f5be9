// Package bmc is rota's power-control layer. bmclib (bmc-toolbox/bmclib/v2) speaks IPMI
// through ipmitool, and Redfish goes through gofish with rota's own requests (a Reset's task
// followed, absolute links on the BMC's host taken to their paths, Retry-After waited); this
// package adds what a fleet autoscaler needs on top:
//
//   - per-server endpoints ([Endpoint]) with credentials read from a file or an environment
//     variable, never logged or marshalled ([Secret]);
//   - power states normalised to on, off, transitioning and unknown ([ParseState]);
//   - operations that are idempotent (no command when the server is already in the target
//     state) and confirmed by polling the BMC until the target state or a deadline;
//   - no power command while the state is unknown ([ErrStateUnknown]), no retry after an
//     authentication failure ([ErrAuth]) or a refused request ([ErrRefused]), retries with
//     backoff and jitter for transient failures;
//   - one operation that may send commands at a time per BMC, and one read (of the state or
//     the power draw) beside it, which waits for no command; a global cap on the requests out
//     at once (an operation holds a slot only while a request is out, not through its waits)
//     and a minimum interval between commands to one BMC;
//   - Prometheus metrics rota_bmc_*.
//
// [Power] is the interface the scaler consumes; [Controller] implements it over bmclib (and
// scaler/executor/executortest in memory, for the executor's and the loop's tests). Package
// redfishemu is a Redfish BMC emulator for tests, the lab and the demo.
package bmc
