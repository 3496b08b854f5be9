// Package lab runs rota's whole loop on one machine: a fleet of lab servers in two tiers
// (Redfish BMCs from rota-redfish-emulator, IPMI BMCs from ipmi_sim), a real Slurm cluster
// whose slurmd for a server runs only while that server's BMC says it is on, a rota-exporter
// per server whose readings follow the jobs Slurm runs on it (a procfs root the lab rewrites
// every tick, and mock GPUs), real Prometheus and Alertmanager with the deploy/ configs, and
// rota itself with a lab config (deploy/lab/rota.yml.tmpl) whose timings are scaled down through
// the same keys users set.
//
// Every process the lab starts runs in its own process group with ROTA_LAB=<lab folder> in its
// environment; Close stops each by pid, and KillMarked ends whatever still carries the marker
// (jobs' slurmstepd, or the remains of a lab whose supervisor was killed).
//
// A server's power lives in one file per server (nodes/NAME/power: On or Off): ipmi_sim's
// chassis_control script reads and writes it, and the Redfish emulator's power hook writes it.
// Each tick the lab starts or stops the server's slurmd and exporter to match, and rewrites its
// procfs files and GPU readings from the jobs running on it.
package lab
