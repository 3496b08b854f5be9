package redfishemu

import (
	"fmt"
	"testing"
	"time"

	"github.com/stmcginnis/gofish"

	"github.com/rotahq/rota/internal/testutil"
)

// TestPowerReadings: the chassis' Power (PowerControl[0].PowerConsumedWatts) and
// EnvironmentMetrics (PowerWatts.Reading), as a generic Redfish client reads them, follow the
// power state; a server configured without readings answers 404 for both.
func TestPowerReadings(t *testing.T) {
	n1 := server("n1")
	n1.PowerWatts = PowerWatts{On: 410, Off: 11}
	none := server("none")
	none.PowerWatts.None = true
	e := start(t, Config{Servers: []ServerConfig{n1, none}})
	read := func(name string) (power, env float64, err error) {
		client, err := gofish.Connect(gofish.ClientConfig{
			Endpoint: "https://" + e.Server(name).Addr(), Username: "admin", Password: "secret", HTTPClient: trustingClient(e),
		})
		if err != nil {
			return 0, 0, err
		}
		defer client.Logout()
		chassis, err := client.Service.Chassis()
		if err != nil || len(chassis) != 1 {
			return 0, 0, fmt.Errorf("chassis: %d, %v", len(chassis), err)
		}
		p, err := chassis[0].Power()
		if err != nil {
			return 0, 0, err
		}
		m, err := chassis[0].EnvironmentMetrics()
		if err != nil {
			return 0, 0, err
		}
		if p == nil || m == nil || len(p.PowerControl) != 1 {
			return 0, 0, fmt.Errorf("power %v, environment metrics %v", p, m)
		}
		return float64(p.PowerControl[0].PowerConsumedWatts), float64(m.PowerWatts.Reading), nil
	}
	want := func(w float64) {
		t.Helper()
		p, env, err := read("n1")
		if err != nil {
			t.Fatal(err)
		}
		if p != w || env != w {
			t.Errorf("readings %v (Power) and %v (EnvironmentMetrics), want %v", p, env, w)
		}
	}
	want(11) // off: standby draw
	e.Server("n1").mu.Lock()
	e.Server("n1").beginLocked(powerOn)
	e.Server("n1").mu.Unlock()
	want(410) // powering on draws as on
	testutil.Eventually(t, 5*time.Second, "on", func() error {
		if p := e.Server("n1").Power(); p != powerOn {
			return fmt.Errorf("power %s", p)
		}
		return nil
	})
	want(410)
	if err := e.Server("n1").SetPower(powerOff); err != nil {
		t.Fatal(err)
	}
	want(11)
	if _, _, err := read("none"); err == nil {
		t.Error("a server without readings served one")
	}
	bad := Config{Servers: []ServerConfig{{Name: "x", Listen: ":0", Username: "u", Password: "p", PowerWatts: PowerWatts{On: -1}}}}
	if err := bad.Validate(); err == nil {
		t.Error("negative watts accepted")
	}
}
