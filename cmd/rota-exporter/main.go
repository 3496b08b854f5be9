// Command rota-exporter publishes a server's CPU, memory and GPU (NVML) readings for Prometheus,
// under the rota_* names the rota scaler and its alerts query. Flags and web configuration
// follow node_exporter's conventions; `rota-exporter --help` lists them.
package main

import (
	"os"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/rotahq/rota/exporter/app"
)

func main() {
	os.Exit(app.Run(os.Args[1:], os.Stdout, os.Stderr, nvml.New(), time.Now))
}
