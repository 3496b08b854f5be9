package redfishemu

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// wallClock is the real clock: these tests run real listeners.
type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

func (wallClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func start(t *testing.T, cfg Config) *Emulator {
	t.Helper()
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	e, err := Start(cfg, wallClock{}, l.WithField("component", "redfish-emulator"))
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
