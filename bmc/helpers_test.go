package bmc

import (
	"encoding/pem"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/bmc/redfishemu"
	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/testutil"
)

// syncBuffer collects log output from concurrent goroutines.
type syncBuffer = testutil.SyncBuffer

// testLogger logs everything (trace included, so bmclib's output is captured) into a buffer.
func testLogger() (*logrus.Entry, *syncBuffer) {
	buf := &syncBuffer{}
	l := logrus.New()
	l.SetOutput(buf)
	l.SetLevel(logrus.TraceLevel)
	return l.WithField("component", "bmc"), buf
}

// writeSecret writes a password file in the test's folder.
func writeSecret(t testing.TB, pass string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(p, []byte(pass+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startEmulator runs servers in-process and returns the emulator and a CA file for them.
func startEmulator(t testing.TB, servers ...redfishemu.ServerConfig) (*redfishemu.Emulator, string) {
	t.Helper()
	log, _ := testLogger()
	emu, err := redfishemu.Start(redfishemu.Config{Servers: servers}, clock.Real{}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emu.Close)
	return emu, writeCA(t, emu)
}

// writeCA writes the emulator's certificate, its own CA, for ca_file.
func writeCA(t testing.TB, emu *redfishemu.Emulator) string {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, emu.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	return ca
}

// serverEndpoint is a Redfish endpoint (session auth) for a test's TLS server, its certificate
// written for ca_file.
func serverEndpoint(t testing.TB, srv *httptest.Server) Endpoint {
	t.Helper()
	host, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return Endpoint{Protocol: ProtocolRedfish, Host: host, Port: p, Username: "admin", PasswordFile: writeSecret(t, emuPassword), CAFile: ca}
}
