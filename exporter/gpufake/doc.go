// Package gpufake builds go-nvml mock servers (github.com/NVIDIA/go-nvml/pkg/nvml/mock) with
// every reading rota-exporter takes filled in, deterministic UUIDs and PCI bus ids, and readings
// that can change while an exporter runs. Tests, benchmarks and the lab use it to stand in for
// GPUs; the production binary must never import it (a test checks that it does not).
package gpufake
