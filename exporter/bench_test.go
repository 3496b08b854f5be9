package exporter

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkScrapeEightGPUs is one scrape of every collector (CPU and memory from fixtures,
// eight mocked GPUs), gathered through a registry as the HTTP handler does.
func BenchmarkScrapeEightGPUs(b *testing.B) {
	e, err := New(testConfig(busyFake(8), CollectorCPU, CollectorMemory, CollectorGPU))
	if err != nil {
		b.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(e)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}
