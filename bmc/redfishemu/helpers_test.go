package redfishemu

import (
	"crypto/tls"
	"crypto/x509"
	"github.com/rotahq/rota/internal/clock"
	"net/http"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

func start(t *testing.T, cfg Config) *Emulator {
	t.Helper()
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	e, err := Start(cfg, clock.Real{}, l.WithField("component", "redfish-emulator"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func server(name string) ServerConfig {
	return ServerConfig{Name: name, Listen: "127.0.0.1:0", Username: "admin", Password: "secret", TransitionDelay: Duration(100 * time.Millisecond)}
}

// trustingClient verifies the emulator's certificate against its own PEM.
func trustingClient(e *Emulator) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.CertPEM())
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}
