package bmc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotahq/rota/internal/testutil"
)

// metricValue sums the counter or histogram-count samples of name whose labels include want.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	return testutil.MetricValue(t, reg, name, want)
}

func newTestController(t *testing.T, proto Protocol, bmcs map[string]*fakeBMC, clock *fakeClock, tweak func(*Options)) (*Controller, *prometheus.Registry) {
	t.Helper()
	eps := map[string]Endpoint{}
	for name := range bmcs {
		eps[name] = Endpoint{Protocol: proto, Host: "bmc-" + name, Username: "admin", PasswordEnv: "BMC_PASSWORD"}
	}
	log, _ := testLogger()
	reg := prometheus.NewRegistry()
	opts := Options{
		Logger: log, Clock: clock, Registerer: reg,
		PollInterval: time.Second, ConfirmTimeout: time.Minute, GracePeriod: 30 * time.Second,
		ResendAfter: 10 * time.Second, MinCommandInterval: 5 * time.Second,
		Jitter:    func() float64 { return 0.5 },
		LookupEnv: func(string) (string, bool) { return "s3cret", true },
		dial:      &fakeDialer{bmcs: bmcs},
	}
	if tweak != nil {
		tweak(&opts)
	}
	c, err := NewController(eps, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c, reg
}

func TestControllerOperations(t *testing.T) {
	authErr := &AuthError{Node: "n", Err: errors.New("401: invalid credentials")}
	tests := []struct {
		name     string
		proto    Protocol
		bmc      script
		op       func(context.Context, *Controller) error
		wantErr  error // matched with errors.Is; nil: success
		wantCmds []string
		wantRaw  string // for state-unknown errors from an unparseable answer
	}{
		{name: "on when already on sends nothing", bmc: script{raw: "on"}, op: on},
		{name: "on from off", bmc: script{raw: "off", settleAfter: 3 * time.Second}, op: on, wantCmds: []string{"on"}},
		{name: "ipmitool answer is normalised", bmc: script{raw: "Chassis Power is on\n"}, op: on},
		{name: "unreadable state sends nothing", bmc: script{raw: "off", stateErr: []error{errTransient, errTransient, errTransient}}, op: on, wantErr: ErrStateUnknown},
		{name: "unreachable bmc sends nothing", bmc: script{raw: "off", dialErr: []error{errTransient, errTransient, errTransient}}, op: off(false), wantErr: ErrStateUnknown},
		{name: "unparseable state sends nothing", bmc: script{raw: "Paused"}, op: on, wantErr: ErrStateUnknown, wantRaw: "Paused"},
		// Unknown means no command on every path: graceful off and cycle read the state first
		// too, over IPMI and Redfish alike.
		{name: "unreadable state: graceful off sends nothing", bmc: script{raw: "on", stateErr: []error{errTransient, errTransient, errTransient}}, op: off(true), wantErr: ErrStateUnknown},
		{name: "unreadable state: ipmi graceful off sends nothing", proto: ProtocolIPMI, bmc: script{raw: "on", stateErr: []error{errTransient, errTransient, errTransient}}, op: off(true), wantErr: ErrStateUnknown},
		{name: "unparseable state: graceful off sends nothing", bmc: script{raw: "Paused"}, op: off(true), wantErr: ErrStateUnknown, wantRaw: "Paused"},
		{name: "unreadable state: ipmi cycle sends nothing", proto: ProtocolIPMI, bmc: script{raw: "on", stateErr: []error{errTransient, errTransient, errTransient}}, op: cycle, wantErr: ErrStateUnknown},
		{name: "unparseable state: ipmi cycle sends nothing", proto: ProtocolIPMI, bmc: script{raw: "Paused"}, op: cycle, wantErr: ErrStateUnknown, wantRaw: "Paused"},
		{name: "unreadable state: redfish cycle sends nothing", bmc: script{raw: "on", stateErr: []error{errTransient, errTransient, errTransient, errTransient, errTransient, errTransient}}, op: cycle, wantErr: ErrStateUnknown},
		{name: "transient read failure is retried", bmc: script{raw: "off", stateErr: []error{errTransient}}, op: on, wantCmds: []string{"on"}},
		{name: "auth failure is not retried", bmc: script{raw: "off", dialErr: []error{authErr}}, op: on, wantErr: ErrAuth},
		{name: "failed command retried after looking", bmc: script{raw: "off", setErr: []error{errTransient}}, op: on, wantCmds: []string{"on", "on"}},
		// A command that failed may have reached the BMC: with the state then unreadable, it
		// is not sent again blind.
		{name: "failed command, then unreadable state: no re-send", bmc: script{raw: "off", setErr: []error{errTransient}, stateErr: []error{nil, errTransient, errTransient, errTransient}}, op: on, wantErr: ErrStateUnknown, wantCmds: []string{"on"}},
		{name: "failed hard off, then unreadable state: no re-send", bmc: script{raw: "on", setErr: []error{errTransient}, stateErr: []error{nil, errTransient, errTransient, errTransient}}, op: off(false), wantErr: ErrStateUnknown, wantCmds: []string{"off"}},
		{name: "failed command that took effect is not re-sent", bmc: script{raw: "off", setErr: []error{errTransient}, applyOnErr: true}, op: on, wantCmds: []string{"on"}},
		{name: "refused command with node already there", bmc: script{raw: "off", setErr: []error{&RefusedError{Status: 409}}, applyOnErr: true}, op: on, wantCmds: []string{"on"}},
		{name: "refused command is not retried", bmc: script{raw: "off", setErr: []error{&RefusedError{Status: 400}}}, op: on, wantErr: ErrRefused, wantCmds: []string{"on"}},
		{name: "dropped power-on is re-sent", bmc: script{raw: "off", ignore: map[string]int{"on": 1}}, op: on, wantCmds: []string{"on", "on"}},
		{name: "power-on that never lands is not confirmed", bmc: script{raw: "off", ignore: map[string]int{"on": 9}}, op: on, wantErr: ErrNotConfirmed, wantCmds: []string{"on", "on"}},
		{name: "stuck transition is not confirmed", bmc: script{raw: "off", settleAfter: time.Hour}, op: on, wantErr: ErrNotConfirmed, wantCmds: []string{"on"}},
		// A refused re-send ends nothing: the state decides, here at the deadline.
		{name: "power-on whose re-send is refused is judged by the state", bmc: script{raw: "off", ignore: map[string]int{"on": 1}, setErr: []error{nil, &RefusedError{Status: 409}}}, op: on, wantErr: ErrNotConfirmed, wantCmds: []string{"on", "on"}},
		{name: "transition in progress is waited out", bmc: script{raw: "poweringon", pending: "on"}, op: on},
		{name: "hard off", bmc: script{raw: "on"}, op: off(false), wantCmds: []string{"off"}},
		{name: "off when already off sends nothing", bmc: script{raw: "off"}, op: off(true)},
		{name: "graceful off", bmc: script{raw: "on", settleAfter: 5 * time.Second}, op: off(true), wantCmds: []string{"soft"}},
		{name: "graceful off reported failed but accepted", bmc: script{raw: "on", setErr: []error{errors.New("failed to set power state")}, applyOnErr: true}, op: off(true), wantCmds: []string{"soft"}},
		// A graceful shutdown whose request failed is sent again after a look, as any command:
		// waiting the grace period out for a request that never reached the BMC would cut the
		// power of an OS never asked to shut down.
		{name: "failed graceful off retried after looking", bmc: script{raw: "on", setErr: []error{errTransient}}, op: off(true), wantCmds: []string{"soft", "soft"}},
		{name: "failed graceful off, then unreadable state: no re-send, no hard off", bmc: script{raw: "on", setErr: []error{errTransient}, stateErr: []error{nil, errTransient, errTransient, errTransient}}, op: off(true), wantErr: ErrStateUnknown, wantCmds: []string{"soft"}},
		{name: "graceful off failing every time waits the grace period, then hard off", bmc: script{raw: "on", setErr: []error{errTransient, errTransient, errTransient}}, op: off(true), wantCmds: []string{"soft", "soft", "soft", "off"}},
		{name: "graceful off falls back to hard off", bmc: script{raw: "on", ignore: map[string]int{"soft": 1}}, op: off(true), wantCmds: []string{"soft", "off"}},
		{name: "graceful off refused goes hard at once", bmc: script{raw: "on", setErr: []error{&RefusedError{Status: 400}}}, op: off(true), wantCmds: []string{"soft", "off"}},
		{name: "ipmi cycle is off then on", proto: ProtocolIPMI, bmc: script{raw: "on"}, op: cycle, wantCmds: []string{"off", "on"}},
		{name: "cycle the bmc ignores is not confirmed", proto: ProtocolIPMI, bmc: script{raw: "on", ignore: map[string]int{"cycle": 1, "off": 1}}, op: cycle, wantErr: ErrNotConfirmed, wantCmds: []string{"off"}},
		{name: "redfish cycle is off then on", bmc: script{raw: "on"}, op: cycle, wantCmds: []string{"off", "on"}},
		{name: "cycle of an off node powers it on", proto: ProtocolIPMI, bmc: script{raw: "off"}, op: cycle, wantCmds: []string{"on"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			b := fakeBMC{script: tt.bmc, clock: clock}
			if b.pending != "" {
				b.pendingAt = clock.Now().Add(3 * time.Second)
			}
			proto := tt.proto
			if proto == "" {
				proto = ProtocolRedfish
			}
			c, _ := newTestController(t, proto, map[string]*fakeBMC{"n": &b}, clock, nil)
			err := tt.op(context.Background(), c)
			if tt.wantErr == nil && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(b.commands, tt.wantCmds) {
				t.Errorf("commands sent %q, want %q", b.commands, tt.wantCmds)
			}
			var su *StateUnknownError
			if tt.wantRaw != "" && (!errors.As(err, &su) || su.Raw != tt.wantRaw) {
				t.Errorf("want a StateUnknownError with raw %q, got %v", tt.wantRaw, err)
			}
			if b.active != 0 {
				t.Errorf("%d connections left open", b.active)
			}
			if errors.Is(tt.wantErr, ErrAuth) && b.dials != 1 {
				t.Errorf("auth failure: %d dials, want exactly 1 (no retry)", b.dials)
			}
		})
	}
}

func on(ctx context.Context, c *Controller) error    { return c.On(ctx, "n") }
func cycle(ctx context.Context, c *Controller) error { return c.Cycle(ctx, "n") }
func off(graceful bool) func(context.Context, *Controller) error {
	return func(ctx context.Context, c *Controller) error { return c.Off(ctx, "n", graceful) }
}

func TestControllerState(t *testing.T) {
	clock := newFakeClock()
	b := &fakeBMC{clock: clock, script: script{raw: "PoweringOff"}}
	c, reg := newTestController(t, ProtocolRedfish, map[string]*fakeBMC{"n": b}, clock, nil)
	st, err := c.State(context.Background(), "n")
	if err != nil || st != StateTransitioning {
		t.Fatalf("State = %v, %v; want transitioning", st, err)
	}
	if _, err := c.State(context.Background(), "nope"); !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("unknown node: %v", err)
	}
	if got := metricValue(t, reg, "rota_bmc_operations_total", map[string]string{"protocol": "redfish", "operation": "state", "result": "success"}); got != 1 {
		t.Errorf("rota_bmc_operations_total{state,success} = %v, want 1", got)
	}
	if got := metricValue(t, reg, "rota_bmc_operations_total", map[string]string{"result": "unknown_node"}); got != 1 {
		t.Errorf("rota_bmc_operations_total{unknown_node} = %v, want 1", got)
	}
	if got := metricValue(t, reg, "rota_bmc_provider_requests_total", map[string]string{"provider": "gofish"}); got != 1 {
		t.Errorf("rota_bmc_provider_requests_total{gofish} = %v, want 1", got)
	}
}

func TestControllerContextBoundsWaiting(t *testing.T) {
	clock := newFakeClock()
	b := &fakeBMC{clock: clock, script: script{raw: "off", settleAfter: time.Hour}}
	c, _ := newTestController(t, ProtocolRedfish, map[string]*fakeBMC{"n": b}, clock, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.On(ctx, "n"); !errors.Is(err, context.Canceled) {
		t.Fatalf("On with a cancelled context: %v", err)
	}
	if len(b.commands) != 0 {
		t.Fatalf("commands sent with a cancelled context: %q", b.commands)
	}
}

// TestControllerConcurrency runs many operations at once: at most one per node, at most
// MaxConcurrent requests out in all, and commands to one node at least MinCommandInterval apart.
func TestControllerConcurrency(t *testing.T) {
	clock := newFakeClock()
	global := &maxTracker{}
	bmcs := map[string]*fakeBMC{}
	for i := range 20 {
		bmcs[fmt.Sprintf("n%02d", i)] = &fakeBMC{clock: clock, requests: global, script: script{raw: "off"}}
	}
	c, _ := newTestController(t, ProtocolIPMI, bmcs, clock, func(o *Options) { o.MaxConcurrent = 4 })
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for name := range bmcs {
		for range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- c.Cycle(context.Background(), name)
				errs <- c.Off(context.Background(), name, false)
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if global.max > 4 || global.max == 0 {
		t.Errorf("%d requests out at once, want 1..4", global.max)
	}
	for name, b := range bmcs {
		for i := 1; i < len(b.at); i++ {
			if gap := b.at[i].Sub(b.at[i-1]); gap < 5*time.Second {
				t.Errorf("%s: commands %d and %d only %s apart", name, i-1, i, gap)
			}
		}
	}
}

// TestShutdownsShareTheSlots: an operation holds a slot of MaxConcurrent only while one of its
// requests is out, not through a graceful shutdown's wait: ten servers whose OS shuts down only
// once all ten were asked (the gate) all go off gracefully under two slots, and no more than two
// requests are ever out at once. Holding a slot for the whole operation, the first two would wait
// out their grace period for the eight that cannot be asked, then be forced off.
func TestShutdownsShareTheSlots(t *testing.T) {
	clock := newFakeClock()
	gate := &softGate{n: 10}
	reqs := &maxTracker{}
	bmcs := map[string]*fakeBMC{}
	for i := range gate.n {
		bmcs[fmt.Sprintf("n%02d", i)] = &fakeBMC{clock: clock, requests: reqs, gate: gate, script: script{raw: "on"}}
	}
	c, _ := newTestController(t, ProtocolRedfish, bmcs, clock, func(o *Options) {
		o.MaxConcurrent, o.GracePeriod, o.ConfirmTimeout = 2, time.Hour, time.Hour
	})
	var wg sync.WaitGroup
	for name := range bmcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Off(context.Background(), name, true); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for name, b := range bmcs {
		if !slices.Equal(b.commands, []string{actionSoft}) || b.raw != "off" {
			t.Errorf("%s: commands %q, now %s; want one graceful shutdown, off", name, b.commands, b.raw)
		}
	}
	if reqs.max > 2 {
		t.Errorf("%d requests out at once under 2 slots", reqs.max)
	}
}

// TestCommandSpacing: a second command to one BMC waits out MinCommandInterval after the
// first (zero: the default second), and a negative interval asks for no wait: the on then
// follows the off's confirmation, one poll later.
func TestCommandSpacing(t *testing.T) {
	for _, tt := range []struct {
		interval, want time.Duration
	}{{0, time.Second}, {3 * time.Second, 3 * time.Second}, {-1, 100 * time.Millisecond}} {
		clock := newFakeClock()
		b := &fakeBMC{clock: clock, script: script{raw: "on"}}
		c, _ := newTestController(t, ProtocolIPMI, map[string]*fakeBMC{"n": b}, clock, func(o *Options) {
			o.MinCommandInterval, o.PollInterval = tt.interval, 100*time.Millisecond
		})
		if err := c.Off(context.Background(), "n", false); err != nil {
			t.Fatal(err)
		}
		if err := c.On(context.Background(), "n"); err != nil {
			t.Fatal(err)
		}
		if len(b.at) != 2 {
			t.Fatalf("interval %s: commands %q, want off and on", tt.interval, b.commands)
		}
		if gap := b.at[1].Sub(b.at[0]); gap != tt.want {
			t.Errorf("interval %s: commands %s apart, want %s", tt.interval, gap, tt.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	c := &Controller{opts: Options{BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second}}
	tests := []struct {
		name    string
		attempt int
		jitter  float64
		want    time.Duration
	}{
		{"first, no jitter", 0, 0, 50 * time.Millisecond},
		{"first, full jitter", 0, 0.999999, 99999950 * time.Nanosecond},
		{"third", 2, 0, 200 * time.Millisecond},
		{"capped", 10, 0, 500 * time.Millisecond},
		{"huge attempt stays capped", 1000, 0.5, 750 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.opts.Jitter = func() float64 { return tt.jitter }
			if got := c.backoff(tt.attempt); got != tt.want {
				t.Errorf("backoff(%d) = %s, want %s", tt.attempt, got, tt.want)
			}
		})
	}
}

func TestControllerOperationTimeout(t *testing.T) {
	clock := newFakeClock()
	b := &fakeBMC{clock: clock, script: script{raw: "off"}}
	c, _ := newTestController(t, ProtocolRedfish, map[string]*fakeBMC{"n": b}, clock, func(o *Options) { o.OperationTimeout = time.Nanosecond })
	if err := c.On(context.Background(), "n"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("On past its operation timeout: %v", err)
	}
	if len(b.commands) != 0 {
		t.Fatalf("commands sent past the operation timeout: %q", b.commands)
	}
}

// A BMC password that cannot be read at start (password_env unset, password_file missing, or
// open to every user) is said then, naming the node and never a secret: it was first seen at a
// failed command.
func TestControllerSaysAMissingPasswordAtStart(t *testing.T) {
	log, buf := testLogger()
	open := filepath.Join(t.TempDir(), "open")
	if err := os.WriteFile(open, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	eps := map[string]Endpoint{
		"open": {Protocol: ProtocolIPMI, Host: "bmc-open", Username: "admin", PasswordFile: open},
		"env":  {Protocol: ProtocolIPMI, Host: "bmc-env", Username: "admin", PasswordEnv: "UNSET_BMC_PASSWORD"},
		"file": {Protocol: ProtocolIPMI, Host: "bmc-file", Username: "admin", PasswordFile: filepath.Join(t.TempDir(), "missing")},
		"ok":   {Protocol: ProtocolIPMI, Host: "bmc-ok", Username: "admin", PasswordEnv: "BMC_PASSWORD"},
	}
	_, err := NewController(eps, Options{Logger: log, Clock: newFakeClock(), LookupEnv: func(k string) (string, bool) {
		return "s3cret", k == "BMC_PASSWORD"
	}})
	if err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"node=env", "UNSET_BMC_PASSWORD is not set", "node=file", "reading password_file", "node=open", "is open to every user (mode 0644)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "node=ok") || strings.Contains(out, "s3cret") {
		t.Errorf("the log names a node whose password is there, or a secret:\n%s", out)
	}
}

// TestOneBMCSeveralSystems: nodes that one BMC serves (a blade enclosure's manager, each blade
// a system picked by system_name) share that BMC's limits: one operation at a time and
// MinCommandInterval between two commands, whichever node they are for; nodes of different
// BMCs do not wait for each other.
func TestOneBMCSeveralSystems(t *testing.T) {
	tests := []struct {
		name    string
		hosts   [2]string // the two nodes' BMC hosts
		minGap  time.Duration
		maxConc int
	}{
		{name: "two systems of one bmc", hosts: [2]string{"enclosure1", "enclosure1"}, minGap: 5 * time.Second, maxConc: 1},
		{name: "one bmc named in another case", hosts: [2]string{"enclosure1", "Enclosure1"}, minGap: 5 * time.Second, maxConc: 1},
		{name: "two bmcs", hosts: [2]string{"enclosure1", "enclosure2"}, maxConc: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			conc := &maxTracker{}
			bmcs := map[string]*fakeBMC{}
			eps := map[string]Endpoint{}
			for i, host := range tt.hosts {
				name := fmt.Sprintf("blade%d", i+1)
				bmcs[name] = &fakeBMC{clock: clock, maxConc: conc, script: script{raw: "off"}}
				eps[name] = Endpoint{Protocol: ProtocolRedfish, Host: host, Username: "admin", PasswordEnv: "BMC_PASSWORD", SystemName: name}
			}
			log, _ := testLogger()
			c, err := NewController(eps, Options{
				Logger: log, Clock: clock, PollInterval: time.Second, MinCommandInterval: 5 * time.Second,
				LookupEnv: func(string) (string, bool) { return "s3cret", true },
				dial:      &fakeDialer{bmcs: bmcs},
			})
			if err != nil {
				t.Fatal(err)
			}
			// One after the other: the second command follows the first's confirmation, a
			// poll later, unless it waits for the BMC.
			for _, name := range []string{"blade1", "blade2"} {
				if err := c.On(context.Background(), name); err != nil {
					t.Fatal(err)
				}
			}
			gap := bmcs["blade2"].at[0].Sub(bmcs["blade1"].at[0])
			if gap < tt.minGap {
				t.Errorf("commands %s apart, want at least %s", gap, tt.minGap)
			}
			if tt.minGap == 0 && gap >= 5*time.Second {
				t.Errorf("commands %s apart: nodes of different bmcs waited for each other", gap)
			}
			// At once: one connection at a time to one BMC.
			var wg sync.WaitGroup
			for name := range bmcs {
				for range 20 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if _, err := c.State(context.Background(), name); err != nil {
							t.Error(err)
						}
					}()
				}
			}
			wg.Wait()
			if conc.max > tt.maxConc {
				t.Errorf("%d connections at once, want at most %d", conc.max, tt.maxConc)
			}
		})
	}
}

// TestPowerOnGoesFirstForASlot: a power-on's requests take the next free slot before the
// requests of other operations waiting, so work waiting for a server does not wait out the
// queue that thousands of shutdowns polling their servers keep at the cap. Under one slot held
// by a state read, five graceful power-offs and then a power-on wait for it; once it is freed,
// the power-on's command is the first any BMC gets. Served in turn, it came after the five
// shutdowns'.
func TestPowerOnGoesFirstForASlot(t *testing.T) {
	clock := newFakeClock()
	sent := &sentLog{}
	hold := make(chan struct{})
	bmcs := map[string]*fakeBMC{"busy": {clock: clock, hold: hold, script: script{raw: "on"}}}
	for i := range 5 {
		bmcs[fmt.Sprintf("idle%d", i)] = &fakeBMC{clock: clock, sent: sent, script: script{raw: "on"}}
	}
	bmcs["wanted"] = &fakeBMC{clock: clock, sent: sent, script: script{raw: "off"}}
	c, reg := newTestController(t, ProtocolRedfish, bmcs, clock, func(o *Options) { o.MaxConcurrent = 1 })
	var wg sync.WaitGroup
	run := func(f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil {
				t.Error(err)
			}
		}()
	}
	waiting := func(n float64) {
		t.Helper()
		testutil.Eventually(t, 10*time.Second, fmt.Sprintf("%v requests waiting", n), func() error {
			if v := metricValue(t, reg, "rota_bmc_requests_waiting", nil); v != n {
				return fmt.Errorf("%v waiting", v)
			}
			return nil
		})
	}
	run(func() error { _, err := c.State(context.Background(), "busy"); return err })
	testutil.Eventually(t, 10*time.Second, "the slot taken", func() error {
		if v := metricValue(t, reg, "rota_bmc_requests_in_flight", nil); v != 1 {
			return fmt.Errorf("%v requests out", v)
		}
		return nil
	})
	for i := range 5 {
		run(func() error { return c.Off(context.Background(), fmt.Sprintf("idle%d", i), true) })
	}
	waiting(5)
	run(func() error { return c.On(context.Background(), "wanted") })
	waiting(6)
	close(hold)
	wg.Wait()
	if len(sent.bmcs) != 6 || sent.bmcs[0] != bmcs["wanted"] {
		first := "none"
		for name, b := range bmcs {
			if len(sent.bmcs) > 0 && sent.bmcs[0] == b {
				first = name
			}
		}
		t.Errorf("%d commands, the first to %s; want 6, the first the power-on of wanted", len(sent.bmcs), first)
	}
	waiting(0)
}
