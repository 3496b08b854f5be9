// Package executor carries out the planner's actions and keeps every node's lifecycle state
// machine in the store:
//
//	On --drain--> Draining --power off--> PoweringOff --BMC confirms off--> Off
//	Off --power on--> PoweringOn --BMC confirms on--> Booting --ready--> On
//	Draining --resume--> On;  a step that fails --> Failed (power left as is, retried after backoff)
//
// Each action writes its intent to the store (one fsynced transaction) before its first side
// effect, so that Repair, run at startup and at the start of every pass, can finish or roll back
// whatever a crash interrupted. Actions run one at a time per node and in parallel across nodes,
// at most the cap in flight at once (policy.disruption.max_concurrent, or max_concurrent_share of
// the servers where that is more).
//
// Each action kind has its own file, with its start, its steps to the end and its repair side
// by side, so one intent is followed through one file: drain.go, power_off.go, power_on.go,
// resume.go, move.go. What they share is in executor.go (start, concurrency, dispatch), write.go (the
// durable record of each step: intent, audit, failure) and repair.go (the repair pass, which
// hands an interrupted action to its kind's repair and brings resting nodes in line with
// their BMC).
//
// The safety rules enforced here, each with its test:
//   - allocation is read again from the job manager right before every power-off; a job that
//     landed since the plan aborts it and resumes the node (TestPowerOffAbortsWhenAJobLands);
//   - no power command when the BMC cannot say the state: the node goes Unknown, its intent is
//     kept, and nothing else happens (TestUnknownPowerSendsNothing);
//   - dry run sends nothing at all and audits what it would have done (TestDryRunSendsNothing);
//   - a crash at any step converges to a safe state and nothing stays drained by rota
//     (TestCrashAtEveryStepConverges).
package executor
