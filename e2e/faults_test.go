package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/lab"
)

// TestRotaKilledMidDrain: rota is killed with SIGKILL while a server is drained and on its way
// off (Slurm shows it drained, its BMC still has it on: an idle server is drained and powered
// off in one pass, and the IPMI BMCs' graceful off lasts bmc.graceful_timeout), and started
// again: its repair pass finishes the work safely, the fleet reaches its floors and no powered
// server stays drained.
func TestRotaKilledMidDrain(t *testing.T) {
	t.Parallel()
	l := startLab(t, "all", false)
	testutil.Eventually(t, 3*time.Minute, "a powered server drained in Slurm", func() error {
		states, err := slurmNodes(t, l)
		if err != nil {
			return err
		}
		for _, servers := range powered(t, l) {
			for _, n := range servers {
				if strings.HasPrefix(states[n], "drain") || states[n] == "drng" {
					return nil
				}
			}
		}
		return fmt.Errorf("no powered server drained: %v", states)
	})
	if err := l.Kill("rota"); err != nil {
		t.Fatal(err)
	}
	if err := l.Restart("rota"); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitRota(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFloor(t, l, 4*time.Minute)
}

// TestPrometheusDownBlocksScaleDown: with Prometheus stopped, rota keeps passing but powers no
// server off (no data is never idle); once Prometheus is back, scaling down resumes.
func TestPrometheusDownBlocksScaleDown(t *testing.T) {
	t.Parallel()
	l := startLab(t, "all", false)
	if err := l.Stop("prometheus"); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	// Long enough for every server to have been idle for the whole window, past min_on.
	quiet := time.Duration(l.Config.Policy.Idle.Window+l.Config.Policy.Node.MinOn) + 3*time.Duration(l.Config.Policy.EvaluationInterval)
	testutil.Eventually(t, quiet+time.Minute, "rota passing blind for "+quiet.String(), func() error {
		st, err := status(t, l)
		if err != nil {
			return err
		}
		if st.Telemetry {
			return fmt.Errorf("rota still has telemetry")
		}
		if st.LastPass.Before(stopped.Add(quiet)) {
			return fmt.Errorf("last pass %s", st.LastPass)
		}
		return nil
	})
	changes, err := lab.ReadPowerLog(l.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		if !c.On {
			t.Errorf("%s powered off at %s while Prometheus was down", c.Node, c.At)
		}
	}
	if err := l.Restart("prometheus"); err != nil {
		t.Fatal(err)
	}
	waitFloor(t, l, 4*time.Minute)
}

// setFaults replaces a Redfish server's faults through the emulator's control endpoint.
func setFaults(t *testing.T, l *lab.Lab, server, faults string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, l.RedfishControl()+"/servers/"+server+"/faults", strings.NewReader(faults))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("setting faults of %s: %s", server, resp.Status)
	}
}

// firingAlerts returns the names of the alerts Alertmanager holds active.
func firingAlerts(l *lab.Lab) (map[string]bool, error) {
	resp, err := http.Get(l.AlertmanagerURL() + "/api/v2/alerts?active=true")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var alerts []struct {
		Labels map[string]string `json:"labels"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&alerts); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, a := range alerts {
		out[a.Labels["alertname"]] = true
	}
	return out, nil
}

// TestBMCFaultsFailOver: gpu01's Redfish BMC accepts power-on and drops it; cpu02's IPMI BMC
// reads its state but answers every power command with an error. With work enough for every
// server, rota tries both, retries, marks them Failed, the alert reaches Alertmanager, and the
// other servers of each tier run the jobs.
func TestBMCFaultsFailOver(t *testing.T) {
	t.Parallel()
	l := startLab(t, "floor", false)
	setFaults(t, l, "gpu01", `{"drop_power_on": -1}`)
	if err := l.SetIPMIFault("cpu02", true); err != nil {
		t.Fatal(err)
	}
	// Two GPUs and four CPUs per GPU server, four CPUs per CPU server: these need them all.
	submit(t, l, append(repeat(6, lab.Heavy(30*time.Second)), repeat(8, lab.Light(30*time.Second))...)...)

	failed := map[string]bool{}
	testutil.Eventually(t, 4*time.Minute, "gpu01 and cpu02 failed, the alert firing", func() error {
		st, err := status(t, l)
		if err != nil {
			return err
		}
		for _, n := range st.Nodes {
			if n.State == "failed" {
				failed[n.Name] = true
			}
		}
		if !failed["gpu01"] || !failed["cpu02"] {
			return fmt.Errorf("failed so far: %v", failed)
		}
		alerts, err := firingAlerts(l)
		if err != nil {
			return err
		}
		if !alerts["RotaServerFailed"] && !alerts["RotaPowerActionsFailing"] {
			return fmt.Errorf("alerts firing: %v", alerts)
		}
		return nil
	})
	waitJobsFinished(t, l, 14, 5*time.Minute)
	on := poweredOnSince(t, l, time.Time{})
	if on["gpu01"] || on["cpu02"] || !(on["gpu02"] || on["gpu03"]) || !(on["cpu03"] || on["cpu04"]) {
		t.Errorf("powered on: %v; want gpu01 and cpu02 never on, others of their tiers serving", on)
	}
}
