package api_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/alerts"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/config"
)

// fixtures are the webhook bodies captured from a real Alertmanager (testdata/alertmanager).
func fixtures(t testing.TB) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "alertmanager", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no webhook fixtures: %v", err)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = b
	}
	return out
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, ok := fixtures(t)[name]
	if !ok {
		t.Fatalf("no fixture %s", name)
	}
	return b
}

func TestWebhookAcceptsRealAlertmanagerPayloads(t *testing.T) {
	for name, body := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, nil)
			rec := h.do(http.MethodPost, "/api/v1/alerts", webhookToken, body)
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			msg, err := api.ParseWebhook(body)
			if err != nil {
				t.Fatal(err)
			}
			wantNudge := len(msg.Hints()) > 0
			if got := len(h.backend.Nudges()) == 1; got != wantNudge {
				t.Errorf("nudged %v, want %v (nudges %q)", got, wantNudge, h.backend.Nudges())
			}
		})
	}
}

func TestWebhookFiringNudgesResolvedDoesNot(t *testing.T) {
	h := newHarness(t, nil)
	h.do(http.MethodPost, "/api/v1/alerts", webhookToken, fixture(t, "alertmanager-v4-resolved.json"))
	if n := h.backend.Nudges(); len(n) != 0 {
		t.Fatalf("resolved alerts nudged: %q", n)
	}
	rec := h.do(http.MethodPost, "/api/v1/alerts", webhookToken, fixture(t, "alertmanager-v4-firing.json"))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"nudged": true`) {
		t.Fatalf("firing: %d %s", rec.Code, rec.Body)
	}
	if n := h.backend.Nudges(); len(n) != 1 || n[0] != "alertmanager: RotaQueueBacklog" {
		t.Fatalf("nudges %q, want one for RotaQueueBacklog", n)
	}
}

func TestWebhookDuplicatesAreHarmless(t *testing.T) {
	h := newHarness(t, nil)
	body := fixture(t, "alertmanager-v4-firing.json")
	for i := range 3 {
		if rec := h.do(http.MethodPost, "/api/v1/alerts", webhookToken, body); rec.Code != http.StatusOK {
			t.Fatalf("delivery %d: status %d", i, rec.Code)
		}
	}
	// Each delivery only asks for a pass (the loop merges pending nudges); nothing else changed.
	if n := len(h.backend.Nudges()); n != 3 {
		t.Errorf("%d nudges, want 3", n)
	}
	if paused, _ := h.backend.Paused(); paused {
		t.Error("a webhook changed the pause")
	}
}

func TestWebhookRejects(t *testing.T) {
	firing := fixture(t, "alertmanager-v4-firing.json")
	big := append(bytes.Repeat([]byte(" "), 64<<10), firing...)
	replace := func(old, new string) []byte {
		if !bytes.Contains(firing, []byte(old)) {
			t.Fatalf("the fixture lacks %s", old)
		}
		return bytes.Replace(firing, []byte(old), []byte(new), 1)
	}
	tests := []struct {
		name    string
		header  string
		body    []byte
		chunked bool   // send without Content-Length
		enc     string // Content-Encoding
		want    int
		result  string
	}{
		{name: "no token", body: firing, want: http.StatusUnauthorized, result: "unauthorized"},
		{name: "basic auth", header: "Basic d2g6c2VjcmV0", body: firing, want: http.StatusUnauthorized, result: "unauthorized"},
		{name: "wrong token", header: "Bearer nope", body: firing, want: http.StatusForbidden, result: "forbidden"},
		{name: "api token", header: "Bearer " + apiToken, body: firing, want: http.StatusForbidden, result: "forbidden"},
		{name: "oversize with length", header: "Bearer " + webhookToken, body: big, want: http.StatusRequestEntityTooLarge, result: "too_large"},
		{name: "oversize chunked", header: "Bearer " + webhookToken, body: big, chunked: true, want: http.StatusRequestEntityTooLarge, result: "too_large"},
		{name: "empty body", header: "Bearer " + webhookToken, want: http.StatusBadRequest, result: "malformed"},
		// Never decompressed (so no bomb expands): gzip's bytes read as JSON were a 400
		// "invalid character '\x1f'".
		{name: "gzip", header: "Bearer " + webhookToken, body: gzipped(t, firing), enc: "gzip", want: http.StatusUnsupportedMediaType, result: "malformed"},
		{name: "not json", header: "Bearer " + webhookToken, body: []byte("alert!"), want: http.StatusBadRequest, result: "malformed"},
		{name: "truncated json", header: "Bearer " + webhookToken, body: firing[:len(firing)/2], want: http.StatusBadRequest, result: "malformed"},
		{name: "two objects", header: "Bearer " + webhookToken, body: append(append([]byte{}, firing...), firing...), want: http.StatusBadRequest, result: "malformed"},
		{name: "version 3", header: "Bearer " + webhookToken, body: replace(`"version":"4"`, `"version":"3"`), want: http.StatusBadRequest, result: "malformed"},
		{name: "no version", header: "Bearer " + webhookToken, body: replace(`"version":"4"`, `"versionx":"4"`), want: http.StatusBadRequest, result: "malformed"},
		{name: "unknown status", header: "Bearer " + webhookToken, body: replace(`"status":"firing","alerts"`, `"status":"burning","alerts"`), want: http.StatusBadRequest, result: "malformed"},
		{name: "alert with unknown status", header: "Bearer " + webhookToken, body: replace(`{"status":"firing","labels"`, `{"status":"hot","labels"`), want: http.StatusBadRequest, result: "malformed"},
		{name: "alert without alertname", header: "Bearer " + webhookToken, body: replace(`"alertname":"RotaQueueBacklog",`, ``), want: http.StatusBadRequest, result: "malformed"},
		{name: "alert without fingerprint", header: "Bearer " + webhookToken, body: replace(`"fingerprint":"5c96f36bc751ffda"`, `"fingerprint":""`), want: http.StatusBadRequest, result: "malformed"},
		{name: "bad startsAt", header: "Bearer " + webhookToken, body: replace(`"startsAt":"2026`, `"startsAt":"yesterday`), want: http.StatusBadRequest, result: "malformed"},
		{name: "no alerts", header: "Bearer " + webhookToken, body: []byte(`{"version":"4","status":"firing","alerts":[]}`), want: http.StatusBadRequest, result: "malformed"},
		// encoding/json keeps the last of a key given twice and reads "Status" as "status":
		// the webhook would mean what its last copy says.
		{name: "status given twice", header: "Bearer " + webhookToken, body: replace(`"status":"firing","alerts"`, `"status":"resolved","status":"firing","alerts"`), want: http.StatusBadRequest, result: "malformed"},
		{name: "label given twice", header: "Bearer " + webhookToken, body: replace(`"alertname":"RotaQueueBacklog",`, `"alertname":"RotaQueueBacklog","alertname":"Other",`), want: http.StatusBadRequest, result: "malformed"},
		{name: "status in another case", header: "Bearer " + webhookToken, body: replace(`"status":"firing","alerts"`, `"status":"firing","STATUS":"resolved","alerts"`), want: http.StatusBadRequest, result: "malformed"},
		{name: "alerts not a list", header: "Bearer " + webhookToken, body: []byte(`{"version":"4","status":"firing","alerts":{}}`), want: http.StatusBadRequest, result: "malformed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			req := httptest.NewRequest(http.MethodPost, "/api/v1/alerts", bytes.NewReader(tc.body))
			if tc.chunked {
				req.ContentLength = -1
			}
			if tc.enc != "" {
				req.Header.Set("Content-Encoding", tc.enc)
			}
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			rec := httptest.NewRecorder()
			h.srv.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.want, rec.Body)
			}
			assertJSONError(t, rec)
			// RFC 9110: a 401 carries the challenge, as the operator API's does (and the docs
			// promise for every 401); it had none on the webhook.
			if tc.want == http.StatusUnauthorized && rec.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			// RFC 9110 15.5.16: a 415 for a content coding says which are taken.
			if tc.want == http.StatusUnsupportedMediaType && rec.Header().Get("Accept-Encoding") != "identity" {
				t.Errorf("415 with Accept-Encoding %q, want identity", rec.Header().Get("Accept-Encoding"))
			}
			if n := h.backend.Nudges(); len(n) != 0 {
				t.Errorf("a rejected webhook nudged: %q", n)
			}
			metrics := h.do(http.MethodGet, "/metrics", "", nil).Body.String()
			if want := `rota_webhook_requests_total{result="` + tc.result + `"} 1`; !strings.Contains(metrics, want) {
				t.Errorf("metrics lack %s", want)
			}
		})
	}
}

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Unauthenticated calls, which anyone reaching the listener can make, are each counted but
// logged one line a minute at most, the next line saying how many were not (1,000 calls made
// 1,001 log lines). Error answers never echo a huge field whole.
func TestWebhookRejectionsAreCountedNotEachLogged(t *testing.T) {
	h := newHarness(t, nil)
	firing := fixture(t, "alertmanager-v4-firing.json")
	for range 1000 {
		if rec := h.do(http.MethodPost, "/api/v1/alerts", "", firing); rec.Code != http.StatusUnauthorized {
			t.Fatalf("status %d", rec.Code)
		}
	}
	rejected := func() []*logrus.Entry {
		var out []*logrus.Entry
		for _, e := range h.logs.AllEntries() {
			if strings.Contains(e.Message, "webhook rejected") {
				out = append(out, e)
			}
		}
		return out
	}
	if got := rejected(); len(got) != 1 {
		t.Fatalf("%d log lines for 1000 rejected calls, want 1", len(got))
	}
	metrics := h.do(http.MethodGet, "/metrics", "", nil).Body.String()
	if want := `rota_webhook_requests_total{result="unauthorized"} 1000`; !strings.Contains(metrics, want) {
		t.Errorf("metrics lack %s", want)
	}
	h.clock.Advance(time.Minute)
	h.do(http.MethodPost, "/api/v1/alerts", "nope", firing)
	got := rejected()
	if len(got) != 2 || got[1].Data["unlogged_before"] != 999 || got[1].Data["result"] != "forbidden" {
		t.Errorf("after a minute: %d lines, the last %v; want a second saying 999 went unlogged", len(got), got[len(got)-1].Data)
	}

	// A huge field the validation rejects, and ones the decoding does (encoding/json and time
	// quote a bad value whole, a time twice).
	ones := strings.Repeat("1", 1<<20)
	for _, c := range [][2]string{
		{`"version":"4"`, `"version":"` + strings.Repeat("4", 1<<20) + `"`},
		{`"startsAt":"2026-11-29T22:10:18Z"`, `"startsAt":"` + ones + `2026-11-29T22:10:18Z"`},
		{`"truncatedAlerts":0`, `"truncatedAlerts":` + ones},
		{`"truncatedAlerts":0`, `"truncatedAlerts":0.` + ones},
	} {
		field, value := c[0], c[1]
		if !bytes.Contains(firing, []byte(field)) {
			t.Fatalf("the fixture lacks %s", field)
		}
		huge := bytes.Replace(firing, []byte(field), []byte(value), 1)
		h = newHarness(t, func(o *api.Options) { o.WebhookMaxBodyBytes = 2 << 20 })
		rec := h.do(http.MethodPost, "/api/v1/alerts", webhookToken, huge)
		if rec.Code != http.StatusBadRequest || rec.Body.Len() > 500 {
			t.Errorf("%.20s...: status %d, %d bytes of error: %.200s", value, rec.Code, rec.Body.Len(), rec.Body)
		}
		for _, e := range h.logs.AllEntries() {
			if line, _ := e.String(); len(line) > 1000 {
				t.Errorf("%.20s...: a log line of %d bytes: %.200s", value, len(line), line)
			}
		}
	}
}

func TestWebhookAuthDisabled(t *testing.T) {
	h := newHarness(t, func(o *api.Options) { o.WebhookAuthDisabled, o.WebhookToken = true, api.Token{} })
	if rec := h.do(http.MethodPost, "/api/v1/alerts", "", fixture(t, "alertmanager-v4-firing.json")); rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if n := h.backend.Nudges(); len(n) != 1 {
		t.Fatalf("nudges %q", n)
	}
}

func TestHints(t *testing.T) {
	alert := func(status, name string, signal bool) api.WebhookAlert {
		labels := map[string]string{"alertname": name}
		if signal {
			labels[alerts.SignalLabel] = "backlog"
		}
		return api.WebhookAlert{Status: status, Labels: labels}
	}
	tests := []struct {
		name      string
		alerts    []api.WebhookAlert
		truncated int
		want      string
	}{
		{name: "firing rota alert", alerts: []api.WebhookAlert{alert("firing", "RotaQueueBacklog", true)}, want: "RotaQueueBacklog"},
		// max_alerts: Alertmanager lists a group's alerts in label order and leaves the rest
		// out; a resolved one listed may stand for firing ones left out (node a1 resolved, a2
		// firing, max_alerts 1: the notification lists a1 alone, status resolved).
		{name: "resolved rota alert listed, others left out", alerts: []api.WebhookAlert{alert("resolved", "RotaServerIdle", true)}, truncated: 1, want: "RotaServerIdle"},
		{name: "someone else's alert listed, others left out", alerts: []api.WebhookAlert{alert("resolved", "NodeDown", false)}, truncated: 3},
		{name: "resolved rota alert", alerts: []api.WebhookAlert{alert("resolved", "RotaQueueBacklog", true)}},
		{name: "someone else's alert", alerts: []api.WebhookAlert{alert("firing", "NodeDown", false)}},
		{name: "rota-like name without the signal label", alerts: []api.WebhookAlert{alert("firing", "RotaQueueBacklog", false)}},
		{name: "sorted and distinct", alerts: []api.WebhookAlert{alert("firing", "RotaServerIdle", true), alert("firing", "RotaQueueBacklog", true), alert("firing", "RotaServerIdle", true)}, want: "RotaQueueBacklog,RotaServerIdle"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(api.WebhookMessage{Alerts: tc.alerts, TruncatedAlerts: tc.truncated}.Hints(), ","); got != tc.want {
				t.Errorf("Hints = %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzWebhook: no body makes the receiver panic, and a body the parser rejects never nudges.
func FuzzWebhook(f *testing.F) {
	for _, b := range fixtures(f) {
		f.Add(b)
	}
	f.Add([]byte(`{"version":"4","status":"firing","alerts":[{"status":"firing","labels":{"alertname":"RotaX","rota_signal":"idle"},"startsAt":"2026-01-01T00:00:00Z","fingerprint":"1"}]}`))
	f.Add([]byte(`{"version":"4"}`))
	f.Add([]byte(`null`))
	h := newHarness(f, nil)
	f.Fuzz(func(t *testing.T, body []byte) {
		before := len(h.backend.Nudges())
		rec := h.do(http.MethodPost, "/api/v1/alerts", webhookToken, body)
		nudged := len(h.backend.Nudges()) > before
		h.assertNoSecretLogged(t)
		_, err := api.ParseWebhook(body)
		switch {
		case err != nil && (rec.Code == http.StatusOK || nudged):
			t.Fatalf("invalid body (%v) answered %d, nudged %v", err, rec.Code, nudged)
		case err != nil && len(err.Error()) > 1000:
			t.Fatalf("an error of %d bytes: %.200s", len(err.Error()), err)
		case err == nil && len(body) <= 64<<10 && rec.Code != http.StatusOK:
			t.Fatalf("valid body answered %d: %s", rec.Code, rec.Body)
		}
	})
}

// Every alert in the webhook fixtures is one rota's rules generate, carrying the rota_signal
// label of that rule; the alerts rota acts on (backlog, idle) are among them.
func TestFixturesUseRotasAlerts(t *testing.T) {
	signals := map[string]string{} // alertname -> rota_signal
	for _, g := range alerts.Rules(config.Default()).Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				signals[r.Alert] = r.Labels[alerts.SignalLabel]
			}
		}
	}
	used := map[string]bool{}
	for name, body := range fixtures(t) {
		msg, err := api.ParseWebhook(body)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, a := range msg.Alerts {
			alert := a.Labels["alertname"]
			used[alert] = true
			signal, ok := signals[alert]
			switch {
			case !ok:
				t.Errorf("%s: alert %q is not one rota's rules generate", name, alert)
			case a.Labels[alerts.SignalLabel] != signal:
				t.Errorf("%s: %s carries %s=%q, its rule %q", name, alert, alerts.SignalLabel, a.Labels[alerts.SignalLabel], signal)
			}
		}
	}
	for _, want := range []string{alerts.AlertBacklog, alerts.AlertIdle} {
		if !used[want] {
			t.Errorf("no fixture has %s", want)
		}
	}
}

// At most api.MaxWebhooksInFlight webhook requests are read at once: each may hold the body's
// bound for as long as its sender takes, and the webhook may take no token. One more is a 503
// with Retry-After (Alertmanager sends again), counted busy; once a slot is free a request
// is read again.
func TestWebhooksInFlightAreBounded(t *testing.T) {
	h := newHarness(t, nil)
	firing := fixture(t, "alertmanager-v4-firing.json")
	send := func(body io.Reader) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/alerts", body)
		req.Header.Set("Authorization", "Bearer "+webhookToken)
		rec := httptest.NewRecorder()
		h.srv.ServeHTTP(rec, req)
		return rec
	}
	var writers []*io.PipeWriter
	codes := make(chan int, api.MaxWebhooksInFlight)
	for range api.MaxWebhooksInFlight {
		r, w := io.Pipe()
		writers = append(writers, w)
		go func() { codes <- send(r).Code }()
	}
	testutil.Eventually(t, 10*time.Second, "every slot held by a slow sender", func() error {
		if n := h.srv.WebhooksInFlight(); n != api.MaxWebhooksInFlight {
			return fmt.Errorf("%d slots held", n)
		}
		return nil
	})
	rec := send(bytes.NewReader(firing))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("one webhook more: %d (Retry-After %q), want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	assertJSONError(t, rec)
	for _, w := range writers {
		go func() { _, _ = w.Write(firing); _ = w.Close() }()
	}
	for range api.MaxWebhooksInFlight {
		if code := <-codes; code != http.StatusOK {
			t.Errorf("a slow sender's webhook: %d, want 200", code)
		}
	}
	if rec := send(bytes.NewReader(firing)); rec.Code != http.StatusOK {
		t.Errorf("a webhook once the slots are free: %d, want 200", rec.Code)
	}
	metrics := h.do(http.MethodGet, "/metrics", "", nil).Body.String()
	if want := `rota_webhook_requests_total{result="busy"} 1`; !strings.Contains(metrics, want) {
		t.Errorf("metrics lack %s", want)
	}
}

// TestUnauthorisedSaysWhatWasSent: a 401 says what the Authorization header held (its scheme,
// never its credentials) and how the caller sends what rota wants. An Alertmanager configured
// with basic_auth was told "missing bearer token", as if it had sent nothing.
func TestUnauthorisedSaysWhatWasSent(t *testing.T) {
	const basic = "d2g6c2VjcmV0" // base64 of wh:secret
	tests := []struct {
		name, path, header string
		want               []string
	}{
		{"webhook, basic auth", "/api/v1/alerts", "Basic " + basic, []string{"scheme Basic", "rota wants a bearer token", "authorization: credentials_file"}},
		{"webhook, no header", "/api/v1/alerts", "", []string{"no Authorization header", "credentials_file"}},
		{"webhook, a token without its scheme", "/api/v1/alerts", webhookToken, []string{"without a scheme", "Bearer <token>"}},
		{"webhook, an empty bearer token", "/api/v1/alerts", "Bearer ", []string{"empty bearer token"}},
		{"webhook, a scheme rota does not name", "/api/v1/alerts", webhookToken + " x", []string{"a scheme other than Bearer"}},
		{"api, basic auth", "/api/v1/status", "Basic " + basic, []string{"scheme Basic", "rota wants a bearer token", "--rota.token-file"}},
		{"api, no header", "/api/v1/status", "", []string{"no Authorization header", "--rota.token-file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			method := http.MethodGet
			if tc.path == "/api/v1/alerts" {
				method = http.MethodPost
			}
			req := httptest.NewRequest(method, tc.path, bytes.NewReader(fixture(t, "alertmanager-v4-firing.json")))
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			rec := httptest.NewRecorder()
			h.srv.ServeHTTP(rec, req)
			if rec.Code != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401: %s", rec.Code, rec.Body)
			}
			msg := assertJSONError(t, rec)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			if strings.Contains(msg, basic) {
				t.Errorf("error %q echoes the credentials", msg)
			}
		})
	}
}
