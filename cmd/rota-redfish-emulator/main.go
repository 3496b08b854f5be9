// Command rota-redfish-emulator runs emulated Redfish BMCs (package bmc/redfishemu) from a
// YAML config, for tests, the lab and the demo.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"
	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/bmc/redfishemu"
	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/logflags"
)

// flags is the emulator's command line.
type flags struct {
	configFile, certOut string
	logs                logflags.Config
}

// newApp declares the emulator's command line; parsing fills the flags it returns.
func newApp() (*kingpin.Application, *flags) {
	f := &flags{}
	app := kingpin.New("rota-redfish-emulator", "Emulated Redfish BMCs (DMTF public-rackmount1 mockup with power state, sessions, faults and hooks).")
	app.Flag("config.file", "Emulator config (YAML).").Required().ExistingFileVar(&f.configFile)
	app.Flag("tls.cert-out", "Write the generated certificate (the CA to trust) to this file.").StringVar(&f.certOut)
	logflags.Add(app, &f.logs, "info")
	app.Version(version.Print("rota-redfish-emulator"))
	app.HelpFlag.Short('h')
	return app, f
}

func main() {
	app, f := newApp()
	kingpin.MustParse(app.Parse(os.Args[1:]))

	log := f.logs.New(os.Stderr).WithField("component", "redfish-emulator")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, f.configFile, f.certOut, log); err != nil {
		fmt.Fprintln(os.Stderr, "rota-redfish-emulator:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends.
func run(ctx context.Context, configFile, certOut string, log *logrus.Entry) error {
	b, err := os.ReadFile(configFile)
	if err != nil {
		return err
	}
	cfg, err := redfishemu.ParseConfig(b)
	if err != nil {
		return err
	}
	emu, err := redfishemu.Start(cfg, clock.Real{}, log)
	if err != nil {
		return err
	}
	defer emu.Close()
	if certOut != "" {
		if err := os.WriteFile(certOut, emu.CertPEM(), 0o644); err != nil {
			return fmt.Errorf("writing certificate: %w", err)
		}
	}
	for _, sc := range cfg.Servers {
		log.WithFields(logrus.Fields{"server": sc.Name, "addr": emu.Server(sc.Name).Addr()}).Info("serving")
	}
	if a := emu.ControlAddr(); a != "" {
		log.WithField("addr", a).Info("control endpoint")
	}
	<-ctx.Done()
	log.Info("stopping")
	return nil
}
