package alerts

import (
	"fmt"
	"time"

	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/scaler/config"
)

// The books' series (package cost, exported by the scaler): monotonic counters, so increase()
// over any range is what was spent, saved, drawn or avoided in it, rota's restarts included.
const (
	CostSpend           = "rota_cost_spend_total"
	CostSaving          = "rota_cost_saving_total"
	CostWouldSave       = "rota_cost_would_save_total"
	CostNodeIdle        = "rota_cost_node_idle_total"
	CostBorrowedSeconds = "rota_cost_borrowed_server_seconds_total"
	CostBorrowed        = "rota_cost_borrowed_total"
	CostBooksOK         = "rota_cost_books_ok"
	EnergyNode          = "rota_energy_node_joules_total"
	EnergyAvoided       = "rota_energy_avoided_joules_total"
	CarbonAvoided       = "rota_carbon_avoided_grams_total"
	CarbonKnown         = "rota_carbon_intensity_known"
)

// RecNodeBusy is the busier of a server's CPUs and GPUs (the GPUs' mean busy signal): what
// share of its capacity works, for the idle-capacity cost.
const RecNodeBusy = "node:rota_node_busy:ratio"

// The books' alerts.
const (
	AlertPowerUnknown   = "RotaServerPowerUnknown"
	AlertFailedPowered  = "RotaFailedServerPowered"
	AlertBooksFailing   = "RotaCostBooksFailing"
	AlertCarbonUnknown  = "RotaCarbonIntensityUnknown"
	carbonUnknownFor    = model.Duration(30 * time.Minute)
	unknownSeriesFilter = `{state="unknown"} == 1`
)

// busyRule records RecNodeBusy: the larger of the CPU utilisation and the GPUs' mean busy
// signal (a GPU server whose CPUs idle while its GPUs work is busy).
func busyRule() Rule {
	return record(RecNodeBusy, fmt.Sprintf("max by (fleet, node, pool) (\n  label_replace(%s, \"signal\", \"gpu\", \"\", \"\")\n  or %s\n)", RecGPUBusyMean, RecCPU))
}

// costAlerts say when the books rest on what rota could not see: a server whose power state
// is unknown is booked as on (spend, never a saving), a failed server left on keeps costing,
// books that cannot be stored stop, a carbon intensity without a number is unknown.
func costAlerts(cfg *config.Config) []Rule {
	p := cfg.Policy
	pass, stuck := p.EvaluationInterval, 3*p.EvaluationInterval
	return []Rule{
		alert(AlertPowerUnknown, "cost", "warning", once(FleetNodeState+unknownSeriesFilter, "node", "pool", "state"), stuck,
			"The power state of {{ $labels.node }} is unknown",
			fmt.Sprintf("rota has not read {{ $labels.node }}'s power state for %s (BMC unreachable or answering nonsense): it sends the server no power command, and books it as on (%s{power=\"unknown\"}), never as a saving.", stuck, CostSpend)),
		alert(AlertFailedPowered, "cost", "warning",
			fmt.Sprintf("%s\nand on (fleet, node) %s == 1", failedAlert(), FleetNodePowered), pass,
			"{{ $labels.node }} failed and is still on",
			fmt.Sprintf("rota marked {{ $labels.node }} failed and its BMC says it is on: it keeps costing (%s{power=\"failed\"}) until someone looks at it.", CostSpend)),
		alert(AlertBooksFailing, "cost", "warning", CostBooksOK+" == 0", stuck,
			"rota's cost books are not kept",
			fmt.Sprintf("rota could not read or store its cost books for %s: the rota_cost_* and energy counters stand still (see rota's log).", stuck)),
		alert(AlertCarbonUnknown, "cost", "info", CarbonKnown+" == 0", carbonUnknownFor,
			"The carbon intensity of region {{ $labels.region }} is unknown",
			fmt.Sprintf("The query for region {{ $labels.region }}'s carbon intensity (accounting.carbon) has answered no single number for %s: its avoided energy is counted (carbon=\"unknown\"), its CO2 is not.", carbonUnknownFor)),
	}
}
