// Package app is the body of the rota-exporter command: flags in node_exporter's conventions,
// logging, exporter-toolkit web serving (TLS, basic auth), and the collectors of package
// exporter. It takes the NVML library and the clock from its caller, so cmd/rota-exporter passes
// nvml.New() and a lab command can pass a go-nvml mock (see exporter/gpufake) and run the very
// same exporter.
package app
