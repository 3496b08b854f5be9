package fleet

// Kind is what an action does.
type Kind string

// The action kinds, in the order the lifecycle takes them.
const (
	// PowerOn powers an Off (or Failed, after its backoff) server on.
	PowerOn Kind = "power_on"
	// Drain asks the job manager to stop placing work on an idle server, first step of a
	// scale-down.
	Drain Kind = "drain"
	// PowerOff powers off a drained server that is empty; allocation is checked again right
	// before the BMC command.
	PowerOff Kind = "power_off"
	// Resume gives a server rota drained back to the job manager (demand came back, or the
	// drain timed out).
	Resume Kind = "resume"
	// Move requeues requeueable jobs off a server so they start elsewhere: the server then
	// empties and is powered off (rebalancing), or takes the work it was freed for (a quota).
	Move Kind = "move"
)

// Result is how an action carried out ended: the bounded "result" label of
// rota_scaler_actions_total, which the alert rules (alerts/) and the docs name.
type Result string

// The results.
const (
	ResultSuccess Result = "success"
	ResultFailure Result = "failure"
	// ResultAborted: a power-off called off because a job landed (the server was resumed).
	ResultAborted Result = "aborted"
	// ResultStateUnknown: the BMC could not say the power state; no command was sent.
	ResultStateUnknown Result = "state_unknown"
	// ResultInterrupted: cut short by rota's shutdown, no failure; the intent waits for the
	// next start's repair pass.
	ResultInterrupted Result = "interrupted"
	// ResultDryRun: decided in dry run, nothing sent.
	ResultDryRun Result = "dry_run"
)

// Results lists every Result, in the order above.
func Results() []Result {
	return []Result{ResultSuccess, ResultFailure, ResultAborted, ResultStateUnknown, ResultInterrupted, ResultDryRun}
}

// Kinds lists every action kind, for metrics that export one series per kind.
func Kinds() []Kind { return []Kind{PowerOn, Drain, PowerOff, Resume, Move} }

// Reason says why an action was taken or a server was skipped. The set is bounded (it is a
// metric label).
type Reason string

// Reasons for actions.
const (
	ReasonIdle         Reason = "idle"          // drain or power off: idle, and staying on costs more than a cycle
	ReasonDrained      Reason = "drained"       // power off: drain finished, server empty
	ReasonBacklog      Reason = "backlog"       // power on: demand waits
	ReasonFloor        Reason = "floor"         // power on or resume: below the pool's (scheduled) floor
	ReasonDemandReturn Reason = "demand_return" // resume: a draining server is needed again
	ReasonDrainTimeout Reason = "drain_timeout" // resume: drain did not finish in time
	ReasonRetry        Reason = "retry"         // power on: a Failed server's backoff ended
	ReasonSpare        Reason = "spare"         // power on or keep: warm capacity the forecast needs within a boot
	ReasonRepair       Reason = "repair"        // repair pass: finishing what an interrupted action left
	ReasonRequested    Reason = "requested"     // power on: the job manager placed work on the server (Slurm's ResumeProgram)
	ReasonRebalance    Reason = "rebalance"     // move: its work packs onto cheaper or fewer servers
	ReasonQuota        Reason = "quota"         // move: borrowed work gives a department its quota back
	// ReasonOutside is no action of rota's: the BMC reports a server at rest powered on or off
	// by something else (a person, its power policy, another controller on the same BMCs).
	ReasonOutside Reason = "outside"
)

// Reasons for skips: why a server was not acted on.
const (
	SkipPaused          Reason = "paused"
	SkipPinned          Reason = "pinned"
	SkipMaintenance     Reason = "maintenance"
	SkipPowerUnknown    Reason = "power_unknown"
	SkipInFlight        Reason = "in_flight"
	SkipAllocated       Reason = "allocated"
	SkipBusy            Reason = "busy"
	SkipNoTelemetry     Reason = "no_telemetry"
	SkipJobsUnknown     Reason = "jobs_unknown"
	SkipDrainedByPerson Reason = "drained_by_person"
	SkipFloor           Reason = "floor"
	SkipCeiling         Reason = "ceiling"
	SkipCooldown        Reason = "cooldown"
	SkipMinOn           Reason = "min_on"
	SkipMinOff          Reason = "min_off"
	SkipCycleCap        Reason = "cycle_cap"
	SkipBudget          Reason = "budget"
	SkipConcurrency     Reason = "concurrency"
	SkipQuota           Reason = "quota"
	SkipBackoff         Reason = "backoff"
	SkipNoFit           Reason = "no_fit"
	SkipNotNeeded       Reason = "not_needed"
	// SkipBelowBacklog: work waits for the pool, but no more than the backlog threshold.
	SkipBelowBacklog Reason = "below_backlog"
	// SkipDemandWaits: the server is idle, but work waits for its pool (no scale-down then).
	SkipDemandWaits Reason = "demand_waits"
	// SkipUnknownPool: the server's pool is not in the config (the inventory changed).
	SkipUnknownPool Reason = "unknown_pool"
	// SkipUnknownNode: the server is not in rota's inventory (a wake for a node the config does
	// not list: the job manager's names and rota's differ).
	SkipUnknownNode Reason = "unknown_node"
	// Refusals of a move: each names the job and the rule that kept it.
	SkipNotRequeueable Reason = "not_requeueable"
	SkipDoNotDisrupt   Reason = "do_not_disrupt"
	SkipJobTail        Reason = "job_tail"
	SkipMoveBudget     Reason = "move_budget"
	SkipMoveSaving     Reason = "saving_too_small"
	// SkipBreakEven: idle, but staying on is expected to cost less than a power cycle.
	SkipBreakEven Reason = "break_even"
	// SkipDeferred: the work waiting for the pool is of a deferrable class, outside its window.
	SkipDeferred Reason = "deferred"
)

// Action is one thing to do to one server.
type Action struct {
	Kind   Kind   `json:"kind"`
	Node   string `json:"node"`
	Pool   string `json:"pool"`
	Reason Reason `json:"reason"`
	// Detail is for humans ("cpu max 3% over 10m", "4 heavy jobs waiting"); never a label.
	Detail string `json:"detail,omitempty"`
	// Move is what a move action requeues, and where the work may not go back to.
	Move *MovePlan `json:"move,omitempty"`
}

// Skip is a server the planner looked at and left alone, and why.
type Skip struct {
	Node   string `json:"node"`
	Pool   string `json:"pool"`
	Reason Reason `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// Decision is what one planning pass returns.
type Decision struct {
	Actions []Action `json:"actions"`
	Skips   []Skip   `json:"skips"`
	// Desired is how many servers each pool should have on after this pass.
	Desired map[string]int `json:"desired"`
}

// RefusesMove reports whether a skip with this reason is a move refused (a rule of
// policy.moves kept work where it is), which the audit history keeps.
func (r Reason) RefusesMove() bool {
	switch r {
	case SkipNotRequeueable, SkipDoNotDisrupt, SkipJobTail, SkipMoveBudget, SkipMoveSaving:
		return true
	}
	return false
}
