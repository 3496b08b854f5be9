// Package fleet holds the scaler's domain words, shared by the planner, the executor, the store,
// the API and the simulator: a server's lifecycle State, the Snapshot of what was observed, the
// Demand waiting for servers, and the Decision the planner returns (Actions and Skips, each with
// a Reason from a bounded set).
//
// The types carry no behaviour beyond small derived facts, so every consumer reads the same
// meaning from them.
package fleet
