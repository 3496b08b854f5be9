// Package apifake is an in-memory api.Backend for the tests of the HTTP API, rotactl and
// anything else that talks to the scaler: set the status, explanations and plan it answers,
// set what a store backup writes, inject an error, and read back pins, maintenance, the pause and
// the nudges. Safe for concurrent use.
package apifake
