// Package wire builds rota's pieces from its config for the binaries that share them (rota
// and rotactl), so that each piece is built one way.
package wire

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/config"
)

// Power builds the BMC controller for every node of the inventory, with the bmc: section's cap,
// command interval (0s: none) and timeouts. timeout bounds each operation, confirmation included; zero
// takes bmc.operation_timeout.
func Power(cfg *config.Config, log *logrus.Entry, clock bmc.Clock, reg prometheus.Registerer, timeout time.Duration) (*bmc.Controller, error) {
	endpoints := map[string]bmc.Endpoint{}
	for _, p := range cfg.Pools {
		for _, n := range p.Nodes {
			endpoints[n.Name] = n.BMC
		}
	}
	if timeout == 0 {
		timeout = time.Duration(cfg.BMC.OperationTimeout)
	}
	return bmc.NewController(endpoints, bmc.Options{
		Logger:             log,
		Clock:              clock,
		Registerer:         reg,
		MaxConcurrent:      cfg.BMC.Concurrency,
		MinCommandInterval: spacing(cfg.BMC),
		OperationTimeout:   timeout,
		ConfirmTimeout:     timeout,
		GracePeriod:        time.Duration(cfg.BMC.GracefulTimeout),
	})
}

// spacing is bmc.Options' MinCommandInterval for the bmc: section's: the section is defaulted
// already, so a zero there is the file asking for no spacing, which bmc.Options spells
// negative (its zero is its own default).
func spacing(b config.BMCLimits) time.Duration {
	if b.MinCommandInterval == 0 {
		return -1
	}
	return time.Duration(b.MinCommandInterval)
}
