package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/internal/testutil"
)

// TestRun starts the emulator from a config file, reaches a BMC over TLS verified with the
// certificate it wrote, and stops it with the context.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	ctl, bmcPort := testutil.FreePort(t), testutil.FreePort(t)
	cfg := filepath.Join(dir, "emu.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`control_listen: 127.0.0.1:%d
servers:
  - {name: n1, listen: "127.0.0.1:%d", username: admin, password: secret, power: On}
`, ctl, bmcPort)), 0o644); err != nil {
		t.Fatal(err)
	}
	cert := filepath.Join(dir, "cert.pem")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	go func() { done <- run(ctx, cfg, cert, l.WithField("component", "emu")) }()
	testutil.WaitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d/-/ready", ctl), 10*time.Second)

	pem, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/redfish/v1/", bmcPort))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("service root: %s", resp.Status)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after cancel")
	}
}
