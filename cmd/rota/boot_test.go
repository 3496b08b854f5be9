package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/bmc/redfishemu"
	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/fleet"
)

// fakePrometheus answers every instant query with an empty vector, except the readiness query
// for n1 once its exporter is up: then a sample taken now.
func fakePrometheus(t *testing.T, exporterUp *atomic.Bool) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		result := ""
		if exporterUp.Load() && strings.Contains(r.Form.Get("query"), `up{node="n1"} == 1`) {
			now := time.Now().Unix()
			result = fmt.Sprintf(`{"metric":{"node":"n1","pool":"cpu"},"value":[%d,"%d"]}`, now, now)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, result)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestDaemonWaitsForTheExporterAfterBoot: rota powers a server on for its pool's floor through
// a Redfish BMC, and counts it On only once Prometheus says the server's exporter serves.
func TestDaemonWaitsForTheExporterAfterBoot(t *testing.T) {
	log := logrus.New()
	log.SetOutput(&bytes.Buffer{})
	emu, err := redfishemu.Start(redfishemu.Config{Servers: []redfishemu.ServerConfig{
		{Name: "n1", Listen: "127.0.0.1:0", Username: "rota", Password: "bmc-pw", Power: "Off"},
	}}, clock.Real{}, logrus.NewEntry(log))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emu.Close)
	host, port, _ := strings.Cut(emu.Server("n1").Addr(), ":")
	var exporterUp atomic.Bool
	dir := t.TempDir()
	apiToken := filepath.Join(dir, "api.token")
	if err := os.WriteFile(apiToken, []byte("api-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	listen := testutil.FreePort(t)
	cfg := filepath.Join(dir, "rota.yml")
	err = os.WriteFile(cfg, []byte(fmt.Sprintf(`
prometheus: {url: %q, timeout: 2s}
server:
  listen_address: 127.0.0.1:%d
  api_token_file: %s
  webhook_auth_disabled: true
store: {path: %s}
jobs: {adapter: none}
policy: {evaluation_interval: 1s, node: {min_off: 1s}}
bmc: {min_command_interval: 0s}
pools:
  - name: cpu
    profile: {cpu_cores: 8}
    cost: {hourly: 1.5, currency: EUR}
    min: 1
    nodes:
      - name: n1
        bmc: {protocol: redfish, host: %s, port: %s, username: rota, password_env: ROTA_TEST_BMC_PASSWORD, insecure_skip_verify: true}
`, fakePrometheus(t, &exporterUp), listen, apiToken, filepath.Join(dir, "rota.db"), host, port)), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(rotaBinary, "--config.file", cfg, "--log.level", "debug")
	cmd.Env = append(os.Environ(), "ROTA_TEST_BMC_PASSWORD=bmc-pw")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("rota's log:\n%s", logs.String())
		}
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", listen)
	testutil.WaitHTTP(t, base+"/-/healthy", 30*time.Second)
	c, err := api.NewClient(base, api.NewToken("api-token"), nil)
	if err != nil {
		t.Fatal(err)
	}
	status := func() api.NodeStatus {
		st, err := c.Status(t.Context())
		if err != nil || len(st.Nodes) != 1 {
			return api.NodeStatus{}
		}
		return st.Nodes[0]
	}
	waitFor := func(want fleet.State) {
		t.Helper()
		testutil.Eventually(t, 60*time.Second, "n1 "+string(want), func() error {
			if n := status(); n.State != want {
				return fmt.Errorf("n1 is %q (%s: %s)", n.State, n.Reason, n.Detail)
			}
			return nil
		})
	}

	waitFor(fleet.StateBooting)
	if p := emu.Server("n1").Power(); p != "On" {
		t.Fatalf("the BMC says %s after the power-on", p)
	}
	// Passes go by (one a second); the job manager (none) has nothing against it, but the
	// exporter has not answered: still booting.
	time.Sleep(3 * time.Second)
	if n := status(); n.State != fleet.StateBooting {
		t.Fatalf("n1 is %s (%s: %s) before its exporter answered, want booting", n.State, n.Reason, n.Detail)
	}
	exporterUp.Store(true)
	waitFor(fleet.StateOn)
}
