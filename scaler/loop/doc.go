// Package loop is the scaler daemon's control loop. Each pass, every
// policy.evaluation_interval or sooner when nudged (nudges that arrive while one is pending are
// merged; a webhook's or an operator's waits until nudgeGap after the last pass began, waiting
// work's runs at once), it:
//
//	observe  BMC power states (bounded concurrency), the job manager's nodes and demand,
//	         Prometheus telemetry; a reader that fails marks its facts unknown for the pass
//	repair   the executor finishes or rolls back what was interrupted (skipped while paused)
//	snapshot the store's states and history with the observations
//	plan     the injected planner (plan.Plan)
//	gate     belt and braces over the planner: nothing while paused, nothing on pinned or
//	         maintenance servers or servers with unknown power, no scale-down without telemetry
//	         or the job manager, nothing on a server repair just moved
//	execute  the executor starts the actions (skipping servers with one under way)
//	record   metrics, and the pass kept for Status and Explain
//
// Loop implements api.Backend for the HTTP API and rotactl.
package loop
