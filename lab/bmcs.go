package lab

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/internal/ipmisim"
)

// chassisScript is ipmi_sim's chassis_control program for one server: ipmi_sim runs it as
// `SCRIPT <mc-addr> get power` (answer power:0|1) and `SCRIPT <mc-addr> set power 0|1`; the
// server's power file is the state. While the fault file exists, every set fails (the BMC
// answers power commands with an error but still reads its state).
const chassisScript = `#!/bin/sh
f=%q
case "$2" in
get) case "$(cat "$f")" in [Oo][Nn]*) echo power:1 ;; *) echo power:0 ;; esac ;;
set) [ "$3" = power ] || exit 0
     [ -e "$f.fault" ] && exit 1
     if [ "$4" = 1 ]; then echo On > "$f.set"; else echo Off > "$f.set"; fi
     mv "$f.set" "$f" ;;
esac
`

// The emulated Redfish servers' power draw: a 2-GPU server on, and its BMC's standby.
const (
	labOnWatts      = 1650
	labStandbyWatts = 18
)

// startIPMI runs one ipmi_sim per IPMI server and waits until each answers an RMCP ping.
func (l *Lab) startIPMI(ctx context.Context) error {
	password, err := l.secret("bmc.password")
	if err != nil {
		return err
	}
	for _, n := range l.nodes {
		if n.ep.Protocol != bmc.ProtocolIPMI {
			continue
		}
		sim := ipmisim.BMC{Dir: filepath.Join(l.Dir, "ipmi", n.name), Name: n.name, Port: n.ep.Port,
			Users:   []ipmisim.User{{ID: 2, Name: n.ep.Username, Password: password, Privilege: "admin"}},
			Chassis: fmt.Sprintf(chassisScript, n.powerFile())}
		if err := sim.Write(); err != nil {
			return err
		}
		if err := l.run("ipmi-"+n.name, nil, l.tools.ipmiSim, sim.Args()...); err != nil {
			return err
		}
	}
	for _, n := range l.nodes {
		if n.ep.Protocol != bmc.ProtocolIPMI {
			continue
		}
		addr := net.JoinHostPort(n.ep.Host, strconv.Itoa(n.ep.Port))
		if err := waitFor(ctx, 30*time.Second, "ipmi_sim of "+n.name+" answers", func() error {
			if !bmc.RMCPPing(ctx, addr) {
				return fmt.Errorf("no RMCP pong from %s", addr)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// SetIPMIFault makes the IPMI server's BMC answer every power command with an error (on) or
// behave again (off).
func (l *Lab) SetIPMIFault(server string, on bool) error {
	for _, n := range l.nodes {
		if n.name != server || n.ep.Protocol != bmc.ProtocolIPMI {
			continue
		}
		if !on {
			if err := os.Remove(n.powerFile() + ".fault"); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("clearing the fault of %s: %w", server, err)
			}
			return nil
		}
		return os.WriteFile(n.powerFile()+".fault", nil, 0o644)
	}
	return fmt.Errorf("no IPMI server %s in the lab", server)
}

// RedfishControl is the Redfish emulator's control endpoint (faults, power) in a lab.
func (l *Lab) RedfishControl() string {
	port, _ := l.Ports.TCP("redfish-control")
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

// startRedfish runs one rota-redfish-emulator for every Redfish server; each server's power
// hook writes its power file. It waits for the control endpoint and the certificate.
func (l *Lab) startRedfish(ctx context.Context) error {
	password, err := l.secret("bmc.password")
	if err != nil {
		return err
	}
	var servers []map[string]any
	var ca string
	for _, n := range l.nodes {
		if n.ep.Protocol != bmc.ProtocolRedfish {
			continue
		}
		on, err := readPower(n.powerFile())
		if err != nil {
			return err
		}
		ca = n.ep.CAFile
		servers = append(servers, map[string]any{
			"name":             n.name,
			"listen":           net.JoinHostPort(n.ep.Host, strconv.Itoa(n.ep.Port)),
			"username":         n.ep.Username,
			"password":         password,
			"power":            map[bool]string{true: "On", false: "Off"}[on],
			"transition_delay": "1s",
			// Readings the books take (bmc.power_reading_interval): on, and in standby.
			"power_watts": map[string]float64{"on": labOnWatts, "off": labStandbyWatts},
			"hook":        map[string]any{"command": []string{l.tools.shell, "-c", `echo "$ROTA_EMU_POWER" > "$0.set" && mv "$0.set" "$0"`, n.powerFile()}},
		})
	}
	if len(servers) == 0 {
		return nil
	}
	cfg, err := yaml.Marshal(map[string]any{"control_listen": l.RedfishControl()[len("http://"):], "servers": servers})
	if err != nil {
		return err
	}
	file := filepath.Join(l.Dir, "redfish", "emulator.yml")
	if err := os.WriteFile(file, cfg, 0o600); err != nil {
		return err
	}
	if err := l.run("redfish-emulator", nil, l.tools.redfishEmu, "--config.file="+file, "--tls.cert-out="+ca); err != nil {
		return err
	}
	return waitFor(ctx, 30*time.Second, "redfish emulator ready", func() error {
		if err := getOK(ctx, l.RedfishControl()+"/-/ready"); err != nil {
			return err
		}
		_, err := os.Stat(ca)
		return err
	})
}

// getOK GETs url and wants 200.
func getOK(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
