package bmc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// fakeIPMITool puts an ipmitool first on PATH that answers only in the cipher suites given (as
// a BMC with suite 3 turned off does: it answers the session request with an error), and logs
// the suite of every call. ipmi_sim cannot play this BMC: it speaks 3 and not 17.
func fakeIPMITool(t *testing.T, accepts ...string) (calls func() []string) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	script := `#!/bin/sh
all="$*"
cs=
while [ $# -gt 0 ]; do case "$1" in -C) cs=$2; shift ;; esac; shift; done
echo "$cs" >> ` + log + `
case " ` + strings.Join(accepts, " ") + ` " in *" $cs "*) ;; *)
  echo "Error in open session response message : no matching cipher suite"
  echo "Error: Unable to establish IPMI v2 / RMCP+ session"
  exit 1 ;;
esac
case "$all" in
*dcmi*) echo "    Instantaneous power reading:                   412 Watts" ;;
*) echo "Chassis Power is on" ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "ipmitool"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() []string {
		b, err := os.ReadFile(log)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		return strings.Fields(string(b))
	}
}

// TestCipherSuiteFallback: with no cipher suite configured, a BMC that refuses suite 3 (it
// answers: the ping says so) is asked in 17, which it takes, and is asked in 17 first from
// then on, readings too. A configured suite is the only one tried. A BMC that refuses both
// is an authentication error naming both; one that is not there is no authentication error
// and is not asked twice.
func TestCipherSuiteFallback(t *testing.T) {
	ctx := context.Background()
	present := true
	d := &bmclibDialer{log: logrus.NewEntry(logrus.New()), callTimeout: 10 * time.Second,
		ping: func(context.Context, string) bool { return present }}
	ep := Endpoint{Protocol: ProtocolIPMI, Host: "127.0.0.1", Port: 623, Username: "admin"}
	state := func(ep Endpoint) error {
		c, err := d.Dial(ctx, "n1", ep, Secret("pw"))
		if err != nil {
			return err
		}
		if s, err := c.PowerState(ctx); err != nil || ParseState(s) != StateOn {
			t.Errorf("power state %q, %v", s, err)
		}
		return nil
	}

	calls := fakeIPMITool(t, "17")
	if err := state(ep); err != nil {
		t.Fatalf("suite 3 refused, 17 taken: %v", err)
	}
	if got := calls(); !slices.Equal(got, []string{"3", "17", "17"}) {
		t.Errorf("suites asked %v, want 3 then 17 (open), 17 (state)", got)
	}
	if err := state(ep); err != nil {
		t.Fatal(err)
	}
	if r, err := (bmcMeter{d: d}).read(ctx, "n1", ep, Secret("pw")); err != nil || r.Watts != 412 {
		t.Errorf("reading %+v, %v", r, err)
	}
	if got := calls()[3:]; !slices.Equal(got, []string{"17", "17", "17"}) {
		t.Errorf("then suites asked %v, want 17 alone", got)
	}

	calls = fakeIPMITool(t, "17")
	three := ep
	three.CipherSuite = 3
	var auth *AuthError
	if err := state(three); !errors.As(err, &auth) {
		t.Errorf("suite 3 configured, refused: %v, want an AuthError", err)
	}
	if got := calls(); !slices.Equal(got, []string{"3"}) {
		t.Errorf("suites asked %v, want the configured 3 alone", got)
	}

	calls = fakeIPMITool(t)
	err := state(Endpoint{Protocol: ProtocolIPMI, Host: "127.0.0.1", Port: 623, Username: "admin"})
	if !errors.As(err, &auth) || !strings.Contains(err.Error(), "cipher suite 3 refused too") {
		t.Errorf("both refused: %v, want an AuthError naming both", err)
	}
	if got := calls(); !slices.Equal(got, []string{"17", "3"}) {
		t.Errorf("suites asked %v, want 17 (taken last) then 3", got)
	}

	present = false
	calls = fakeIPMITool(t)
	if err := state(ep); err == nil || errors.As(err, &auth) {
		t.Errorf("no BMC: %v, want a transient error", err)
	}
	if got := calls(); len(got) != 1 {
		t.Errorf("no BMC: suites asked %v, want one", got)
	}
}
