package api_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/internal/webconfig"
	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/api/apifake"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const (
	apiToken     = "api-secret-7f3a"
	webhookToken = "webhook-secret-91c2"
)

// harness is a server on a fake backend.
type harness struct {
	srv     *api.Server
	backend *apifake.Backend
	reg     *prometheus.Registry
	logs    *logtest.Hook
	clock   *clock.Manual
}

func newHarness(t testing.TB, edit func(*api.Options)) *harness {
	t.Helper()
	logger, hook := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	h := &harness{backend: apifake.Example(), reg: prometheus.NewRegistry(), logs: hook, clock: clock.NewManual(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))}
	o := api.Options{
		Backend: h.backend, Registry: h.reg, Clock: h.clock,
		APIToken: api.NewToken(apiToken), WebhookToken: api.NewToken(webhookToken),
		WebhookMaxBodyBytes: 64 << 10,
		Log:                 logger.WithField("component", "api"),
	}
	if edit != nil {
		edit(&o)
	}
	srv, err := api.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = srv
	t.Cleanup(func() { h.assertNoSecretLogged(t) })
	return h
}

// assertNoSecretLogged fails the test if a token reached a log line (safety invariant 6), and
// forgets the lines checked.
func (h *harness) assertNoSecretLogged(t testing.TB) {
	t.Helper()
	for _, e := range h.logs.AllEntries() {
		line, _ := e.String()
		if strings.Contains(line, apiToken) || strings.Contains(line, webhookToken) {
			t.Errorf("a token was logged: %s", line)
		}
	}
	h.logs.Reset()
}

// do sends a request straight to the handler; token "" sends no Authorization header.
func (h *harness) do(method, path, token string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.srv.ServeHTTP(rec, req)
	return rec
}

// apiCalls is every operator API endpoint, with a node the example fleet knows.
var apiCalls = []struct{ name, method, path, body string }{
	{"status", http.MethodGet, "/api/v1/status", ""},
	{"explain", http.MethodGet, "/api/v1/nodes/gpu01/explain", ""},
	{"plan", http.MethodPost, "/api/v1/plan", ""},
	{"pin", http.MethodPost, "/api/v1/nodes/cpu01/pin", `{"note":"alice: firmware update"}`},
	{"unpin", http.MethodDelete, "/api/v1/nodes/cpu01/pin", ""},
	{"maintenance", http.MethodPost, "/api/v1/nodes/cpu01/maintenance", `{"note":"carol: new disks"}`},
	{"maintenance-off", http.MethodDelete, "/api/v1/nodes/cpu01/maintenance", ""},
	{"pause", http.MethodPost, "/api/v1/pause", `{"note":"bob: incident 42"}`},
	{"resume", http.MethodDelete, "/api/v1/pause", ""},
	{"wake", http.MethodPost, "/api/v1/wake", `{"nodes":["cpu01","ghost"],"note":"slurm resume"}`},
}

func TestAPIAuth(t *testing.T) {
	tokens := []struct {
		name, header string
		want         int
	}{
		{"no header", "", http.StatusUnauthorized},
		{"not bearer", "Basic " + apiToken, http.StatusUnauthorized},
		{"empty bearer", "Bearer ", http.StatusUnauthorized},
		{"wrong token", "Bearer nope", http.StatusForbidden},
		{"webhook token", "Bearer " + webhookToken, http.StatusForbidden},
		{"token prefix", "Bearer " + apiToken[:5], http.StatusForbidden},
		{"right token", "Bearer " + apiToken, http.StatusOK},
		{"scheme in lower case", "bearer " + apiToken, http.StatusOK},
	}
	// The backup streams bytes, not JSON, so TestAPIGolden leaves it out; its auth is the same.
	backup := struct{ name, method, path, body string }{"backup", http.MethodGet, "/api/v1/store/backup", ""}
	for _, c := range append(slices.Clone(apiCalls), backup) {
		for _, tok := range tokens {
			t.Run(c.name+"/"+tok.name, func(t *testing.T) {
				h := newHarness(t, nil)
				req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
				if tok.header != "" {
					req.Header.Set("Authorization", tok.header)
				}
				rec := httptest.NewRecorder()
				h.srv.ServeHTTP(rec, req)
				if rec.Code != tok.want {
					t.Fatalf("status %d, want %d: %s", rec.Code, tok.want, rec.Body)
				}
				if tok.want != http.StatusOK {
					assertJSONError(t, rec)
					if got, _ := h.backend.Paused(); got {
						t.Error("an unauthorised pause reached the backend")
					}
					if pinned, _ := h.backend.Pin("cpu01"); pinned {
						t.Error("an unauthorised pin reached the backend")
					}
					if on, _ := h.backend.Maintenance("cpu01"); on {
						t.Error("an unauthorised maintenance reached the backend")
					}
					if w := h.backend.Wakes(); len(w) != 0 {
						t.Errorf("an unauthorised wake reached the backend: %v", w)
					}
				}
				if tok.want == http.StatusUnauthorized && rec.Header().Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
			})
		}
	}
}

func TestAPIOffWithoutToken(t *testing.T) {
	h := newHarness(t, func(o *api.Options) { o.APIToken = api.Token{} })
	for _, tok := range []string{"", "anything"} {
		rec := h.do(http.MethodGet, "/api/v1/status", tok, nil)
		if rec.Code != http.StatusForbidden {
			t.Errorf("token %q: status %d, want 403", tok, rec.Code)
		}
		assertJSONError(t, rec)
	}
}

// TestAPIGolden checks each endpoint's answer and its effect on the backend.
func TestAPIGolden(t *testing.T) {
	h := newHarness(t, nil)
	for _, c := range apiCalls {
		t.Run(c.name, func(t *testing.T) {
			rec := h.do(c.method, c.path, apiToken, []byte(c.body))
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			golden(t, filepath.Join("testdata", c.name+".json"), rec.Body.Bytes())
			switch c.name {
			case "pin":
				if pinned, note := h.backend.Pin("cpu01"); !pinned || note != "alice: firmware update" {
					t.Errorf("backend pin = %v %q", pinned, note)
				}
			case "unpin":
				if pinned, _ := h.backend.Pin("cpu01"); pinned {
					t.Error("still pinned")
				}
			case "maintenance":
				if on, note := h.backend.Maintenance("cpu01"); !on || note != "carol: new disks" {
					t.Errorf("backend maintenance = %v %q", on, note)
				}
			case "maintenance-off":
				if on, _ := h.backend.Maintenance("cpu01"); on {
					t.Error("still in maintenance")
				}
			case "pause":
				if paused, note := h.backend.Paused(); !paused || note != "bob: incident 42" {
					t.Errorf("backend pause = %v %q", paused, note)
				}
			case "resume":
				if paused, _ := h.backend.Paused(); paused {
					t.Error("still paused")
				}
			case "wake":
				if w := h.backend.Wakes(); len(w) != 1 || !slices.Equal(w[0], []string{"cpu01", "ghost"}) {
					t.Errorf("backend wakes = %v", w)
				}
			}
		})
	}
}

func TestAPIErrors(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		enc                      string // Content-Encoding
		backendErr               error
		want                     int
		allow                    string // the Allow header of a 405
		retryAfter               bool   // a Retry-After header
	}{
		{name: "explain unknown node", method: http.MethodGet, path: "/api/v1/nodes/nope/explain", want: http.StatusNotFound},
		{name: "pin unknown node", method: http.MethodPost, path: "/api/v1/nodes/nope/pin", want: http.StatusNotFound},
		{name: "unpin unknown node", method: http.MethodDelete, path: "/api/v1/nodes/nope/pin", want: http.StatusNotFound},
		{name: "pin with a malformed body", method: http.MethodPost, path: "/api/v1/nodes/cpu01/pin", body: `{"note":`, want: http.StatusBadRequest},
		{name: "maintenance of an unknown node", method: http.MethodPost, path: "/api/v1/nodes/nope/maintenance", want: http.StatusNotFound},
		{name: "maintenance off of an unknown node", method: http.MethodDelete, path: "/api/v1/nodes/nope/maintenance", want: http.StatusNotFound},
		{name: "maintenance with a malformed body", method: http.MethodPost, path: "/api/v1/nodes/cpu01/maintenance", body: `{"note":`, want: http.StatusBadRequest},
		{name: "backup fails", method: http.MethodGet, path: "/api/v1/store/backup", backendErr: errors.New("store closed"), want: http.StatusInternalServerError},
		{name: "backup is read-only", method: http.MethodPost, path: "/api/v1/store/backup", want: http.StatusMethodNotAllowed, allow: "GET, HEAD"},
		{name: "pause with a body that is not an object", method: http.MethodPost, path: "/api/v1/pause", body: `[1]`, want: http.StatusBadRequest},
		{name: "backend fails", method: http.MethodGet, path: "/api/v1/status", backendErr: errors.New("store closed"), want: http.StatusInternalServerError},
		{name: "backend fails to plan", method: http.MethodPost, path: "/api/v1/plan", backendErr: errors.New("prometheus down"), want: http.StatusInternalServerError},
		{name: "wrong method", method: http.MethodPost, path: "/api/v1/status", want: http.StatusMethodNotAllowed, allow: "GET, HEAD"},
		{name: "wrong method on the webhook", method: http.MethodGet, path: "/api/v1/alerts", want: http.StatusMethodNotAllowed, allow: "POST"},
		{name: "unknown endpoint", method: http.MethodGet, path: "/api/v1/nodes", want: http.StatusNotFound},
		// Outside /api/v1/ ServeMux answered in plain text ("404 page not found", "Method Not
		// Allowed"): an Alertmanager pointed at /api/v2/alerts, or rotactl at a proxy's prefix.
		{name: "a path outside the API", method: http.MethodGet, path: "/status", want: http.StatusNotFound},
		{name: "another API version", method: http.MethodPost, path: "/api/v2/alerts", want: http.StatusNotFound},
		{name: "a prefix before the API", method: http.MethodGet, path: "/rota/api/v1/status", want: http.StatusNotFound},
		{name: "the root", method: http.MethodGet, path: "/", want: http.StatusNotFound},
		{name: "metrics by POST", method: http.MethodPost, path: "/metrics", want: http.StatusMethodNotAllowed, allow: "GET, HEAD"},
		{name: "health by DELETE", method: http.MethodDelete, path: "/-/healthy", want: http.StatusMethodNotAllowed, allow: "GET, HEAD"},
		{name: "readiness by POST", method: http.MethodPost, path: "/-/ready", want: http.StatusMethodNotAllowed, allow: "GET, HEAD"},
		// ServeMux answered a path with an empty, "." or ".." segment with a 307 to its clean
		// form (an empty node name to /api/v1/nodes/explain; a POST keeps its method on a 307).
		{name: "explain an empty node name", method: http.MethodGet, path: "/api/v1/nodes//explain", want: http.StatusNotFound},
		{name: "pin an empty node name", method: http.MethodPost, path: "/api/v1/nodes//pin", want: http.StatusNotFound},
		{name: "maintenance of a dot", method: http.MethodDelete, path: "/api/v1/nodes/./maintenance", want: http.StatusNotFound},
		{name: "a dot-dot segment", method: http.MethodPost, path: "/api/v1/nodes/../pause", want: http.StatusNotFound},
		{name: "a doubled slash", method: http.MethodPost, path: "/api/v1//pause", want: http.StatusNotFound},
		{name: "a trailing slash", method: http.MethodGet, path: "/api/v1/status/", want: http.StatusNotFound},
		{name: "wake without nodes", method: http.MethodPost, path: "/api/v1/wake", body: `{"nodes":[]}`, want: http.StatusBadRequest},
		{name: "wake without a body", method: http.MethodPost, path: "/api/v1/wake", want: http.StatusBadRequest},
		{name: "wake with an empty name", method: http.MethodPost, path: "/api/v1/wake", body: `{"nodes":["cpu01"," "]}`, want: http.StatusBadRequest},
		{name: "wake with a misspelt field", method: http.MethodPost, path: "/api/v1/wake", body: `{"node":["cpu01"]}`, want: http.StatusBadRequest},
		{name: "wake fails", method: http.MethodPost, path: "/api/v1/wake", body: `{"nodes":["cpu01"]}`, backendErr: errors.New("store closed"), want: http.StatusInternalServerError},
		// As a follower's 503 while no rota leads: rotactl slurm resume asks again (it was a
		// 500, and resume exited 1).
		{name: "wake as rota stops", method: http.MethodPost, path: "/api/v1/wake", body: `{"nodes":["cpu01"]}`, backendErr: api.ErrStopping, want: http.StatusServiceUnavailable, retryAfter: true},
		{name: "wake by GET", method: http.MethodGet, path: "/api/v1/wake", want: http.StatusMethodNotAllowed, allow: "POST"},
		// A body is one JSON object: data after it, or a field the endpoint does not take, is
		// a malformed request, refused before anything is written (they were written).
		{name: "pin with data after the body", method: http.MethodPost, path: "/api/v1/nodes/cpu01/pin", body: `{"note":"a"} trailing`, want: http.StatusBadRequest},
		{name: "pin with two bodies", method: http.MethodPost, path: "/api/v1/nodes/cpu01/pin", body: `{"note":"a"}{"note":"b"}`, want: http.StatusBadRequest},
		{name: "pin with a misspelt note", method: http.MethodPost, path: "/api/v1/nodes/cpu01/pin", body: `{"notes":"why"}`, want: http.StatusBadRequest},
		{name: "maintenance with data after the body", method: http.MethodPost, path: "/api/v1/nodes/cpu01/maintenance", body: `{} x`, want: http.StatusBadRequest},
		{name: "pause with a misspelt note", method: http.MethodPost, path: "/api/v1/pause", body: `{"Note ":"why"}`, want: http.StatusBadRequest},
		{name: "wake with data after the body", method: http.MethodPost, path: "/api/v1/wake", body: `{"nodes":["cpu01"]} junk`, want: http.StatusBadRequest},
		// encoding/json decodes null into a struct as nothing at all: the pin would be taken.
		{name: "pin with a body of null", method: http.MethodPost, path: "/api/v1/nodes/cpu01/pin", body: `null`, want: http.StatusBadRequest},
		{name: "pause with a body of null", method: http.MethodPost, path: "/api/v1/pause", body: ` null `, want: http.StatusBadRequest},
		// encoding/json keeps the last of a key given twice and reads "NODES" as "nodes".
		{name: "wake with nodes given twice", method: http.MethodPost, path: "/api/v1/wake", body: `{"nodes":["cpu01"],"nodes":["cpu02"]}`, want: http.StatusBadRequest},
		{name: "wake with nodes in another case", method: http.MethodPost, path: "/api/v1/wake", body: `{"NODES":["cpu01"]}`, want: http.StatusBadRequest},
		{name: "pin with a note given twice", method: http.MethodPost, path: "/api/v1/nodes/cpu01/pin", body: `{"note":"a","note":"b"}`, want: http.StatusBadRequest},
		// A body over its bound is 413, as the webhook's (it was 400, "http: request body too
		// large"), and a compressed one 415 (it was 400, "invalid character").
		{name: "pin with a body over 64 KiB", method: http.MethodPost, path: "/api/v1/nodes/cpu01/pin", body: `{"note":"` + strings.Repeat("a", 64<<10) + `"}`, want: http.StatusRequestEntityTooLarge},
		{name: "pause with a body over 64 KiB", method: http.MethodPost, path: "/api/v1/pause", body: strings.Repeat(" ", 64<<10) + `{}`, want: http.StatusRequestEntityTooLarge},
		{name: "wake with a body over 1 MiB", method: http.MethodPost, path: "/api/v1/wake", body: `{"nodes":["` + strings.Repeat("a", 1<<20) + `"]}`, want: http.StatusRequestEntityTooLarge},
		{name: "maintenance with a gzip body", method: http.MethodPost, path: "/api/v1/nodes/cpu01/maintenance", body: "\x1f\x8b", enc: "gzip", want: http.StatusUnsupportedMediaType},
		{name: "wake with a deflate body", method: http.MethodPost, path: "/api/v1/wake", body: `{"nodes":["cpu01"]}`, enc: "deflate", want: http.StatusUnsupportedMediaType},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.backend.SetError(tc.backendErr)
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+apiToken)
			if tc.enc != "" {
				req.Header.Set("Content-Encoding", tc.enc)
			}
			rec := httptest.NewRecorder()
			h.srv.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.want, rec.Body)
			}
			if allow := rec.Header().Get("Allow"); tc.want == http.StatusMethodNotAllowed && allow != tc.allow {
				t.Errorf("Allow: %q, want %q", allow, tc.allow)
			}
			if got := rec.Header().Get("Retry-After") != ""; got != tc.retryAfter {
				t.Errorf("Retry-After: %q, want one: %t", rec.Header().Get("Retry-After"), tc.retryAfter)
			}
			msg := assertJSONError(t, rec)
			if tc.backendErr != nil && !strings.Contains(msg, tc.backendErr.Error()) {
				t.Errorf("error %q does not say %q", msg, tc.backendErr)
			}
			if pinned, _ := h.backend.Pin("cpu01"); pinned {
				t.Error("a failed request pinned cpu01")
			}
			if on, _ := h.backend.Maintenance("cpu01"); on {
				t.Error("a failed request put cpu01 in maintenance")
			}
			if paused, _ := h.backend.Paused(); paused {
				t.Error("a failed request paused the scaler")
			}
			if w := h.backend.Wakes(); len(w) != 0 {
				t.Errorf("a refused wake reached the backend: %v", w)
			}
		})
	}
}

func TestHealthReadyMetrics(t *testing.T) {
	notReady := errors.New("first pass not done")
	var readyErr error
	h := newHarness(t, func(o *api.Options) { o.Ready = func() error { return readyErr } })
	if rec := h.do(http.MethodGet, "/-/healthy", "", nil); rec.Code != http.StatusOK {
		t.Errorf("healthy: %d", rec.Code)
	}
	if rec := h.do(http.MethodGet, "/-/ready", "", nil); rec.Code != http.StatusOK {
		t.Errorf("ready: %d", rec.Code)
	}
	readyErr = notReady
	if rec := h.do(http.MethodGet, "/-/ready", "", nil); rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), notReady.Error()) {
		t.Errorf("not ready: %d %s", rec.Code, rec.Body)
	}
	h.do(http.MethodGet, "/api/v1/status", apiToken, nil)
	h.do(http.MethodGet, "/api/v1/status", "", nil)
	rec := h.do(http.MethodGet, "/metrics", "", nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("metrics: %d", rec.Code)
	}
	for _, want := range []string{
		`rota_api_requests_total{code="200",route="GET /api/v1/status"} 1`,
		`rota_api_requests_total{code="401",route="GET /api/v1/status"} 1`,
		`rota_webhook_requests_total{result="too_large"} 0`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestNewServerRefusesBadOptions(t *testing.T) {
	logger, _ := logtest.NewNullLogger()
	_, err := api.NewServer(api.Options{Backend: apifake.Example(), Registry: prometheus.NewRegistry(), Clock: clock.Real{}, Log: logger.WithField("component", "api")})
	if err == nil {
		t.Fatal("a server without webhook token nor webhook_auth_disabled started")
	}
	// One token for both: whoever reads Alertmanager's config could power servers off.
	_, err = api.NewServer(api.Options{Backend: apifake.Example(), Registry: prometheus.NewRegistry(), Clock: clock.Real{}, Log: logger.WithField("component", "api"),
		APIToken: api.NewToken("same"), WebhookToken: api.NewToken("same")})
	if err == nil || !strings.Contains(err.Error(), "each needs its own") {
		t.Errorf("one token for the API and the webhook: %v", err)
	}
	_, err = api.NewServer(api.Options{Backend: apifake.Example(), Registry: prometheus.NewRegistry(), Clock: clock.Real{}, Log: logger.WithField("component", "api"),
		WebhookAuthDisabled: true, MaxConnections: -1})
	if err == nil || !strings.Contains(err.Error(), "MaxConnections must not be negative") {
		t.Errorf("a negative MaxConnections: %v", err)
	}
}

// assertJSONError checks the body is {"error": "..."} and returns the message.
func assertJSONError(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var body map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["error"] == "" || len(body) != 1 {
		t.Errorf("error body %q is not {\"error\": \"...\"}", rec.Body)
	}
	for _, secret := range []string{apiToken, webhookToken} {
		if strings.Contains(rec.Body.String(), secret) {
			t.Errorf("answer reveals a token: %s", rec.Body)
		}
	}
	return body["error"]
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n got: %s\nwant: %s", path, got, want)
	}
}

// TestServeStopsWithContext: Serve answers on its listener until the context ends, then
// returns nil.
func TestServeStopsWithContext(t *testing.T) {
	h := newHarness(t, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.srv.Serve(ctx, l) }()
	resp, err := http.Get("http://" + l.Addr().String() + "/-/healthy")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthy: %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve returned %v", err)
	}
	if _, err := http.Get("http://" + l.Addr().String() + "/-/healthy"); err == nil {
		t.Error("still answering after the context ended")
	}
}

// TestServeBoundsHeaders: headers over 64 KiB are refused with 431 before any handler runs.
func TestServeBoundsHeaders(t *testing.T) {
	addr := serveOnLoopback(t, newHarness(t, nil))
	testutil.CheckHeaderLimit(t, http.DefaultClient, "http://"+addr+"/api/v1/status", "Bearer "+apiToken)
}

// serveOnLoopback serves h on a loopback port until the test ends, and returns its address.
func serveOnLoopback(t *testing.T, h *harness) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go h.srv.Serve(ctx, l)
	return l.Addr().String()
}

// TestServeBoundsConnections: with MaxConnections set, the listener serves that many
// connections at once; one more waits, unanswered, until one of them closes, over plain HTTP
// and over TLS alike (the limit is on the bare listener, below the handshake). Without it,
// idle connections could take every file descriptor the store and the BMC sessions need.
func TestServeBoundsConnections(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM := testutil.SelfSigned(t)
	for name, b := range map[string][]byte{"cert.pem": certPEM, "key.pem": keyPEM, "web.yml": []byte("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	web, err := webconfig.Load(filepath.Join(dir, "web.yml"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	for _, tc := range []struct {
		name string
		web  *webconfig.File
		wrap func(net.Conn) net.Conn
	}{
		{"plain", nil, func(c net.Conn) net.Conn { return c }},
		{"tls", web, func(c net.Conn) net.Conn { return tls.Client(c, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const max = 3
			h := newHarness(t, func(o *api.Options) { o.MaxConnections, o.Web = max, tc.web })
			addr := serveOnLoopback(t, h)
			testutil.CheckConnectionLimit(t, func() (net.Conn, error) {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					return nil, err
				}
				return tc.wrap(c), nil
			}, "/-/healthy", max)
			// The gauges name the listener: its bound, and nothing open once every client closed.
			want := fmt.Sprintf(`
# HELP rota_http_connections_max Connections the listener keeps open at once (--web.max-connections; 0: no limit).
# TYPE rota_http_connections_max gauge
rota_http_connections_max{listener=%q} %d
# HELP rota_http_connections_open Connections open on the listener; at http_connections_max, one more waits unanswered.
# TYPE rota_http_connections_open gauge
rota_http_connections_open{listener=%q} 0
`, addr, max, addr)
			testutil.Eventually(t, 10*time.Second, "the connections counted closed", func() error {
				return promtest.GatherAndCompare(h.reg, strings.NewReader(want), "rota_http_connections_max", "rota_http_connections_open")
			})
		})
	}
}

func TestSetTokens(t *testing.T) {
	h := newHarness(t, nil)
	const newAPI, newWebhook = "api-secret-rotated", "webhook-secret-rotated"
	if err := h.srv.SetTokens(api.NewToken(newAPI), api.NewToken(newWebhook)); err != nil {
		t.Fatal(err)
	}
	firing := fixture(t, "alertmanager-v4-firing.json")
	tests := []struct {
		name, method, path, token string
		body                      []byte
		want                      int
	}{
		{"old api token", http.MethodGet, "/api/v1/status", apiToken, nil, http.StatusForbidden},
		{"new api token", http.MethodGet, "/api/v1/status", newAPI, nil, http.StatusOK},
		{"old webhook token", http.MethodPost, "/api/v1/alerts", webhookToken, firing, http.StatusForbidden},
		{"new webhook token", http.MethodPost, "/api/v1/alerts", newWebhook, firing, http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if rec := h.do(tc.method, tc.path, tc.token, tc.body); rec.Code != tc.want {
				t.Errorf("status %d, want %d", rec.Code, tc.want)
			}
		})
	}
	if err := h.srv.SetTokens(api.NewToken(newAPI), api.Token{}); err == nil {
		t.Error("a zero webhook token was taken with webhook auth on")
	}
	if err := h.srv.SetTokens(api.NewToken(newAPI), api.NewToken(newAPI)); err == nil {
		t.Error("one token for the API and the webhook was taken")
	}
	if rec := h.do(http.MethodGet, "/api/v1/status", newAPI, nil); rec.Code != http.StatusOK {
		t.Errorf("a refused SetTokens changed the tokens: %d", rec.Code)
	}
}
