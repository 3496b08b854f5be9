// Package e2e holds rota's end-to-end tests: each scenario starts the lab (package lab: real
// Slurm, ipmi_sim and Redfish-emulator BMCs, a rota-exporter per server, Prometheus,
// Alertmanager and rota) and checks what the fleet does, from Slurm's record, the BMCs' power
// history and rota's own API. Each test starts its own lab (its own folder and free ports) and
// runs in parallel with the others: they spend most of their time waiting on the policy's
// windows, and two at once (go test's -parallel, GOMAXPROCS by default) nearly halve the
// package's time on CI's two cores. The tests build rota's binaries once, skip locally when a
// component is missing (naming `make tools`), and fail when CI=true.
package e2e
