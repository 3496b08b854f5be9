package fleet

import (
	"time"

	"github.com/rotahq/rota/bmc/spec"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/learn"
)

// Snapshot is everything one planning pass knows, read fresh at the start of the pass. The
// planner reads nothing else (no I/O, no clock), so the same snapshot, config and time always
// give the same decision.
type Snapshot struct {
	Nodes  []Node
	Demand []Demand
	// Telemetry is false when Prometheus could not be queried or answered with stale data; then
	// no server counts as idle (safety invariant 2).
	Telemetry bool
	// JobsKnown is false when the job manager could not be read; then nothing is drained or
	// powered off, and demand is taken as unknown (nothing powered on for it either).
	JobsKnown bool
	// NoJobManager is true where no job manager says what runs where (jobs.adapter none): idleness
	// then rests on telemetry alone, nothing forbids a power-off in the job manager's name, and
	// JobsKnown carries no information.
	NoJobManager bool
	// Paused is the operator's pause: no action at all (safety invariant 5).
	Paused bool
	// History is what rota did recently, for cooldowns and the disruption budget.
	History History
	// Learned is what rota learned about each pool (by name) from what it saw before: how
	// far its need rises over the next minutes and hours, its boot and shutdown times. A pool
	// missing here has no history yet.
	Learned map[string]learn.View
}

// Node is one server as observed.
type Node struct {
	Name string
	Pool string
	// Region and Department come from the inventory labels.
	Region     string
	Department string

	// State is rota's lifecycle state (from the store); Since is when it was entered.
	State State
	Since time.Time
	// Power is what the BMC last said; StateUnknown blocks every power command.
	Power spec.State

	// Pinned servers (operator's pin) are never touched; Maintenance likewise.
	Pinned      bool
	Maintenance bool

	Jobs      JobsView
	Telemetry TelemetryView

	// LastOn and LastOff are when the server last finished powering on and off (zero: never);
	// CyclesToday counts its power-offs in the last 24 hours.
	LastOn      time.Time
	LastOff     time.Time
	CyclesToday int
	// IdleSince is when the job manager last showed work on the server, or it came up if
	// later (zero: unknown): how long it has been idle.
	IdleSince time.Time
	// Failures counts failed actions since one of the kind that failed last succeeded;
	// RetryAfter is when a Failed server may be tried again, and an On one drained again.
	Failures   int
	RetryAfter time.Time
}

// JobsView is what the job manager says about a server.
type JobsView struct {
	// Known is false when the job manager does not know the server (or there is none): its
	// allocation is unknown and idleness rests on telemetry alone.
	Known bool `json:"known"`
	// Jobs, CPUs and GPUs are what is allocated on it now.
	Jobs int `json:"jobs"`
	CPUs int `json:"cpus"`
	GPUs int `json:"gpus"`
	// Drained is true when the job manager takes no new work on it; DrainedByRota when rota's
	// own marker is on the drain (a drain by a person is never undone by rota).
	Drained       bool `json:"drained"`
	DrainedByRota bool `json:"drained_by_rota"`
	// Responding is false when the job manager's agent on the server is down (not ready).
	Responding bool `json:"responding"`
	// Running are the jobs on it, when the job manager lists them (a move needs them all).
	Running []Job `json:"running,omitempty"`
	// User is the user whose jobs are all that is allocated on it (empty: nothing is, several
	// users' jobs are, or the job manager does not say); UserOnly: one of them takes no other
	// user's work beside it (Slurm's --exclusive=user, Needs.User).
	User     string `json:"user,omitempty"`
	UserOnly bool   `json:"user_only,omitempty"`
	// PowerSaving is true while the job manager's own power saving has the server (Slurm:
	// powered down, or powering down or up): a power change then is the job manager's
	// (its SuspendProgram, `rotactl slurm suspend`), not one outside rota.
	PowerSaving bool `json:"power_saving,omitempty"`
}

// Allocated reports whether anything runs on the server, as far as the job manager knows.
func (j JobsView) Allocated() bool { return j.Jobs > 0 || j.CPUs > 0 || j.GPUs > 0 }

// TelemetryView is what Prometheus says about a server over the idle window.
type TelemetryView struct {
	// Present is true when the server's series exist and are fresh (see SampleFresh) and
	// cover the whole idle window, for its CPUs and for every GPU its pool's profile declares.
	Present bool `json:"present"`
	// LastSample is the time of the newest sample.
	LastSample time.Time `json:"last_sample"`
	// CPUMax is the highest CPU utilisation (0..1) seen over the idle window; GPUMax the highest
	// busy signal (policy.gpu_signal: SM activity or utilisation) of any of its GPUs;
	// GPUProcesses the compute processes on its GPUs now.
	CPUMax       float64 `json:"cpu_max"`
	GPUMax       float64 `json:"gpu_max"`
	GPUProcesses int     `json:"gpu_processes"`
	// GPUMean is the mean GPU busy signal over the underuse window (light work on GPUs).
	GPUMean float64 `json:"gpu_mean"`
	// Missing says, when the server is not Present, what is missing (no sample, a stale one,
	// part of the window, GPUs its pool declares without readings, a failing collector).
	Missing string `json:"missing,omitempty"`
	// UnknownTelemetry names the series of the server's telemetry source that Prometheus does
	// not have at all (a mapping that names a series nothing exports); a blocking one makes
	// the server not Present.
	UnknownTelemetry string `json:"unknown_telemetry,omitempty"`
}

// SampleFresh reports whether a sample taken at t is fresh at now: younger than maxAge
// (policy.telemetry.max_age). A sample exactly maxAge old is not: Prometheus's range
// selector [maxAge] leaves its start out, so RotaTelemetryMissing already counts it missing,
// and rota must never call fresh what the rule calls missing.
func SampleFresh(t, now time.Time, maxAge time.Duration) bool {
	return !t.IsZero() && now.Sub(t) < maxAge
}

// Demand is work waiting for servers: Count jobs of one shape and class.
type Demand struct {
	Class      string
	Partition  string
	Department string
	Region     string
	// Shape is what each job asks of each of its servers; Nodes is how many servers each job
	// needs at once (a gang: all start together).
	Shape config.Shape
	Needs Needs
	// TimeLimit is the shortest time limit of these jobs (0: none given), what the planner
	// takes as their expected run.
	TimeLimit time.Duration
	Nodes     int
	Count     int
	// Since is when the oldest of these jobs was submitted.
	Since time.Time
}

// History is what rota did recently.
type History struct {
	// LastScaleUp and LastScaleDown per pool, for cooldowns.
	LastScaleUp   map[string]time.Time
	LastScaleDown map[string]time.Time
	// PowerOffs are the times of recent power-offs across the fleet, for the disruption budget.
	PowerOffs []time.Time
	// Moves are the times of recent moves across the fleet, for the move budget.
	Moves []time.Time
}
