package alerts

import "fmt"

func record(name, expr string) Rule { return Rule{Record: name, Expr: expr} }

// nodeRules are per server: CPU and GPU utilisation, GPU memory and processes.
func nodeRules(e Expr) []Rule {
	return []Rule{
		record(RecCPU, e.CPUUtilization()),
		record(RecGPUMax, e.GPUUtilizationMax()),
		record(RecGPUMean, e.GPUUtilizationMean()),
		record(RecGPUProcesses, e.GPUProcesses()),
		record(RecGPUMemoryUsed, e.GPUMemoryUsed()),
		record(RecGPUMemoryRatio, e.GPUMemoryRatio()),
	}
}

// poolRules are per pool: utilisation of the capacity that is on (servers that report), and the
// queue by pool and class.
func poolRules() []Rule {
	return []Rule{
		record(RecPoolCPUs, fmt.Sprintf("sum by (pool) (%s)", NodeCPUs)),
		record(RecPoolCPUsBusy, fmt.Sprintf("sum by (pool) (\n  %s * on (node) group_left () max by (node) (%s)\n)", RecCPU, NodeCPUs)),
		record(RecPoolCPU, fmt.Sprintf("%s / %s", RecPoolCPUsBusy, RecPoolCPUs)),
		record(RecPoolGPU, fmt.Sprintf("avg by (pool) (%s)", GPUUtilization)),
		record(RecPendingPoolClass, fmt.Sprintf("sum by (pool, class) (%s)", ScalerPendingJobs)),
		record(RecSlurmPendingJobs, fmt.Sprintf("sum by (class) (%s)", SlurmPendingJobs)),
		record(RecSlurmPendingCPUs, fmt.Sprintf("sum by (class) (%s)", SlurmPendingCPUs)),
		record(RecSlurmPendingGPUs, fmt.Sprintf("sum by (class) (%s)", SlurmPendingGPUs)),
	}
}

// costRules are what the powered-on servers cost per hour, and what the servers that are off
// save against keeping everything on. A server paid whether on or off (saves_when_off false)
// counts in the all-on spend and never as a saving.
func costRules() []Rule {
	spend := fmt.Sprintf("%s * on (node) group_left () %s", FleetNodeCostPerHour, FleetNodePowered)
	saving := fmt.Sprintf("%s\n  * on (node) group_left () (1 - %s)\n  * on (node) group_left () %s",
		FleetNodeCostPerHour, FleetNodePowered, FleetNodeSavesWhenOff)
	sum := func(by, src string) string { return fmt.Sprintf("sum by (%s, currency) (%s)", by, src) }
	return []Rule{
		record(RecNodeSpend, spend),
		record(RecNodeSaving, saving),
		record(RecPoolSpend, sum("pool", RecNodeSpend)),
		record(RecDepartmentSpend, sum("department", RecNodeSpend)),
		record(RecRegionSpend, sum("region", RecNodeSpend)),
		record(RecFleetSpend, fmt.Sprintf("sum by (currency) (%s)", RecNodeSpend)),
		record(RecPoolSaving, sum("pool", RecNodeSaving)),
		record(RecDepartmentSaving, sum("department", RecNodeSaving)),
		record(RecRegionSaving, sum("region", RecNodeSaving)),
		record(RecFleetSaving, fmt.Sprintf("sum by (currency) (%s)", RecNodeSaving)),
		record(RecPoolAllOnSpend, sum("pool", FleetNodeCostPerHour)),
		record(RecFleetAllOnSpend, fmt.Sprintf("sum by (currency) (%s)", FleetNodeCostPerHour)),
		record(RecFleetSavingRatio, fmt.Sprintf("%s / %s", RecFleetSaving, RecFleetAllOnSpend)),
	}
}
