package plan

import (
	"time"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// sim is a tiny fleet for sequence tests: it applies the planner's actions the way the
// executor would (a boot takes three passes, a power-off one), runs jobs as a job manager
// would (up to four 8-CPU jobs per server), and reports telemetry from the jobs it ran.
type sim struct {
	cfg      *config.Config
	now      time.Time
	nodes    []fleet.Node
	history  fleet.History
	lastBusy []time.Time
	running  []int
	pending  int
	since    time.Time
	ons      []int // power-ons per server
	offs     []int // power-offs per server
}

const jobsPerServer = 4

func newSim(cfg *config.Config, on, off int) *sim {
	s := &sim{cfg: cfg, now: t0, history: fleet.History{LastScaleUp: map[string]time.Time{}, LastScaleDown: map[string]time.Time{}}}
	for i := range on + off {
		n := onNode(cfg.Pools[0].Nodes[i].Name, "cpu")
		if i >= on {
			n = offNode(n.Name, "cpu")
		}
		s.nodes = append(s.nodes, n)
	}
	s.lastBusy = make([]time.Time, len(s.nodes))
	s.running = make([]int, len(s.nodes))
	s.ons = make([]int, len(s.nodes))
	s.offs = make([]int, len(s.nodes))
	return s
}

// setDemand makes total jobs wanted: when it drops to zero, every job ends.
func (s *sim) setDemand(total int) {
	if total == 0 {
		clear(s.running)
		s.pending = 0
		return
	}
	if s.pending == 0 {
		s.since = s.now
	}
	run := 0
	for _, r := range s.running {
		run += r
	}
	s.pending = max(total-run, 0)
}

// schedule places pending jobs on servers that take work, and refreshes each server's view.
func (s *sim) schedule() {
	for i := range s.nodes {
		n := &s.nodes[i]
		if n.State == fleet.StateOn && !n.Jobs.Drained {
			k := min(jobsPerServer-s.running[i], s.pending)
			s.running[i] += k
			s.pending -= k
		}
		if s.running[i] > 0 {
			s.lastBusy[i] = s.now
		}
		n.Jobs.Jobs, n.Jobs.CPUs = s.running[i], 8*s.running[i]
		n.IdleSince = s.lastBusy[i]
		if n.LastOn.After(n.IdleSince) {
			n.IdleSince = n.LastOn
		}
		n.Telemetry = fleet.TelemetryView{Present: true, LastSample: s.now, CPUMax: 0.01}
		if s.now.Sub(s.lastBusy[i]) < time.Duration(s.cfg.Policy.Idle.Window) {
			n.Telemetry.CPUMax = 0.9
		}
	}
}

// advance moves servers along the lifecycle the way the executor confirms it.
func (s *sim) advance() {
	for i := range s.nodes {
		n := &s.nodes[i]
		age := s.now.Sub(n.Since)
		switch {
		case n.State == fleet.StatePoweringOn && age >= time.Minute:
			n.State, n.Since = fleet.StateBooting, s.now
		case n.State == fleet.StateBooting && age >= 2*time.Minute:
			n.State, n.Since, n.LastOn = fleet.StateOn, s.now, s.now
		case n.State == fleet.StatePoweringOff:
			n.State, n.Since, n.LastOff, n.Power = fleet.StateOff, s.now, s.now, bmc.StateOff
			n.CyclesToday++
			s.history.PowerOffs = append(s.history.PowerOffs, s.now)
		}
	}
}

func (s *sim) snapshot() fleet.Snapshot {
	snap := fleet.Snapshot{Nodes: append([]fleet.Node(nil), s.nodes...), Telemetry: true, JobsKnown: true, History: s.history}
	if s.pending > 0 {
		snap.Demand = []fleet.Demand{{Shape: config.Shape{CPUs: 8}, Nodes: 1, Count: s.pending, Since: s.since}}
	}
	return snap
}

func (s *sim) apply(d fleet.Decision) {
	idx := map[string]int{}
	for i := range s.nodes {
		idx[s.nodes[i].Name] = i
	}
	for _, a := range d.Actions {
		i := idx[a.Node]
		n := &s.nodes[i]
		n.Since = s.now
		switch a.Kind {
		case fleet.PowerOn:
			n.State, n.Power = fleet.StatePoweringOn, bmc.StateOn
			s.history.LastScaleUp[a.Pool] = s.now
			s.ons[i]++
		case fleet.Drain:
			n.State, n.Jobs.Drained, n.Jobs.DrainedByRota = fleet.StateDraining, true, true
			s.history.LastScaleDown[a.Pool] = s.now
		case fleet.PowerOff:
			if n.State == fleet.StateOn {
				s.history.LastScaleDown[a.Pool] = s.now // drained and powered off in one
			}
			n.State = fleet.StatePoweringOff
			s.offs[i]++
		case fleet.Resume:
			n.State, n.Jobs.Drained, n.Jobs.DrainedByRota = fleet.StateOn, false, false
		}
	}
}
