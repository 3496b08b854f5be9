package jobs

import (
	"context"
	"errors"

	"github.com/rotahq/rota/scaler/fleet"
)

// Marker is the reason text rota puts on every drain it makes; a drain without it was made by
// a person and rota never undoes it.
const Marker = "rota:"

// ErrNotOurs is returned by Resume for a server drained by someone else.
var ErrNotOurs = errors.New("drained by someone other than rota")

// ErrNotRegistered is wrapped by an adapter's error for a server its job manager does not know
// (Kubernetes: no Node runs it). Right after a power-on that is its agent not registered yet
// (a kubelet registers its Node as it boots): the executor then counts the server as not ready,
// within its pool's boot timeout, as it does a server whose agent does not respond.
var ErrNotRegistered = errors.New("unknown to the job manager")

// Manager is a job manager as the scaler needs it.
//
// Guarantees every adapter gives:
//   - Safe for concurrent use.
//   - Nodes and Demand return a whole view or an error, never a partial view: a pass that
//     cannot read the job manager takes no action on what it could not see.
//   - Drain and Resume are idempotent; Resume never resumes a server rota did not drain
//     (ErrNotOurs).
//   - Every call is bounded by ctx.
type Manager interface {
	// Nodes returns what the job manager says of each server it knows, by node name. A server
	// it does not know is absent (its allocation is unknown).
	Nodes(ctx context.Context) (map[string]fleet.JobsView, error)
	// Demand returns the work waiting for servers, grouped by class, partition, shape and
	// department.
	Demand(ctx context.Context) ([]fleet.Demand, error)
	// Drain stops new work from being placed on node, with rota's Marker and reason.
	Drain(ctx context.Context, node, reason string) error
	// Resume returns a node that rota drained to service.
	Resume(ctx context.Context, node string) error
}

// PowerAware is a Manager that keeps its own view of power (Slurm's POWERED_DOWN state). The
// executor calls PoweredOff, best effort, once the BMC has confirmed a power-off and the store
// has recorded it; an error is logged and changes nothing, since the server is already off.
// Powering on needs no call: the executor resumes the node when it is ready, which returns it
// to service.
type PowerAware interface {
	PoweredOff(ctx context.Context, node string) error
}

// Watcher is a cheap read of the work waiting, for the loop's pending-work watch: the loop
// calls Waiting every jobs.watch_interval and runs a pass at once when an identifier appears
// that the last read did not have. Waiting must cost far less than Demand (one short query of
// the queue), must list only work that more servers could start (held work and work waiting
// on a dependency are not), and is safe for concurrent use and bounded by ctx. An error is
// logged and counted, and the passes go on at their interval. Identifiers need only be stable
// from one read to the next (a job id); their order does not matter.
type Watcher interface {
	Waiting(ctx context.Context) ([]string, error)
}

// ErrCannotMove is returned for a move the job manager cannot make: it has no way to requeue
// work (adapter none), or moves are not allowed (jobs.slurm.requeue off).
var ErrCannotMove = errors.New("the job manager cannot move work")

// ErrMoveUnfinished: a move stopped half-way with work it took off the server left waiting on
// the move itself (see Mover).
var ErrMoveUnfinished = errors.New("the move is unfinished: work it took off the server waits on it")

// Mover is a Manager that can move running work (policy.moves). Move requeues the jobs named
// that still run on node, so the job manager starts them again elsewhere and never on the
// servers in exclude. It is idempotent: a job no longer on node (moved already, or ended) is
// left alone, so a call repeated after a crash finishes what the first began. A job the job
// manager does not allow to be requeued is never touched. It returns how many jobs it moved.
// An error that wraps ErrMoveUnfinished says work the call took off node still waits on a step
// of the move (Slurm: a job held that the release left held): the executor keeps the move in
// flight and calls Move again at each repair until it finishes.
type Mover interface {
	Move(ctx context.Context, node string, jobIDs, exclude []string) (int, error)
}

// DrainContinuer is a Manager whose drain moves work off the server itself (Kubernetes evicts
// pods), which a disruption budget may hold back for a while. The executor calls ContinueDrain
// on every repair pass for each server rota is draining, until the drain ends (empty: powered
// off; past its timeout: resumed), so work a budget held back leaves once the budget allows.
// ContinueDrain is idempotent, never takes what the drain itself would not, and does nothing
// on a server rota did not drain. An error is logged and the next pass tries again.
type DrainContinuer interface {
	ContinueDrain(ctx context.Context, node string) error
}
