package alerts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/config"
)

// The two values of deploy/alertmanager/alertmanager.yml a user (and this test) fills.
const (
	amWebhookURL = "http://127.0.0.1:10091/api/v1/alerts"
	amTokenFile  = "/etc/alertmanager/rota-webhook.token"
)

// fillAlertmanagerConfig returns the deploy config with the webhook URL and token file replaced,
// failing if either is not there exactly once.
func fillAlertmanagerConfig(t *testing.T, url, tokenFile string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "deploy", "alertmanager", "alertmanager.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "http://" + config.DefaultListenAddress + "/api/v1/alerts"; amWebhookURL != want {
		t.Fatalf("alertmanager.yml's webhook %s is not rota's default listener (%s)", amWebhookURL, want)
	}
	s := string(b)
	for old, repl := range map[string]string{amWebhookURL: url, amTokenFile: tokenFile} {
		if n := strings.Count(s, old); n != 1 {
			t.Fatalf("alertmanager.yml holds %q %d times, want once", old, n)
		}
		s = strings.Replace(s, old, repl, 1)
	}
	return []byte(s)
}

type delivery struct {
	auth string
	body []byte
}

// TestAlertmanagerDeliversToRota runs a real Alertmanager with the deploy config, posts rota's
// alerts to it, and checks what reaches the webhook: the bearer token, version 4, and the labels
// rota acts on.
func TestAlertmanagerDeliversToRota(t *testing.T) {
	bin := testutil.Tool(t, "alertmanager")
	dir := t.TempDir()
	const token = "test-webhook-token"
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan delivery, 16)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- delivery{auth: r.Header.Get("Authorization"), body: body}
	}))
	t.Cleanup(receiver.Close)
	cfg := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(cfg, fillAlertmanagerConfig(t, receiver.URL+"/api/v1/alerts", tokenFile), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	testutil.Start(t, bin, "--config.file="+cfg, "--web.listen-address="+addr,
		"--storage.path="+filepath.Join(dir, "data"), "--cluster.listen-address=")
	url := "http://" + addr
	testutil.WaitHTTP(t, url+"/-/ready", 60*time.Second)

	postAlerts(t, url, []map[string]any{
		alertBody(map[string]string{"alertname": AlertIdle, SignalLabel: "idle", "severity": "info", "node": "gpu01", "pool": "gpu-h100"}),
		alertBody(map[string]string{"alertname": AlertIdle, SignalLabel: "idle", "severity": "info", "node": "gpu02", "pool": "gpu-h100"}),
		alertBody(map[string]string{"alertname": AlertBacklog, SignalLabel: "backlog", "severity": "info", "pool": "cpu-epyc", "class": "light"}),
		// Not rota's: never reaches the webhook.
		alertBody(map[string]string{"alertname": "DiskFull", "severity": "warning", "node": "gpu01"}),
	})

	payloads := map[string]map[string]any{}
	deadline := time.After(60 * time.Second)
	for len(payloads) < 2 {
		select {
		case d := <-got:
			if d.auth != "Bearer "+token {
				t.Fatalf("Authorization = %q, want the bearer token from the credentials file", d.auth)
			}
			var p map[string]any
			if err := json.Unmarshal(d.body, &p); err != nil {
				t.Fatalf("webhook body is not JSON: %v\n%s", err, d.body)
			}
			payloads[p["groupLabels"].(map[string]any)["alertname"].(string)] = p
		case <-deadline:
			t.Fatalf("webhook got %d of 2 notifications in time", len(payloads))
		}
	}
	checkPayload(t, payloads[AlertIdle], "node", "gpu01", "gpu02")
	checkPayload(t, payloads[AlertBacklog], "class", "light")
	for name, p := range map[string]map[string]any{"alertmanager-v4.json": payloads[AlertIdle], "alertmanager-v4-backlog.json": payloads[AlertBacklog]} {
		checkFixture(t, filepath.Join(testutil.RepoRoot(t), "scaler", "webhook", "testdata", name), p)
	}
}

func alertBody(labels map[string]string) map[string]any {
	return map[string]any{
		"labels":       labels,
		"annotations":  map[string]string{"summary": "test alert"},
		"generatorURL": "http://prometheus.example.internal:9090/graph",
	}
}

func postAlerts(t *testing.T, url string, alerts []map[string]any) {
	t.Helper()
	b, _ := json.Marshal(alerts)
	resp, err := http.Post(url+"/api/v2/alerts", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST /api/v2/alerts: %s: %s", resp.Status, body)
	}
}

// checkPayload checks what rota reads: version, receiver, status, and per alert its name, pool
// and the label key with the values wanted (one alert each).
func checkPayload(t *testing.T, p map[string]any, key string, values ...string) {
	t.Helper()
	if p["version"] != "4" || p["receiver"] != "rota" || p["status"] != "firing" {
		t.Errorf("payload version %v, receiver %v, status %v; want 4, rota, firing", p["version"], p["receiver"], p["status"])
	}
	var seen []string
	for _, a := range p["alerts"].([]any) {
		a := a.(map[string]any)
		l := a["labels"].(map[string]any)
		if a["status"] != "firing" || l["alertname"] == nil || l["pool"] == nil || l[SignalLabel] == nil {
			t.Errorf("alert lacks status, alertname, pool or %s: %v", SignalLabel, a)
		}
		if v, ok := l[key].(string); ok {
			seen = append(seen, v)
		}
	}
	sort.Strings(seen)
	if strings.Join(seen, ",") != strings.Join(values, ",") {
		t.Errorf("alerts' %s labels = %v, want %v", key, seen, values)
	}
}

// checkFixture keeps a captured payload as a fixture for the webhook receiver's tests: -update
// writes it; otherwise the fixture must have the same fields as what Alertmanager sends now.
func checkFixture(t *testing.T, path string, p map[string]any) {
	t.Helper()
	if *update {
		b, _ := json.MarshalIndent(p, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (create it with: go test ./alerts -run TestAlertmanagerDeliversToRota -update)", err)
	}
	var fixture map[string]any
	if err := json.Unmarshal(b, &fixture); err != nil {
		t.Fatal(err)
	}
	if want, got := strings.Join(keys(fixture, ""), " "), strings.Join(keys(p, ""), " "); want != got {
		t.Errorf("%s has fields\n  %s\nAlertmanager now sends\n  %s\n(update with -update)", path, want, got)
	}
}

// keys lists the paths of an object's fields, sorted; labels and annotations are left out
// (their keys are data).
func keys(v any, prefix string) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, sub := range v {
			out = append(out, prefix+k)
			if !strings.HasSuffix(k, "Labels") && !strings.HasSuffix(k, "Annotations") && k != "labels" && k != "annotations" {
				out = append(out, keys(sub, prefix+k+".")...)
			}
		}
	case []any:
		for _, sub := range v {
			out = append(out, keys(sub, prefix+"[].")...)
		}
	}
	sort.Strings(out)
	return dedupe(out)
}

func dedupe(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
