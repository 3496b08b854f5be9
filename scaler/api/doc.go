// Package api is the scaler's HTTP surface for operators and Alertmanager: the operator API
// that rotactl calls (status, explain, plan, pin/unpin, maintenance, pause/resume, store
// backup; bearer token), the Alertmanager webhook receiver (version 4 payloads; alerts only
// nudge the loop), /metrics and the health endpoints, all on one listener ([Server]); the
// [Backend] interface the scaler's loop implements; and the [Client] rotactl calls it with.
// Package apifake is an in-memory Backend for tests.
package api
