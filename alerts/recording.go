package alerts

import (
	"fmt"
	"strings"
)

func record(name, expr string) Rule { return Rule{Record: name, Expr: expr} }

// nodeRules are per server, from the telemetry sources the pools read: CPU use and count, GPU
// utilisation and busy signal (with how many GPUs have a reading), GPU memory and processes.
// Every source records the same series, with the labels fleet, node and pool, so the alerts
// read them alike; with several sources each rule is the union ("or") of theirs, whose servers are
// apart (each source keeps to its own pools).
func nodeRules(exprs []Expr) []Rule {
	var rules []Rule
	add := func(name string, part func(Expr) string) {
		if expr := perServer(exprs, part); expr != "" {
			rules = append(rules, record(name, expr))
		}
	}
	add(RecCPU, Expr.CPUUtilization)
	add(RecCPUs, Expr.CPUs)
	add(RecGPUMax, Expr.GPUUtilizationMax)
	add(RecGPUMean, Expr.GPUUtilizationMean)
	add(RecGPUBusyMax, Expr.GPUBusyMax)
	add(RecGPUBusyMean, Expr.GPUBusyMean)
	add(RecGPUBusyCount, Expr.GPUBusyCount)
	add(RecGPUProcesses, Expr.GPUProcesses)
	add(RecGPUMemoryUsed, Expr.GPUMemoryUsed)
	add(RecGPUMemoryRatio, Expr.GPUMemoryRatio)
	return rules
}

// perServer is one per-server expression over every telemetry source: each source's part
// (with the label pool) joined with "or", their servers being apart; "" when no source has
// the part. The node recording rules record it, and the alerts' windows evaluate it at every
// step.
func perServer(exprs []Expr, part func(Expr) string) string {
	var parts []string
	for _, e := range exprs {
		if p := part(e); p != "" {
			parts = append(parts, e.src.withPool(p, e.RateWindow()))
		}
	}
	return strings.Join(parts, "\nor\n")
}

// poolRules are per fleet and pool: utilisation of the capacity that is on (servers that
// report), and the queue by pool and class. Two fleets' pools of one name stay apart.
func poolRules() []Rule {
	return []Rule{
		record(RecPoolCPUs, fmt.Sprintf("sum by (fleet, pool) (%s)", RecCPUs)),
		record(RecPoolCPUsBusy, fmt.Sprintf("sum by (fleet, pool) (%s * on (fleet, node) group_left () %s)", RecCPU, RecCPUs)),
		record(RecPoolCPU, fmt.Sprintf("%s / %s", RecPoolCPUsBusy, RecPoolCPUs)),
		// The servers of a pool are alike, so the mean of their means is the mean of the GPUs.
		record(RecPoolGPU, fmt.Sprintf("avg by (fleet, pool) (%s)", RecGPUMean)),
		record(RecPendingPoolClass, once(ScalerPendingJobs, "pool", "class")),
		record(RecSlurmPendingJobs, fmt.Sprintf("sum by (fleet, class) (%s)", SlurmPendingJobs)),
		record(RecSlurmPendingCPUs, fmt.Sprintf("sum by (fleet, class) (%s)", SlurmPendingCPUs)),
		record(RecSlurmPendingGPUs, fmt.Sprintf("sum by (fleet, class) (%s)", SlurmPendingGPUs)),
	}
}

// costRules are what the servers cost per hour now, and what the servers that are off save
// against keeping everything on. A server paid whether on or off (saves_when_off false) costs
// its rent while off too, as rota_cost_spend_total books it, and never saves. A server whose
// power state is unknown costs as if on and saves nothing: only a server its BMC says is off
// saves. So spend and saving add up to the all-on spend. Every sum keeps the fleet.
func costRules() []Rule {
	cost := once(FleetNodeCostPerHour, "node", "pool", "region", "department", "currency")
	powered := once(FleetNodePowered, "node", "pool", "region", "department")
	saves := once(FleetNodeSavesWhenOff, "node", "pool")
	drawing := fmt.Sprintf("clamp_max(\n    %s\n    + on (fleet, node) (count by (fleet, node) (%s%s) or on (fleet, node) 0 * %s),\n    1\n  )",
		powered, FleetNodeState, unknownSeriesFilter, powered)
	paid := fmt.Sprintf("clamp_max(\n    %s\n    + on (fleet, node) (1 - %s),\n    1\n  )", strings.ReplaceAll(drawing, "\n", "\n  "), saves)
	spend := fmt.Sprintf("%s\n  * on (fleet, node) group_left ()\n  %s", cost, paid)
	saving := fmt.Sprintf("%s\n  * on (fleet, node) group_left () (1 - %s)\n  * on (fleet, node) group_left () %s",
		cost, drawing, saves)
	sum := func(by, src string) string { return fmt.Sprintf("sum by (fleet, %s, currency) (%s)", by, src) }
	return []Rule{
		record(RecNodeSpend, spend),
		record(RecNodeSaving, saving),
		record(RecPoolSpend, sum("pool", RecNodeSpend)),
		record(RecDepartmentSpend, sum("department", RecNodeSpend)),
		record(RecRegionSpend, sum("region", RecNodeSpend)),
		record(RecFleetSpend, fmt.Sprintf("sum by (fleet, currency) (%s)", RecNodeSpend)),
		record(RecPoolSaving, sum("pool", RecNodeSaving)),
		record(RecDepartmentSaving, sum("department", RecNodeSaving)),
		record(RecRegionSaving, sum("region", RecNodeSaving)),
		record(RecFleetSaving, fmt.Sprintf("sum by (fleet, currency) (%s)", RecNodeSaving)),
		record(RecPoolAllOnSpend, sum("pool", cost)),
		record(RecFleetAllOnSpend, fmt.Sprintf("sum by (fleet, currency) (%s)", cost)),
		record(RecFleetSavingRatio, fmt.Sprintf("%s / %s", RecFleetSaving, RecFleetAllOnSpend)),
	}
}
