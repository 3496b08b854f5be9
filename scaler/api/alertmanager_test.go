package api_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/testutil"
)

// TestRealAlertmanagerDelivers runs a real Alertmanager whose receiver is rota's webhook, with
// the token from a credentials_file: an alert posted to Alertmanager reaches the server and
// nudges the loop.
func TestRealAlertmanagerDelivers(t *testing.T) {
	am := testutil.Tool(t, "alertmanager")
	h := newHarness(t, nil)
	ts := httptest.NewServer(h.srv)
	defer ts.Close()

	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(webhookToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "alertmanager.yml")
	err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
route:
  receiver: rota
  group_by: [alertname, rota_signal]
  group_wait: 0s
  group_interval: 1s
receivers:
  - name: rota
    webhook_configs:
      - url: %s/api/v1/alerts
        send_resolved: true
        http_config:
          authorization:
            credentials_file: %s
`, ts.URL, tokenFile)), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	port := testutil.FreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	testutil.Start(t, am, "--config.file="+cfg, fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
		"--storage.path="+filepath.Join(dir, "data"), "--cluster.listen-address=")
	testutil.WaitHTTP(t, base+"/-/ready", 30*time.Second)

	alert := []byte(`[{"labels": {"alertname": "RotaServerIdle", "rota_signal": "idle", "node": "cpu02", "pool": "cpu-epyc"},
	                   "annotations": {"summary": "cpu02 is idle"}}]`)
	resp, err := http.Post(base+"/api/v2/alerts", "application/json", bytes.NewReader(alert))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("posting the alert: %d", resp.StatusCode)
	}
	testutil.Eventually(t, 30*time.Second, "a nudge from Alertmanager", func() error {
		for _, n := range h.backend.Nudges() {
			if n == "alertmanager: RotaServerIdle" {
				return nil
			}
		}
		return errors.New("no nudge yet")
	})
	metrics := h.do(http.MethodGet, "/metrics", "", nil).Body.String()
	if strings.Contains(metrics, `rota_webhook_requests_total{result="accepted"} 0`) {
		t.Errorf("no accepted webhook counted:\n%s", metrics)
	}
}
