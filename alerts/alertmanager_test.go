package alerts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/config"
)

// The three values of deploy/alertmanager/alertmanager.yml a user (and this test) fills.
const (
	amWebhookURL   = "http://127.0.0.1:10091/api/v1/alerts"
	amTokenFile    = "/etc/alertmanager/rota-webhook.token"
	amOperatorsURL = "FILL-IN-the-operators-webhook-url"
)

// fillAlertmanagerConfig returns the deploy config with rota's webhook URL, its token file and
// the operators' URL replaced, failing if any is not there exactly once.
func fillAlertmanagerConfig(t *testing.T, rotaURL, tokenFile, operatorsURL string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "deploy", "alertmanager", "alertmanager.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "http://" + config.DefaultListenAddress + "/api/v1/alerts"; amWebhookURL != want {
		t.Fatalf("alertmanager.yml's webhook %s is not rota's default listener (%s)", amWebhookURL, want)
	}
	s := string(b)
	for old, repl := range map[string]string{amWebhookURL: rotaURL, amTokenFile: tokenFile, amOperatorsURL: operatorsURL} {
		if n := strings.Count(s, old); n != 1 {
			t.Fatalf("alertmanager.yml holds %q %d times, want once", old, n)
		}
		s = strings.Replace(s, old, repl, 1)
	}
	return []byte(s)
}

// notification is one webhook POST, decoded.
type notification struct {
	auth    string
	payload map[string]any
	size    int // the body's bytes
}

func (n notification) alertname() string {
	return n.payload["groupLabels"].(map[string]any)["alertname"].(string)
}

// sink is a webhook receiver that hands every notification to a channel.
func sink(t *testing.T) (string, chan notification) {
	t.Helper()
	got := make(chan notification, 32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p map[string]any
		if err := json.Unmarshal(body, &p); err != nil {
			t.Errorf("webhook body is not JSON: %v\n%s", err, body)
			return
		}
		got <- notification{auth: r.Header.Get("Authorization"), payload: p, size: len(body)}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/api/v1/alerts", got
}

// startAlertmanager runs a real Alertmanager with the filled deploy config; the rota and
// operators receivers are sinks. It returns Alertmanager's URL and both sinks.
func startAlertmanager(t *testing.T, token string) (url string, rota, operators chan notification) {
	t.Helper()
	bin := testutil.Tool(t, "alertmanager")
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rotaURL, rota := sink(t)
	operatorsURL, operators := sink(t)
	cfg := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(cfg, fillAlertmanagerConfig(t, rotaURL, tokenFile, operatorsURL), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	testutil.Start(t, bin, "--config.file="+cfg, "--web.listen-address="+addr,
		"--storage.path="+filepath.Join(dir, "data"), "--cluster.listen-address=")
	url = "http://" + addr
	testutil.WaitHTTP(t, url+"/-/ready", 60*time.Second)
	return url, rota, operators
}

// await collects notifications from got until it holds one for each alertname wanted.
func await(t *testing.T, got chan notification, who string, want ...string) map[string]notification {
	t.Helper()
	seen := map[string]notification{}
	deadline := time.After(90 * time.Second)
	for len(seen) < len(want) {
		select {
		case n := <-got:
			if !slices.Contains(want, n.alertname()) {
				t.Errorf("%s got %s, want only %v", who, n.alertname(), want)
				continue
			}
			seen[n.alertname()] = n
		case <-deadline:
			t.Fatalf("%s got %d of %v in time", who, len(seen), want)
		}
	}
	return seen
}

// TestAlertmanagerDeliversToRota runs a real Alertmanager with the deploy config, posts rota's
// alerts to it, and checks what reaches the webhook: the bearer token, version 4, and the labels
// rota acts on; warnings, rota's and others', reach the operators too.
func TestAlertmanagerDeliversToRota(t *testing.T) {
	const token = "test-webhook-token"
	url, rota, operators := startAlertmanager(t, token)
	postAlerts(t, url, []map[string]any{
		alertBody(map[string]string{"alertname": AlertIdle, SignalLabel: "idle", "severity": "info", "node": "gpu01", "pool": "gpu-h100"}),
		alertBody(map[string]string{"alertname": AlertIdle, SignalLabel: "idle", "severity": "info", "node": "gpu02", "pool": "gpu-h100"}),
		alertBody(map[string]string{"alertname": AlertBacklog, SignalLabel: "backlog", "severity": "info", "pool": "cpu-epyc", "class": "light"}),
		alertBody(map[string]string{"alertname": AlertCollectorFailing, SignalLabel: "telemetry", "severity": "warning", "node": "gpu03", "pool": "gpu-h100"}),
		// Not rota's: never reaches the webhook, reaches the people.
		alertBody(map[string]string{"alertname": "DiskFull", "severity": "warning", "node": "gpu01"}),
	})

	payloads := await(t, rota, "rota's webhook", AlertIdle, AlertBacklog, AlertCollectorFailing)
	for _, n := range payloads {
		if n.auth != "Bearer "+token {
			t.Fatalf("Authorization = %q, want the bearer token from the credentials file", n.auth)
		}
	}
	checkPayload(t, payloads[AlertIdle].payload, "node", "gpu01", "gpu02")
	checkPayload(t, payloads[AlertBacklog].payload, "class", "light")
	for name, p := range map[string]map[string]any{"alertmanager-v4.json": payloads[AlertIdle].payload, "alertmanager-v4-backlog.json": payloads[AlertBacklog].payload} {
		checkFixture(t, filepath.Join(testutil.RepoRoot(t), "scaler", "api", "testdata", "alertmanager", name), p)
	}
	for name, n := range await(t, operators, "the operators", AlertCollectorFailing, "DiskFull") {
		if n.auth != "" || n.payload["receiver"] != "operators" {
			t.Errorf("%s reached the operators as %v with Authorization %q", name, n.payload["receiver"], n.auth)
		}
	}
}

// TestAlertmanagerNotificationFitsRotasLimit: a pool of 300 idle servers (a weekend in a fleet
// of the 10,000 rota is built for) is one group, and each alert carries Prometheus's
// generatorURL, the idle alert's whole expression; the notification rota's webhook gets must fit
// its default body limit (server.webhook_max_body_bytes), which refuses a larger one with 413,
// an error Alertmanager does not retry, at every group interval.
func TestAlertmanagerNotificationFitsRotasLimit(t *testing.T) {
	cfg := config.Default()
	var idle Rule
	for _, r := range Rules(cfg).Groups[0].Rules {
		if r.Alert == AlertIdle {
			idle = r
		}
	}
	generator := "http://prometheus.example.internal:9090/graph?g0.expr=" + neturl.QueryEscape(idle.Expr) + "&g0.tab=1"
	var alerts []map[string]any
	for i := range 300 {
		labels := map[string]string{"alertname": AlertIdle, SignalLabel: "idle", "severity": "info", "node": fmt.Sprintf("cpu%04d", i), "pool": "cpu-epyc"}
		alerts = append(alerts, map[string]any{"labels": labels, "annotations": idle.Annotations, "generatorURL": generator})
	}
	url, rota, _ := startAlertmanager(t, "test-webhook-token")
	postAlerts(t, url, alerts)
	n := await(t, rota, "rota's webhook", AlertIdle)[AlertIdle]
	if limit := cfg.Server.WebhookMaxBodyBytes; int64(n.size) > limit {
		t.Fatalf("a notification of %d alerts is %d bytes, over rota's default limit of %d: refused with 413", len(n.payload["alerts"].([]any)), n.size, limit)
	}
}

// TestAlertmanagerWhileRotaIsDown: with RotaScalerDown firing, the other scaler alerts and the
// nudges meant for rota are inhibited, the server alerts are not; RotaScalerDown reaches the
// operators and never rota's webhook.
func TestAlertmanagerWhileRotaIsDown(t *testing.T) {
	url, rota, operators := startAlertmanager(t, "test-webhook-token")
	scaler := func(name string) map[string]any {
		return alertBody(map[string]string{"alertname": name, SignalLabel: "scaler", "severity": "critical"})
	}
	postAlerts(t, url, []map[string]any{
		scaler(AlertScalerDown), scaler(AlertNotReconciling),
		alertBody(map[string]string{"alertname": AlertIdle, SignalLabel: "idle", "severity": "info", "node": "gpu01", "pool": "gpu-h100"}),
		alertBody(map[string]string{"alertname": AlertBacklog, SignalLabel: "backlog", "severity": "info", "pool": "cpu-epyc", "class": "light"}),
		alertBody(map[string]string{"alertname": AlertCollectorFailing, SignalLabel: "telemetry", "severity": "warning", "node": "gpu03", "pool": "gpu-h100"}),
	})
	want := map[string]string{
		AlertScalerDown: "active", AlertNotReconciling: "suppressed", AlertIdle: "suppressed",
		AlertBacklog: "suppressed", AlertCollectorFailing: "active",
	}
	testutil.Eventually(t, 30*time.Second, "Alertmanager inhibits what rota being down causes", func() error {
		got := alertStates(t, url)
		for name, state := range want {
			if got[name] != state {
				return fmt.Errorf("%s is %q, want %q (all: %v)", name, got[name], state, got)
			}
		}
		return nil
	})

	await(t, operators, "the operators", AlertScalerDown, AlertCollectorFailing)
	// rota's route waits 10s before its first notification, the operators' 30s: by now rota's
	// webhook has had whatever it was to get.
	for len(rota) > 0 {
		if n := <-rota; n.alertname() != AlertCollectorFailing {
			t.Errorf("rota's webhook got %s while rota is down", n.alertname())
		}
	}
}

// TestAlertmanagerWhileOneFleetsRotasAreDown: two fleets' rotas in one Alertmanager (their
// targets labelled fleet, which the rules keep on every alert), every rota of site-a down:
// RotaScalerDown{fleet="site-a"} holds back site-a's scaler alerts and nudges and not
// site-b's, which are no less true; site-b's nudge reaches rota's webhook in a group of its
// own fleet (grouped by alertname, fleet and pool), apart from site-a's of the same pool.
func TestAlertmanagerWhileOneFleetsRotasAreDown(t *testing.T) {
	url, rota, _ := startAlertmanager(t, "test-webhook-token")
	scaler := func(name, fleet string) map[string]any {
		return alertBody(map[string]string{"alertname": name, SignalLabel: "scaler", "severity": "critical", FleetLabel: fleet})
	}
	idle := func(fleet string) map[string]any {
		return alertBody(map[string]string{"alertname": AlertIdle, SignalLabel: "idle", "severity": "info", "node": "gpu01", "pool": "gpu-h100", FleetLabel: fleet})
	}
	postAlerts(t, url, []map[string]any{
		scaler(AlertScalerDown, "site-a"), scaler(AlertNotReconciling, "site-a"),
		scaler(AlertNotReconciling, "site-b"), scaler(AlertNoLeader, "site-b"),
		idle("site-a"), idle("site-b"),
	})
	want := map[string]string{
		AlertScalerDown + "/site-a": "active", AlertNotReconciling + "/site-a": "suppressed",
		AlertNotReconciling + "/site-b": "active", AlertNoLeader + "/site-b": "active",
		AlertIdle + "/site-a": "suppressed", AlertIdle + "/site-b": "active",
	}
	testutil.Eventually(t, 30*time.Second, "Alertmanager inhibits what one fleet's rotas being down causes", func() error {
		got := alertStates(t, url)
		for name, state := range want {
			if got[name] != state {
				return fmt.Errorf("%s is %q, want %q (all: %v)", name, got[name], state, got)
			}
		}
		return nil
	})
	n := await(t, rota, "rota's webhook", AlertIdle)[AlertIdle]
	if g := n.payload["groupLabels"].(map[string]any); g[FleetLabel] != "site-b" || g["pool"] != "gpu-h100" {
		t.Errorf("rota's webhook got the nudge grouped by %v, want fleet site-b and pool gpu-h100", g)
	}
	checkPayload(t, n.payload, FleetLabel, "site-b")
}

// alertStates returns each alert's state (active, suppressed, unprocessed) by alertname, and
// fleet after a slash where the alert carries one, from Alertmanager's API.
func alertStates(t *testing.T, url string) map[string]string {
	t.Helper()
	resp, err := http.Get(url + "/api/v2/alerts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var alerts []struct {
		Labels map[string]string `json:"labels"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&alerts); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, a := range alerts {
		key := a.Labels["alertname"]
		if f := a.Labels[FleetLabel]; f != "" {
			key += "/" + f
		}
		out[key] = a.Status.State
	}
	return out
}

// TestAlertmanagerConfigAsShipped: amtool refuses the deploy config until the operators'
// receiver is filled in (no alert is dropped unseen by a placeholder), and accepts it filled.
func TestAlertmanagerConfigAsShipped(t *testing.T) {
	amtool := testutil.Tool(t, "amtool")
	shipped := filepath.Join(testutil.RepoRoot(t), "deploy", "alertmanager", "alertmanager.yml")
	out, err := exec.Command(amtool, "check-config", shipped).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `unsupported scheme "" for URL`) {
		t.Errorf("amtool check-config accepts the shipped config, or refuses it for another reason: %v\n%s", err, out)
	}
	filled := filepath.Join(t.TempDir(), "alertmanager.yml")
	if err := os.WriteFile(filled, fillAlertmanagerConfig(t, amWebhookURL, amTokenFile, "https://alerts.example.internal/hook"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(amtool, "check-config", filled).CombinedOutput(); err != nil {
		t.Errorf("amtool check-config refuses the filled config: %v\n%s", err, out)
	}
}

// TestAlertmanagerRoutes: where each kind of alert goes, by amtool's own routing of the filled
// config: rota's nudges to rota, its server warnings to rota and the operators, its own health
// to the operators only, everything else to the operators.
func TestAlertmanagerRoutes(t *testing.T) {
	amtool := testutil.Tool(t, "amtool")
	cfg := filepath.Join(t.TempDir(), "alertmanager.yml")
	if err := os.WriteFile(cfg, fillAlertmanagerConfig(t, amWebhookURL, amTokenFile, "https://alerts.example.internal/hook"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		labels    []string
		receivers string
	}{
		{[]string{"alertname=" + AlertIdle, SignalLabel + "=idle", "severity=info", "pool=gpu"}, "rota"},
		{[]string{"alertname=" + AlertBacklog, SignalLabel + "=backlog", "severity=info", "pool=gpu"}, "rota"},
		{[]string{"alertname=" + AlertTelemetryMissing, SignalLabel + "=telemetry", "severity=warning", "pool=gpu"}, "rota,operators"},
		{[]string{"alertname=" + AlertPowerActionsFails, SignalLabel + "=power", "severity=critical", "pool=gpu"}, "rota,operators"},
		// The books' alerts are for people, whatever their severity: rota can do nothing of them.
		{[]string{"alertname=" + AlertCarbonUnknown, SignalLabel + "=cost", "severity=info", "region=eu-west"}, "rota,operators"},
		{[]string{"alertname=" + AlertScalerDown, SignalLabel + "=scaler", "severity=critical"}, "operators"},
		{[]string{"alertname=" + AlertScalerBlind, SignalLabel + "=scaler", "severity=warning"}, "operators"},
		// A fleet labelled on one side only: rota can do nothing of Prometheus' labels.
		{[]string{"alertname=" + AlertFleetLabel, SignalLabel + "=scaler", "severity=warning", "fleet=site-a", "pool=gpu"}, "operators"},
		{[]string{"alertname=DiskFull", "severity=warning"}, "operators"},
		{[]string{"alertname=Watchdog", "severity=none"}, "operators"},
	} {
		args := append([]string{"config", "routes", "test", "--config.file=" + cfg, "--verify.receivers=" + tt.receivers}, tt.labels...)
		if out, err := exec.Command(amtool, args...).CombinedOutput(); err != nil {
			t.Errorf("%v: want receivers %s: %v\n%s", tt.labels, tt.receivers, err, out)
		}
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
