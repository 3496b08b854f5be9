package bmc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rotahq/rota/bmc/redfishemu"
	"github.com/rotahq/rota/internal/testutil"
)

// TestParseDCMIPowerReading reads ipmitool's outputs in testdata/dcmi (README.md there says
// where each comes from).
func TestParseDCMIPowerReading(t *testing.T) {
	cases := []struct {
		file        string
		watts       float64
		noReading   bool
		unsupported bool
	}{
		{file: "ipmitool-1.8.19.txt", watts: 287},
		{file: "ipmitool-later.txt", watts: 287},
		{file: "deactivated.txt", noReading: true},
		{file: "ipmi_sim-invalid-command.txt", unsupported: true},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			b := testutil.Testdata(t, "dcmi", tc.file)
			if got := DCMIUnsupported(string(b)); got != tc.unsupported {
				t.Errorf("DCMIUnsupported = %v, want %v", got, tc.unsupported)
			}
			w, err := ParseDCMIPowerReading(string(b))
			switch {
			case tc.noReading:
				if !errors.Is(err, ErrNoReading) {
					t.Errorf("error %v, want ErrNoReading", err)
				}
			case tc.unsupported:
				if err == nil {
					t.Errorf("read %v W from an error answer", w)
				}
			case err != nil || w != tc.watts:
				t.Errorf("%v W, %v; want %v W", w, err, tc.watts)
			}
		})
	}
	for _, bad := range []string{
		"    Instantaneous power reading:   lots Watts\n",
		"    Instantaneous power reading:   -5 Watts\n",
		"    Instantaneous power reading:   99999999 Watts\n",
		"    Instantaneous power reading:   287 kW\n",
		"nothing here\n",
	} {
		if w, err := ParseDCMIPowerReading(bad); err == nil {
			t.Errorf("%q read as %v W", bad, w)
		}
	}
}

// FuzzParseDCMIPowerReading: no output panics the parser, and what it accepts is a DCMI
// reading (16 bits of whole watts).
func FuzzParseDCMIPowerReading(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "dcmi", "*.txt"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, out string) {
		w, err := ParseDCMIPowerReading(out)
		if err == nil && (w < 0 || w > 65535 || w != float64(int(w))) {
			t.Fatalf("accepted %v W from %q", w, out)
		}
	})
}

// TestRedfishPowerReading reads the emulator's power draw through the Controller: the
// EnvironmentMetrics reading, which follows the power state; a BMC without readings is
// ErrNoReading; a wrong password is an auth error that does not show the password; a BMC
// without a session service is refused, saying to use basic auth (a 404 at login is no
// missing reading), and read with basic auth.
func TestRedfishPowerReading(t *testing.T) {
	on := emuServer("on", "On", redfishemu.Faults{})
	on.PowerWatts = redfishemu.PowerWatts{On: 512, Off: 9}
	off := emuServer("off", "Off", redfishemu.Faults{})
	off.PowerWatts = redfishemu.PowerWatts{On: 512, Off: 9}
	none := emuServer("none", "On", redfishemu.Faults{})
	none.PowerWatts.None = true
	legacy := emuServer("legacy", "On", redfishemu.Faults{})
	legacy.PowerWatts = redfishemu.PowerWatts{On: 300, PowerOnly: true}
	noSessions := emuServer("no-sessions", "On", redfishemu.Faults{})
	noSessions.NoSessions = true
	login404 := emuServer("login-404", "On", redfishemu.Faults{LoginStatus: 404})
	emu, ca := startEmulator(t, on, off, none, legacy, noSessions, login404)
	eps := map[string]Endpoint{}
	for _, n := range []string{"on", "off", "none", "legacy", "no-sessions", "login-404"} {
		eps[n] = redfishEndpoint(t, emu, n, ca)
	}
	noSessionsBasic := redfishEndpoint(t, emu, "no-sessions", ca)
	noSessionsBasic.BasicAuth = true
	eps["no-sessions-basic"] = noSessionsBasic
	bad := redfishEndpoint(t, emu, "on", ca)
	bad.PasswordFile = writeSecret(t, "wrong-Password-99")
	eps["bad"] = bad
	basic := redfishEndpoint(t, emu, "off", ca)
	basic.BasicAuth = true
	eps["basic"] = basic
	log, buf := testLogger()
	c, err := NewController(eps, redfishOptions(Options{Logger: log}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		node  string
		watts float64
	}{{"on", 512}, {"off", 9}, {"basic", 9}, {"no-sessions-basic", redfishemu.DefaultOnWatts}} {
		r, err := c.PowerReading(ctx, tc.node)
		if err != nil || r.Watts != tc.watts || r.Source != "redfish_environment_metrics" {
			t.Errorf("%s: %+v, %v; want %v W from the environment metrics", tc.node, r, err, tc.watts)
		}
	}
	if r, err := c.PowerReading(ctx, "legacy"); err != nil || r.Watts != 300 || r.Source != "redfish_power" {
		t.Errorf("a bmc with the Power resource only: %+v, %v; want 300 W from PowerControl", r, err)
	}
	if _, err := c.PowerReading(ctx, "none"); !errors.Is(err, ErrNoReading) {
		t.Errorf("a bmc without readings: %v, want ErrNoReading", err)
	}
	for _, n := range []string{"no-sessions", "login-404"} {
		_, err := c.PowerReading(ctx, n)
		if !errors.Is(err, ErrRefused) || errors.Is(err, ErrNoReading) || !strings.Contains(err.Error(), "set basic_auth: true") {
			t.Errorf("%s: %v, want a refusal saying to set basic_auth (not ErrNoReading)", n, err)
		}
	}
	_, err = c.PowerReading(ctx, "bad")
	if !errors.Is(err, ErrAuth) {
		t.Errorf("wrong password: %v, want an auth error", err)
	}
	for _, secret := range []string{emuPassword, "wrong-Password-99"} {
		if strings.Contains(err.Error(), secret) || strings.Contains(buf.String(), secret) {
			t.Error("a password shows in an error or the log")
		}
	}
	if n := emu.Server("on").Stats().Sessions; n != 0 {
		t.Errorf("%d sessions left open", n)
	}
}

// TestIPMIPowerReading: ipmi_sim does not implement DCMI (Invalid command), which reads as a
// BMC offering no power reading.
func TestIPMIPowerReading(t *testing.T) {
	needIPMI(t)
	sim := startIPMISim(t, true, simHealthy)
	log, _ := testLogger()
	c, err := NewController(map[string]Endpoint{"n": ipmiEndpoint(t, sim.port, "secret")}, realOptions(Options{Logger: log}))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.PowerReading(context.Background(), "n"); !errors.Is(err, ErrNoReading) {
		t.Errorf("%+v, %v; want ErrNoReading (ipmi_sim has no DCMI)", r, err)
	}
}
