package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/testutil"
)

// bcrypt of "rota-secret" (cost 4), as in rota-exporter's web config test.
const metricsUserHash = "$2a$04$A49qDQzEBp.e2CkkK.7Sy..MJyEmaKh5beb95jzOw/ab6/lRCoR6W"

// TestDaemonWebConfigTLSAndMetricsAuth: --web.config.file (exporter-toolkit's format) puts the
// whole listener behind TLS and /metrics behind basic auth, while the operator API and the
// webhook keep their bearer tokens (one Authorization header cannot carry both), and the
// health endpoints stay open; --web.max-connections bounds that TLS listener's connections.
// Checked with a real TLS client against the real binary.
func TestDaemonWebConfigTLSAndMetricsAuth(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string { return writeFile(t, dir, name, content) }
	certPEM, keyPEM := testutil.SelfSigned(t)
	write("cert.pem", string(certPEM))
	write("key.pem", string(keyPEM))
	// Relative paths are taken from the web config's folder, as exporter-toolkit does.
	web := write("web.yml", "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\nbasic_auth_users:\n  prometheus: "+metricsUserHash+"\n")
	port := testutil.FreePort(t)
	cfg := write("rota.yml", fmt.Sprintf(`
prometheus: {url: "http://127.0.0.1:1", timeout: 1s}
server:
  listen_address: 127.0.0.1:%d
  api_token_file: %s
  webhook_token_file: %s
store: {path: %s}
`, port, write("api.token", "api-token\n"), write("webhook.token", "webhook-token\n"), filepath.Join(dir, "rota.db"))+onePool)
	const maxConnections = 2
	testutil.StartEnv(t, []string{"ROTA_TEST_PW=pw"}, rotaBinary, "--config.file", cfg, "--web.config.file", web,
		fmt.Sprintf("--web.max-connections=%d", maxConnections))

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	testutil.Eventually(t, 30*time.Second, "rota serving TLS", func() error {
		_, _, err := testutil.GetWithAuth(client, base+"/-/healthy", "", "")
		return err
	})
	bearer := func(method, path, token, body string) int {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	fixture, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "scaler", "api", "testdata", "alertmanager", "alertmanager-v4-firing.json"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		code func() (int, error)
		want int
	}{
		{"metrics without a user", func() (int, error) { c, _, err := testutil.GetWithAuth(client, base+"/metrics", "", ""); return c, err }, http.StatusUnauthorized},
		{"metrics with a wrong password", func() (int, error) {
			c, _, err := testutil.GetWithAuth(client, base+"/metrics", "prometheus", "nope")
			return c, err
		}, http.StatusUnauthorized},
		{"metrics with the user", func() (int, error) {
			c, body, err := testutil.GetWithAuth(client, base+"/metrics", "prometheus", "rota-secret")
			if err == nil && !strings.Contains(body, "rota_scaler_") {
				err = fmt.Errorf("body lacks rota_scaler_ series")
			}
			return c, err
		}, http.StatusOK},
		{"metrics with the API token", func() (int, error) { return bearer(http.MethodGet, "/metrics", "api-token", ""), nil }, http.StatusUnauthorized},
		{"health open", func() (int, error) {
			c, _, err := testutil.GetWithAuth(client, base+"/-/healthy", "", "")
			return c, err
		}, http.StatusOK},
		{"API with its bearer token", func() (int, error) { return bearer(http.MethodGet, "/api/v1/status", "api-token", ""), nil }, http.StatusOK},
		{"API with the metrics user", func() (int, error) {
			c, _, err := testutil.GetWithAuth(client, base+"/api/v1/status", "prometheus", "rota-secret")
			return c, err
		}, http.StatusUnauthorized},
		{"webhook with its bearer token", func() (int, error) {
			return bearer(http.MethodPost, "/api/v1/alerts", "webhook-token", string(fixture)), nil
		}, http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if code, err := tc.code(); err != nil || code != tc.want {
				t.Errorf("status %d (%v), want %d", code, err, tc.want)
			}
		})
	}
	// Plain HTTP to the TLS listener never gets an answer from rota.
	if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/-/healthy", port)); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("rota answered plain HTTP on its TLS listener")
		}
	}
	client.CloseIdleConnections()
	testutil.CheckConnectionLimit(t, func() (net.Conn, error) {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return nil, err
		}
		return tls.Client(c, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}), nil
	}, "/-/healthy", maxConnections)
}

// A web config rota cannot apply stops it at start, with the file's name, before it listens.
func TestDaemonRefusesABadWebConfig(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"missing certificate": "tls_server_config:\n  cert_file: none.pem\n  key_file: none.pem\n",
		"unknown key":         "tls_server_confg: {}\n",
		"bad hash":            "basic_auth_users:\n  prometheus: not-a-bcrypt-hash\n",
		"rate limit":          "rate_limit:\n  interval: 1s\n  burst: 5\n",
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			web := writeFile(t, dir, strings.ReplaceAll(name, " ", "-")+".yml", content)
			cfg := writeFile(t, dir, "rota.yml", "server: {webhook_auth_disabled: true}\n"+onePool)
			out, code := runRota(t, "--config.file", cfg, "--web.config.file", web)
			if code != 1 || !strings.Contains(out, web) {
				t.Errorf("exit %d, want 1 naming %s:\n%s", code, web, out)
			}
		})
	}
}
