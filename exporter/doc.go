// Package exporter holds rota-exporter's collectors: one per file, each reading one source of a
// server's facts (CPU and memory from procfs, GPUs through NVML) and sending rota_* metrics, plus
// the Exporter that runs the enabled collectors on every scrape and adds the meta-metrics
// rota_exporter_collector_success and rota_exporter_collector_duration_seconds.
//
// The GPU collector takes an nvml.Interface, so the real library (nvml.New()) and the go-nvml
// mock (see package gpufake) are interchangeable; the production binary never links the mock.
package exporter
