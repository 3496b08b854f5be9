// Command rota-lab-exporter is rota-exporter for the lab: the identical exporter (package
// exporter/app) with mock GPUs (exporter/gpufake) in place of NVML. ROTA_LAB_GPUS says how many
// GPUs it has; every second it applies the readings the lab writes to ROTA_LAB_GPU_FILE. It
// takes rota-exporter's flags. The production rota-exporter never links the mock.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/rotahq/rota/exporter/app"
	"github.com/rotahq/rota/exporter/gpufake"
	"github.com/rotahq/rota/lab"
)

func main() {
	n, err := strconv.Atoi(os.Getenv(lab.GPUsEnv))
	if err != nil || n < 0 {
		n = 0
	}
	gpus := gpufake.New(n)
	if file := os.Getenv(lab.GPUFileEnv); file != "" && n > 0 {
		go follow(file, gpus)
	}
	os.Exit(app.Run(os.Args[1:], os.Stdout, os.Stderr, gpus, time.Now))
}

// follow applies the readings in file to the GPUs every second; a missing or partly written
// file leaves the last readings in place.
func follow(file string, gpus *gpufake.Server) {
	for ; ; time.Sleep(time.Second) {
		rs, err := lab.ReadGPUFile(file)
		if err != nil {
			fmt.Fprintln(os.Stderr, "rota-lab-exporter:", err)
			continue
		}
		for i, g := range gpus.GPUs {
			if i < len(rs) {
				g.Set(rs[i])
			}
		}
	}
}
