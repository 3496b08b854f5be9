// Package executortest is an in-memory world for the executor's and the loop's tests: servers
// with a BMC (bmc.Power) and a job manager (jobs.Manager) that share one state, so a test can
// crash the scaler, keep the world, and check what the next rota makes of it. It also records
// every command sent and every unsafe one (a power-off of a server with a job), and offers a
// settable clock.
package executortest
