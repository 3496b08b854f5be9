package alerts

import (
	"fmt"
	"strings"
)

// The series contract: what rota reads and writes (docs/prometheus.md lists them with their labels).
// Exporter series carry the target labels node and pool (and region, department) from file-based
// service discovery.
const (
	// rota-exporter, on every server.
	NodeCPUSeconds   = "rota_node_cpu_seconds_total"
	NodeCPUs         = "rota_node_cpus"
	GPUUtilization   = "rota_gpu_utilization_ratio"
	GPUSMActive      = "rota_gpu_sm_active_ratio"
	GPUMemoryUsed    = "rota_gpu_memory_used_bytes"
	GPUMemoryTotal   = "rota_gpu_memory_total_bytes"
	GPUProcesses     = "rota_gpu_compute_processes"
	GPUPower         = "rota_gpu_power_watts"
	GPUDevices       = "rota_gpu_devices"
	CollectorSuccess = "rota_exporter_collector_success"

	// The Slurm collector, on the head node.
	SlurmPendingJobs = "rota_slurm_pending_jobs"
	SlurmPendingCPUs = "rota_slurm_pending_cpus"
	SlurmPendingGPUs = "rota_slurm_pending_gpus"

	// The scaler.
	FleetNodeState        = "rota_fleet_node_state"
	FleetNodePowered      = "rota_fleet_node_powered"
	FleetNodeCostPerHour  = "rota_fleet_node_cost_per_hour"
	FleetNodeSavesWhenOff = "rota_fleet_node_saves_when_off"
	// FleetNodeGPUs is the GPUs each server's pool profile declares: what the rules hold the
	// GPU readings against, known whatever the server's exporter sends.
	FleetNodeGPUs     = "rota_fleet_node_gpus_declared"
	ScalerPendingJobs = "rota_scaler_pending_jobs"
	// ScalerDeferredJobs are the jobs of ScalerPendingJobs that wait on purpose: of a
	// deferrable class outside its window, not yet waited its defer.max.
	ScalerDeferredJobs = "rota_scaler_deferred_jobs"
	ScalerActions      = "rota_scaler_actions_total"
	// ScalerPowerOutside counts servers at rest found powered on or off with no command of rota's.
	ScalerPowerOutside    = "rota_scaler_power_changes_outside_total"
	ScalerLastPassSuccess = "rota_scaler_last_pass_success_timestamp_seconds"
	ScalerTelemetryOK     = "rota_scaler_telemetry_ok"
	// HALeader is 1 on the rota that leads (a single rota on bbolt always does), HATerms the
	// terms each rota began as leader, HAConfigDiffers 1 on a follower whose config's digest
	// is not the leader's.
	HALeader        = "rota_ha_leader"
	HATerms         = "rota_ha_terms_total"
	HAConfigDiffers = "rota_ha_leader_config_differs"
	// FleetLabel names the fleet, so one Prometheus scraping several fleets keeps each apart:
	// a target label the operator sets on every job of a fleet (rota, rota-exporter,
	// node_exporter, dcgm-exporter, the Slurm collector), which every aggregation of the rules
	// keeps and every join matches on. rota's own (store.etcd.fleet, on the HA series) is kept
	// as exported_fleet beside it; targets without the label are one fleet, "".
	FleetLabel = "fleet"
)

// ScalerJob is the Prometheus job name that scrapes rota itself (deploy/prometheus).
const ScalerJob = "rota"

// once is a series of rota's own (sel) taken once per fleet and the labels named: during a
// leader handover two rotas of a fleet (apart by instance) send it for a scrape or two, where a
// join refuses two series, a sum counts both, and an alert's hold would start again under the
// new instance. Where both send, the larger value counts: on over off, so the books count
// spend, not saving.
func once(sel string, by ...string) string {
	return fmt.Sprintf("max by (%s) (%s)", strings.Join(append([]string{FleetLabel}, by...), ", "), sel)
}

// Recorded series (level:metric:operations). Node level keeps the labels node and pool.
const (
	RecCPU            = "node:rota_node_cpu_utilization:ratio"
	RecCPUs           = "node:rota_node_cpus:count"
	RecGPUMax         = "node:rota_gpu_utilization:max"
	RecGPUMean        = "node:rota_gpu_utilization:avg"
	RecGPUBusyMax     = "node:rota_gpu_busy:max"
	RecGPUBusyMean    = "node:rota_gpu_busy:avg"
	RecGPUBusyCount   = "node:rota_gpu_busy:count"
	RecGPUProcesses   = "node:rota_gpu_compute_processes:sum"
	RecGPUMemoryUsed  = "node:rota_gpu_memory_used_bytes:sum"
	RecGPUMemoryRatio = "node:rota_gpu_memory_used:ratio"

	RecPoolCPUs     = "pool:rota_node_cpus:sum"
	RecPoolCPUsBusy = "pool:rota_node_cpus_busy:sum"
	RecPoolCPU      = "pool:rota_node_cpu_utilization:ratio"
	RecPoolGPU      = "pool:rota_gpu_utilization:avg"

	RecPendingPoolClass = "pool_class:rota_scaler_pending_jobs:sum"
	RecSlurmPendingJobs = "class:rota_slurm_pending_jobs:sum"
	RecSlurmPendingCPUs = "class:rota_slurm_pending_cpus:sum"
	RecSlurmPendingGPUs = "class:rota_slurm_pending_gpus:sum"
	RecNodeSpend        = "node:rota_fleet_spend_per_hour:powered"
	RecNodeSaving       = "node:rota_fleet_saving_per_hour:off"
	RecPoolSpend        = "pool:rota_fleet_spend_per_hour:sum"
	RecDepartmentSpend  = "department:rota_fleet_spend_per_hour:sum"
	RecRegionSpend      = "region:rota_fleet_spend_per_hour:sum"
	RecFleetSpend       = "currency:rota_fleet_spend_per_hour:sum"
	RecPoolSaving       = "pool:rota_fleet_saving_per_hour:sum"
	RecDepartmentSaving = "department:rota_fleet_saving_per_hour:sum"
	RecRegionSaving     = "region:rota_fleet_saving_per_hour:sum"
	RecFleetSaving      = "currency:rota_fleet_saving_per_hour:sum"
	RecPoolAllOnSpend   = "pool:rota_fleet_all_on_spend_per_hour:sum"
	RecFleetAllOnSpend  = "currency:rota_fleet_all_on_spend_per_hour:sum"
	RecFleetSavingRatio = "currency:rota_fleet_saving:ratio"
)
