package bmc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotahq/rota/bmc/redfishemu"
	"github.com/rotahq/rota/internal/testutil"
)

const emuPassword = "pa55-Very-Secret-7"

func emuServer(name, power string, faults redfishemu.Faults) redfishemu.ServerConfig {
	return redfishemu.ServerConfig{
		Name: name, Listen: "127.0.0.1:0", Username: "admin", Password: emuPassword, Power: power,
		TransitionDelay: redfishemu.Duration(150 * time.Millisecond), Seed: 7, Faults: faults,
	}
}

func redfishEndpoint(t testing.TB, emu *redfishemu.Emulator, name, ca string) Endpoint {
	t.Helper()
	host, port, err := net.SplitHostPort(emu.Server(name).Addr())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	return Endpoint{Protocol: ProtocolRedfish, Host: host, Port: p, Username: "admin", PasswordFile: writeSecret(t, emuPassword), CAFile: ca}
}

// redfishOptions are realOptions for the emulator. The emulator's transitions take 150 ms, so
// the confirmation and grace windows are budgets: a long one costs nothing when things go
// well, where a short one on a loaded 2-core CI machine could end a graceful off in a hard one
// or a power-on in not confirmed. The cases that wait a window out set it short themselves.
func redfishOptions(log Options) Options {
	o := realOptions(log)
	o.ResendAfter = 400 * time.Millisecond
	o.ConfirmTimeout = 10 * time.Second
	o.GracePeriod = 10 * time.Second
	o.Attempts = 4
	return o
}

// waitedOut are the windows of the cases that wait one out (a command never confirmed, an OS
// that ignores the graceful shutdown).
func waitedOut(o *Options) { o.ConfirmTimeout, o.GracePeriod = 3*time.Second, time.Second }

// TestRedfishOperations: every operation through bmclib against the emulator, with session
// and basic auth, with the certificate verified against its CA and with verification off, and
// against BMCs shaped like vendors'.
func TestRedfishOperations(t *testing.T) {
	variants := []struct {
		name   string
		edit   func(*Endpoint)
		server func(*redfishemu.ServerConfig)
	}{
		{"session auth, verified tls", func(*Endpoint) {}, nil},
		{"basic auth, verified tls", func(e *Endpoint) { e.BasicAuth = true }, nil},
		{"session auth, tls not verified", func(e *Endpoint) { e.CAFile, e.InsecureSkipVerify = "", true }, nil},
		{"system chosen by name", func(e *Endpoint) { e.SystemName = "WebFrontEnd483" }, nil},
		// Lenovo XCC, some iDRAC firmware: 412 to any Reset carrying If-Match (gofish#277).
		// rota sends none, so every command goes through.
		{"bmc that refuses If-Match on actions", func(*Endpoint) {}, func(s *redfishemu.ServerConfig) { s.Faults.RejectIfMatch = true }},
		{"bmc without sessions, basic auth", func(e *Endpoint) { e.BasicAuth = true }, func(s *redfishemu.ServerConfig) { s.NoSessions = true }},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			sc := emuServer("n", "Off", redfishemu.Faults{})
			if v.server != nil {
				v.server(&sc)
			}
			emu, ca := startEmulator(t, sc)
			ep := redfishEndpoint(t, emu, "n", ca)
			v.edit(&ep)
			log, _ := testLogger()
			c, err := NewController(map[string]Endpoint{"n": ep}, redfishOptions(Options{Logger: log}))
			if err != nil {
				t.Fatal(err)
			}
			srv := emu.Server("n")
			steps := []struct {
				name       string
				op         func(context.Context) error
				wantPower  string
				wantResets []string
			}{
				{"on", func(ctx context.Context) error { return c.On(ctx, "n") }, "On", []string{"On"}},
				{"on again sends nothing", func(ctx context.Context) error { return c.On(ctx, "n") }, "On", []string{"On"}},
				{"cycle is off then on (no PowerCycle in the mockup)", func(ctx context.Context) error { return c.Cycle(ctx, "n") }, "On", []string{"On", "ForceOff", "On"}},
				{"graceful off", func(ctx context.Context) error { return c.Off(ctx, "n", true) }, "Off", []string{"On", "ForceOff", "On", "GracefulShutdown"}},
				{"off again sends nothing", func(ctx context.Context) error { return c.Off(ctx, "n", false) }, "Off", []string{"On", "ForceOff", "On", "GracefulShutdown"}},
				{"on, then hard off", func(ctx context.Context) error {
					if err := c.On(ctx, "n"); err != nil {
						return err
					}
					return c.Off(ctx, "n", false)
				}, "Off", []string{"On", "ForceOff", "On", "GracefulShutdown", "On", "ForceOff"}},
			}
			for _, step := range steps {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				err := step.op(ctx)
				cancel()
				if err != nil {
					t.Fatalf("%s: %v", step.name, err)
				}
				// Confirmed: the emulator is already in the target state when the call returns.
				if got := srv.Power(); got != step.wantPower {
					t.Fatalf("%s: emulator power %s, want %s", step.name, got, step.wantPower)
				}
				if got := srv.Stats().Resets; fmt.Sprint(got) != fmt.Sprint(step.wantResets) {
					t.Fatalf("%s: resets %q, want %q", step.name, got, step.wantResets)
				}
			}
			st, err := c.State(context.Background(), "n")
			if err != nil || st != StateOff {
				t.Fatalf("State = %s, %v", st, err)
			}
			stats := srv.Stats()
			if ep.BasicAuth && stats.Logins != 0 {
				t.Errorf("basic auth made %d session logins", stats.Logins)
			}
			if !ep.BasicAuth && stats.Logins == 0 {
				t.Errorf("session auth made no login")
			}
			if stats.Sessions != 0 {
				t.Errorf("%d sessions left open (no logout)", stats.Sessions)
			}
			if stats.PreconditionErr != 0 {
				t.Errorf("%d resets answered 412", stats.PreconditionErr)
			}
		})
	}
}

// TestRedfishFaults: every injected fault, and the outcome the invariants demand.
func TestRedfishFaults(t *testing.T) {
	tests := []struct {
		name     string
		power    string
		faults   redfishemu.Faults
		server   func(*redfishemu.ServerConfig)
		edit     func(*Endpoint)
		tweak    func(*Options)
		op       func(context.Context, *Controller) error
		wantErr  error
		wantMsg  string // in the error, when set
		want     func(t *testing.T, s redfishemu.Stats)
		endPower string
	}{
		{
			name: "latency within the call timeout", power: "Off", faults: redfishemu.Faults{Latency: redfishemu.Duration(30 * time.Millisecond)},
			op: on, endPower: "On",
			want: func(t *testing.T, s redfishemu.Stats) { wantResets(t, s, "On") },
		},
		{
			name: "latency beyond the call timeout leaves the state unknown and sends nothing", power: "Off",
			faults: redfishemu.Faults{Latency: redfishemu.Duration(2 * time.Second)},
			tweak:  func(o *Options) { o.CallTimeout, o.Attempts = 300*time.Millisecond, 2 },
			op:     on, wantErr: ErrStateUnknown, endPower: "Off",
			want: func(t *testing.T, s redfishemu.Stats) { wantResets(t, s) },
		},
		{
			name: "some 5xx answers are retried, one command lands", power: "Off", faults: redfishemu.Faults{ErrorRate: 0.1},
			op: on, endPower: "On",
			want: func(t *testing.T, s redfishemu.Stats) {
				wantResets(t, s, "On")
				if s.Injected5xx == 0 {
					t.Errorf("no 5xx injected: the test proves nothing")
				}
			},
		},
		{
			name: "only 5xx answers: state unknown, no command", power: "Off", faults: redfishemu.Faults{ErrorRate: 1},
			op: on, wantErr: ErrStateUnknown, endPower: "Off",
			want: func(t *testing.T, s redfishemu.Stats) { wantResets(t, s) },
		},
		{
			name: "409 on same state is never provoked", power: "On", faults: redfishemu.Faults{ConflictOnSameState: true},
			op: on, endPower: "On",
			want: func(t *testing.T, s redfishemu.Stats) {
				wantResets(t, s)
				if s.Conflicts != 0 {
					t.Errorf("%d conflicts", s.Conflicts)
				}
			},
		},
		{
			name: "a dropped power-on is sent again", power: "Off", faults: redfishemu.Faults{DropPowerOn: 1},
			op: on, endPower: "On",
			want: func(t *testing.T, s redfishemu.Stats) { wantResets(t, s, "On", "On") },
		},
		{
			name: "power-ons always dropped: not confirmed after one re-send", power: "Off", faults: redfishemu.Faults{DropPowerOn: -1},
			tweak: waitedOut, op: on, wantErr: ErrNotConfirmed, endPower: "Off",
			want: func(t *testing.T, s redfishemu.Stats) { wantResets(t, s, "On", "On") },
		},
		{
			// iDRAC: PowerState stays Off while the server comes up, past ResendAfter, and the
			// re-sent On is answered 409 "already powered on". The first On stands.
			name: "slow power-on whose re-send is refused: confirmed when the node comes up", power: "Off",
			faults: redfishemu.Faults{HideTransitions: true, ConflictOnSameState: true},
			server: func(s *redfishemu.ServerConfig) { s.TransitionDelay = redfishemu.Duration(1500 * time.Millisecond) },
			op:     on, endPower: "On",
			want: func(t *testing.T, s redfishemu.Stats) {
				wantResets(t, s, "On")
				if s.Conflicts != 1 {
					t.Errorf("%d conflicts, want 1 (the re-send)", s.Conflicts)
				}
			},
		},
		{
			name: "no ForceOff among the reset types: hard off refused at once, nothing sent", power: "On",
			server: func(s *redfishemu.ServerConfig) { s.ResetTypes = []string{"On", "GracefulShutdown", "PushPowerButton"} },
			op:     off(false), wantErr: ErrRefused, wantMsg: "does not offer ResetType ForceOff", endPower: "On",
			want: func(t *testing.T, s redfishemu.Stats) { wantResets(t, s) },
		},
		{
			name: "no ForceOff among the reset types: cycle refused at once, nothing sent", power: "On",
			server: func(s *redfishemu.ServerConfig) { s.ResetTypes = []string{"On", "GracefulShutdown", "PushPowerButton"} },
			op:     cycle, wantErr: ErrRefused, wantMsg: "does not offer ResetType ForceOff", endPower: "On",
			want: func(t *testing.T, s redfishemu.Stats) { wantResets(t, s) },
		},
		{
			// Waiting the grace period (a minute here, past the test's 30 s) for a shutdown the
			// OS was never asked for would end not confirmed.
			name: "no GracefulShutdown among the reset types: graceful off forces off at once", power: "On",
			server: func(s *redfishemu.ServerConfig) { s.ResetTypes = []string{"On", "ForceOff", "PushPowerButton"} },
			tweak:  func(o *Options) { o.GracePeriod = time.Minute },
			op:     off(true), endPower: "Off",
			want: func(t *testing.T, s redfishemu.Stats) { wantResets(t, s, "ForceOff") },
		},
		{
			name: "no session service: refused at once, saying to use basic auth", power: "Off",
			server: func(s *redfishemu.ServerConfig) { s.NoSessions = true },
			op:     on, wantErr: ErrRefused, wantMsg: "offers no session service (its service root links no Sessions collection): set basic_auth: true", endPower: "Off",
			want: func(t *testing.T, s redfishemu.Stats) {
				wantResets(t, s)
				if s.Requests > 3 {
					t.Errorf("%d requests: retried", s.Requests)
				}
			},
		},
		{
			name: "login answered 405: refused at once, saying to use basic auth", power: "Off",
			faults: redfishemu.Faults{LoginStatus: 405},
			op:     on, wantErr: ErrRefused, wantMsg: "was answered 405): set basic_auth: true", endPower: "Off",
			want: func(t *testing.T, s redfishemu.Stats) {
				wantResets(t, s)
				if s.Logins != 1 {
					t.Errorf("%d logins, want 1", s.Logins)
				}
			},
		},
		{
			name: "login answered 404: refused at once, saying to use basic auth", power: "Off",
			faults: redfishemu.Faults{LoginStatus: 404},
			op:     on, wantErr: ErrRefused, wantMsg: "was answered 404): set basic_auth: true", endPower: "Off",
			want: func(t *testing.T, s redfishemu.Stats) {
				wantResets(t, s)
				if s.Logins != 1 {
					t.Errorf("%d logins, want 1", s.Logins)
				}
			},
		},
		{
			name: "login answered 503: transient, retried", power: "Off",
			faults: redfishemu.Faults{LoginStatus: 503},
			op:     on, wantErr: ErrStateUnknown, endPower: "Off",
			want: func(t *testing.T, s redfishemu.Stats) {
				wantResets(t, s)
				if s.Logins != 4 {
					t.Errorf("%d logins, want 4 (Attempts)", s.Logins)
				}
			},
		},
		{
			name: "stuck transition: not confirmed, no re-send", power: "Off", faults: redfishemu.Faults{StuckTransition: true},
			tweak: waitedOut, op: on, wantErr: ErrNotConfirmed, endPower: "PoweringOn",
			want: func(t *testing.T, s redfishemu.Stats) { wantResets(t, s, "On") },
		},
		{
			name: "hung OS: graceful off ends in a hard off", power: "On", faults: redfishemu.Faults{IgnoreGracefulShutdown: true},
			tweak: waitedOut, op: off(true), endPower: "Off",
			want: func(t *testing.T, s redfishemu.Stats) { wantResets(t, s, "GracefulShutdown", "ForceOff") },
		},
		{
			name: "rejected credentials: auth error, one login, no retry", power: "Off", faults: redfishemu.Faults{RejectCredentials: true},
			op: on, wantErr: ErrAuth, endPower: "Off",
			want: func(t *testing.T, s redfishemu.Stats) {
				wantResets(t, s)
				if s.Logins != 1 {
					t.Errorf("%d logins, want 1", s.Logins)
				}
			},
		},
		{
			name: "rejected basic auth: auth error, no retry", power: "Off", faults: redfishemu.Faults{RejectCredentials: true},
			edit: func(e *Endpoint) { e.BasicAuth = true },
			op:   on, wantErr: ErrAuth, endPower: "Off",
			want: func(t *testing.T, s redfishemu.Stats) {
				wantResets(t, s)
				if s.FailedAuth != 1 {
					t.Errorf("%d failed authentications, want 1", s.FailedAuth)
				}
			},
		},
		{
			name: "certificate not trusted: auth error, nothing sent", power: "Off",
			edit: func(e *Endpoint) { e.CAFile = "" },
			op:   on, wantErr: ErrAuth, endPower: "Off",
			want: func(t *testing.T, s redfishemu.Stats) {
				if s.Requests != 0 {
					t.Errorf("%d requests reached the BMC over an unverified connection", s.Requests)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sc := emuServer("n", tt.power, tt.faults)
			if tt.server != nil {
				tt.server(&sc)
			}
			emu, ca := startEmulator(t, sc)
			ep := redfishEndpoint(t, emu, "n", ca)
			if tt.edit != nil {
				tt.edit(&ep)
			}
			log, buf := testLogger()
			opts := redfishOptions(Options{Logger: log, Registerer: prometheus.NewRegistry()})
			if tt.tweak != nil {
				tt.tweak(&opts)
			}
			c, err := NewController(map[string]Endpoint{"n": ep}, opts)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err = tt.op(ctx, c)
			if tt.wantErr == nil && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if tt.wantMsg != "" && !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q lacks %q", err, tt.wantMsg)
			}
			if err != nil {
				t.Logf("error (as the caller sees it): %v", err)
			}
			srv := emu.Server("n")
			tt.want(t, srv.Stats())
			if got := srv.Power(); got != tt.endPower {
				t.Errorf("emulator power %s, want %s", got, tt.endPower)
			}
			assertNoSecret(t, emuPassword, buf.String(), err)
		})
	}
}

func wantResets(t *testing.T, s redfishemu.Stats, want ...string) {
	t.Helper()
	if fmt.Sprint(s.Resets) != fmt.Sprint(want) {
		t.Errorf("resets %q, want %q", s.Resets, want)
	}
}

func assertNoSecret(t *testing.T, secret, logs string, err error) {
	t.Helper()
	if strings.Contains(logs, secret) {
		t.Errorf("the password appears in the logs")
	}
	if err != nil && strings.Contains(err.Error(), secret) {
		t.Errorf("the password appears in the error")
	}
	if err != nil && strings.Contains(fmt.Sprintf("%+v %#v", err, err), secret) {
		t.Errorf("the password appears in the error's %%+v or %%#v")
	}
}

// TestRedfishSessionEnded: a BMC that ends rota's session while a power-on it accepted is being
// confirmed (a session timeout, its web server restarted) answers the reads 401. That is no
// wrong password: rota logs in again and confirms, and the command is not sent twice.
func TestRedfishSessionEnded(t *testing.T) {
	emu, ca := startEmulator(t, emuServer("n", "Off", redfishemu.Faults{StuckTransition: true}))
	srv := emu.Server("n")
	log, _ := testLogger()
	c, err := NewController(map[string]Endpoint{"n": redfishEndpoint(t, emu, "n", ca)}, redfishOptions(Options{Logger: log}))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.On(context.Background(), "n") }()
	testutil.Eventually(t, 10*time.Second, "the power-on accepted", func() error {
		if len(srv.Stats().Resets) == 0 {
			return errors.New("no reset yet")
		}
		return nil
	})
	logins := srv.Stats().Logins
	srv.EndSessions()
	// The transition holds until rota has logged in again (or given up, as it did).
	for srv.Stats().Logins == logins && len(done) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	if err := srv.SetFaults(redfishemu.Faults{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("On with the session ended while confirming: %v", err)
	}
	wantResets(t, srv.Stats(), "On")
	if p := srv.Power(); p != "On" {
		t.Errorf("emulator power %s, want On", p)
	}
}

// TestRedfishSeveralSystems: on a BMC that serves several ComputerSystems (a blade enclosure's
// manager), commands reach the one system_name picks and no other; where it picks none or
// several (bmclib would then command every system, or the first it read) nothing is sent.
func TestRedfishSeveralSystems(t *testing.T) {
	blades := []redfishemu.SystemConfig{{ID: "Blade2", Power: "On"}, {ID: "Blade3", Power: "On"}}
	twins := []redfishemu.SystemConfig{{ID: "Blade2", Name: "WebFrontEnd483", Power: "On"}}
	tests := []struct {
		name       string
		others     []redfishemu.SystemConfig
		systemName string
		wantErr    string // empty: the operations succeed
	}{
		{"picked by name", blades, "WebFrontEnd483", ""},
		{"one system, none named", nil, "", ""},
		{"several systems, none named", blades, "", `serves 3 systems (Name "WebFrontEnd483" at /redfish/v1/Systems/437XR1138R2, "Blade2" at /redfish/v1/Systems/Blade2, "Blade3" at /redfish/v1/Systems/Blade3): set system_name to the one this server is`},
		{"a name no system has", blades, "Blade9", `system_name "Blade9" names none of its systems`},
		{"a name that is not the only system's", nil, "WebFrontEnd48", `system_name "WebFrontEnd48" names none of its systems`},
		{"a name two systems share", twins, "WebFrontEnd483", `system_name "WebFrontEnd483" names 2 of its systems`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sc := emuServer("n", "Off", redfishemu.Faults{})
			sc.OtherSystems = tt.others
			emu, ca := startEmulator(t, sc)
			ep := redfishEndpoint(t, emu, "n", ca)
			ep.SystemName = tt.systemName
			log, _ := testLogger()
			c, err := NewController(map[string]Endpoint{"n": ep}, redfishOptions(Options{Logger: log}))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			srv := emu.Server("n")
			onErr := c.On(ctx, "n")
			offErr := c.Off(ctx, "n", false)
			_, readErr := c.PowerReading(ctx, "n")
			if tt.wantErr == "" {
				if onErr != nil || offErr != nil || readErr != nil {
					t.Fatalf("on: %v; off: %v; reading: %v", onErr, offErr, readErr)
				}
				wantResets(t, srv.Stats(), "On", "ForceOff")
			} else {
				for _, err := range []error{onErr, offErr, readErr} {
					if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.wantErr) {
						t.Errorf("error %v, want a refusal saying %q", err, tt.wantErr)
					}
				}
				wantResets(t, srv.Stats())
			}
			if got := srv.Stats().OtherResets; len(got) != 0 {
				t.Errorf("resets sent to the other systems: %q", got)
			}
			for _, o := range tt.others {
				if p := srv.OtherPower(o.ID); p != "On" {
					t.Errorf("%s is %s, was On", o.ID, p)
				}
			}
		})
	}
}
