// Package e2e holds rota's end-to-end tests: each scenario starts the lab (package lab: real
// Slurm, ipmi_sim and Redfish-emulator BMCs, a rota-exporter per server, Prometheus,
// Alertmanager and rota) and checks what the fleet does, from Slurm's record, the BMCs' power
// history and rota's own API. The tests build rota's binaries once, skip locally when a
// component is missing (naming `make tools`), and fail when CI=true.
package e2e
