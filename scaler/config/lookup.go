package config

import (
	"strings"
	"time"

	"github.com/agnivade/levenshtein"

	"github.com/rotahq/rota/internal/jobclass"
)

// Pool returns the pool named name, or nil.
func (c *Config) Pool(name string) *Pool {
	for i := range c.Pools {
		if c.Pools[i].Name == name {
			return &c.Pools[i]
		}
	}
	return nil
}

// schedule returns the schedule named name, or nil.
func (c *Config) schedule(name string) *Schedule {
	for i := range c.Policy.Schedules {
		if c.Policy.Schedules[i].Name == name {
			return &c.Policy.Schedules[i]
		}
	}
	return nil
}

// Class returns the class named name, or nil.
func (c *Config) Class(name string) *Class {
	for i := range c.Classes {
		if c.Classes[i].Name == name {
			return &c.Classes[i]
		}
	}
	return nil
}

// Deferred reports whether waiting work of class, the oldest of it submitted at since (zero:
// unknown, taken as long waited), wakes no server at now: the class is deferrable, its window
// is closed and the work has not waited its longest deferral.
func (c *Config) Deferred(class string, since, now time.Time) bool {
	cl := c.Class(class)
	if cl == nil || cl.Defer == nil || since.IsZero() || now.Sub(since) >= time.Duration(cl.Defer.Max) {
		return false
	}
	s := c.schedule(cl.Defer.Until)
	return s != nil && !s.Active(now)
}

// NodeRef is a node with the pool it belongs to.
type NodeRef struct {
	Pool *Pool
	Node *Node
}

// Node returns the node named name and its pool; ok is false if there is none.
func (c *Config) Node(name string) (NodeRef, bool) {
	for i := range c.Pools {
		for j := range c.Pools[i].Nodes {
			if c.Pools[i].Nodes[j].Name == name {
				return NodeRef{Pool: &c.Pools[i], Node: &c.Pools[i].Nodes[j]}, true
			}
		}
	}
	return NodeRef{}, false
}

// NodeNames is the set of every server's name in the config.
func (c *Config) NodeNames() map[string]bool {
	names := map[string]bool{}
	for _, p := range c.Pools {
		for _, n := range p.Nodes {
			names[n.Name] = true
		}
	}
	return names
}

// NearestNode returns the node name closest to name, for a "did you mean" after a typo: one
// equal to it but for case, else the first at the fewest edits, at most a third of name's
// length (one at least); "" when none is that close, or name is longer than a host name.
func (c *Config) NearestNode(name string) string {
	const maxName = 255 // the edit distance costs len(name) times each node's
	if len(name) > maxName {
		return ""
	}
	best, bestDist := "", max(1, len([]rune(name))/3)+1
	lower := strings.ToLower(name)
	for _, p := range c.Pools {
		for _, n := range p.Nodes {
			if d := levenshtein.ComputeDistance(lower, strings.ToLower(n.Name)); d < bestDist {
				best, bestDist = n.Name, d
			}
		}
	}
	return best
}

// Label returns the node's label key, falling back to its pool's.
func (r NodeRef) Label(key string) string {
	if v, ok := r.Node.Labels[key]; ok {
		return v
	}
	return r.Pool.Labels[key]
}

// PerHour is what one server costs per hour while on, in Cost.Currency; on a tariff, at the
// week's mean price (what ranks pools by cost).
func (c Cost) PerHour() float64 {
	if c.Hourly > 0 {
		return c.Hourly
	}
	if c.tariff != nil {
		return c.Watts / 1000 * c.tariff.mean
	}
	return c.Watts / 1000 * c.PricePerKWh
}

// PlanPerHour is PerHour in accounting.currency: what pools are ranked and a power cycle is
// weighed by.
func (c Cost) PlanPerHour() float64 { return c.InPlanCurrency(c.PerHour()) }

// InPlanCurrency converts an amount of the pool's currency into accounting.currency.
func (c Cost) InPlanCurrency(amount float64) float64 {
	if c.rate == 0 {
		return amount
	}
	return amount * c.rate
}

// PerHourAt is PerHour at the price that holds at t.
func (c Cost) PerHourAt(t time.Time) float64 {
	if c.Hourly > 0 || c.tariff == nil {
		return c.PerHour()
	}
	price, _ := c.tariff.PriceAt(t)
	return c.Watts / 1000 * price
}

// Saves reports whether powering a server off saves its cost.
func (c Cost) Saves() bool {
	return c.SavesWhenOff == nil || *c.SavesWhenOff
}

// Shape is what a job asks for on each of its servers (see jobclass.Shape).
type Shape = jobclass.Shape

// Classify returns the name of the first class that names the job's partition, else the first
// whose limits the shape fits (jobclass.Classify). Validation guarantees the last class has
// no limits.
func (c *Config) Classify(s Shape) string { return jobclass.Classify(c.Classes, s) }

// Fits reports whether one server of the pool can hold the shape.
func (p *Profile) Fits(s Shape) bool {
	return s.CPUs <= p.CPUCores && s.GPUs <= p.GPUs && (p.Memory == 0 || s.Memory <= p.Memory)
}

// ReportsAllocation reports whether the job manager says what runs where: every adapter but
// none. Without one, a server's allocation is not known and idleness rests on telemetry.
func (j Jobs) ReportsAllocation() bool { return j.Adapter != "none" }

// MovesOffServersInService reports whether the job manager can move work off a server it
// leaves in service (a quota give-back move): every adapter that moves work but Kubernetes,
// whose scheduler could place an evicted pod's new one right back on a Node not cordoned (its
// Move refuses one rota did not cordon).
func (j Jobs) MovesOffServersInService() bool { return j.Adapter != "kubernetes" }

// TimedOut reports whether a drain begun at since has run for drain.timeout at now: rota then
// gives the server back instead of waiting on. The planner and the executor's repair both
// ask it, so they agree to the second.
func (d Drain) TimedOut(since, now time.Time) bool {
	return now.Sub(since) >= time.Duration(d.Timeout)
}
