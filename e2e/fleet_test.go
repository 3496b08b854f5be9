package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/lab"
)

// powerControl is a bmc.Controller for every server of the lab: rota's own power path.
func powerControl(t *testing.T, l *lab.Lab) *bmc.Controller {
	t.Helper()
	endpoints := map[string]bmc.Endpoint{}
	for _, p := range l.Config.Pools {
		for _, n := range p.Nodes {
			endpoints[n.Name] = n.BMC
		}
	}
	logger := logrus.New()
	logger.SetOutput(io.Discard)
	c, err := bmc.NewController(endpoints, bmc.Options{Logger: logger.WithField("component", "bmc"), Clock: clock.Real{},
		PollInterval: 200 * time.Millisecond, GracePeriod: time.Second, ConfirmTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// scrape returns the exporter's exposition.
func scrape(addr string) (string, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestFleetFollowsBMCPower: powering a server on through its BMC (IPMI for a CPU server,
// Redfish for a GPU server) starts its slurmd and exporter; the exporter's readings follow the
// job Slurm runs there; powering it off stops both.
func TestFleetFollowsBMCPower(t *testing.T) {
	t.Parallel()
	l := startLab(t, "none", true)
	pc := powerControl(t, l)
	ctx := context.Background()
	servers := []string{"cpu02", "gpu01"}
	exporter := map[string]string{}
	for _, name := range servers {
		ref, _ := l.Config.Node(name)
		exporter[name] = ref.Node.Exporter
		if err := pc.On(ctx, name); err != nil {
			t.Fatalf("powering %s on: %v", name, err)
		}
	}
	for _, name := range servers {
		testutil.Eventually(t, 60*time.Second, name+" idle in Slurm", func() error {
			st, err := slurmNodes(t, l)
			if err != nil {
				return err
			}
			if st[name] != "idle" {
				return fmt.Errorf("%s is %q", name, st[name])
			}
			return nil
		})
		testutil.WaitHTTP(t, "http://"+exporter[name]+"/metrics", 30*time.Second)
	}

	submit(t, l, lab.Heavy(time.Minute))
	testutil.Eventually(t, 30*time.Second, "gpu01's exporter reports its job's GPU", func() error {
		m, err := scrape(exporter["gpu01"])
		if err != nil {
			return err
		}
		if !strings.Contains(m, `rota_gpu_utilization_ratio{gpu="0",uuid="GPU-00000000-0000-0000-0000-000000000000"} 0.9`) {
			return fmt.Errorf("gpu 0 not busy")
		}
		return nil
	})
	if _, err := lab.SlurmCommand(ctx, l.Dir, "scancel", "--quiet", "--user=root"); err != nil {
		t.Fatal(err)
	}

	for _, name := range servers {
		if err := pc.Off(ctx, name, false); err != nil {
			t.Fatalf("powering %s off: %v", name, err)
		}
	}
	for _, name := range servers {
		testutil.Eventually(t, 30*time.Second, name+"'s slurmd and exporter stopped", func() error {
			if l.Running("slurmd-"+name) || l.Running("exporter-"+name) {
				return fmt.Errorf("still running")
			}
			if _, err := scrape(exporter[name]); err == nil {
				return fmt.Errorf("exporter still answers")
			}
			return nil
		})
		if st, err := pc.State(ctx, name); err != nil || st != bmc.StateOff {
			t.Errorf("%s: BMC says %v (%v), want off", name, st, err)
		}
	}
}
