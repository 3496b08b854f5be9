package bmc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/ipmisim"
	"github.com/rotahq/rota/internal/testutil"
)

// ipmiSim is one ipmi_sim process: a real IPMI-over-LAN BMC whose chassis_control script keeps
// the power state in a file and logs every power set, 0 or 1, and every soft shutdown, "soft".
// (A soft shutdown reaches the script as "set shutdown 1", with no OS behind it to act: the
// power stays on.)
type ipmiSim struct {
	port    int
	state   string // "0" or "1"
	setsLog string
	gate    string // simShutsDownAtGate's gate file
}

// open opens the sim's gate (simShutsDownAtGate).
func (s *ipmiSim) open(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(s.gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (s *ipmiSim) sets(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(s.setsLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(b), "set ", ""))
}

func needIPMI(t *testing.T) {
	t.Helper()
	testutil.Tool(t, "ipmi_sim")
	testutil.Tool(t, "ipmitool")
}

// simFault is what is wrong with an ipmi_sim's chassis.
type simFault int

const (
	simHealthy simFault = iota
	// simBrokenGet fails every state read (the BMC answers, the state is unknown).
	simBrokenGet
	// simStuck logs every power set and does nothing: a BMC that takes the command and whose
	// state never moves.
	simStuck
	// simMissesThirdRead fails the third state read alone: after the one that opens rota's
	// connection and rota's look, the one bmclib's ipmitool provider made before a soft
	// shutdown.
	simMissesThirdRead
	// simLags takes a power set and shows its state a second later, as a chassis whose status
	// follows the command behind it.
	simLags
	// simShutsDownAtGate has an OS that, asked to shut down (a soft off), powers the server off
	// once the sim's gate file exists (ipmiSim.open), however long that takes.
	simShutsDownAtGate
)

// startIPMISim runs ipmi_sim on a free port of 127.0.0.1 with the power initially on or off.
func startIPMISim(t *testing.T, on bool, fault simFault) *ipmiSim {
	t.Helper()
	return startIPMISimOn(t, "127.0.0.1", on, fault)
}

// startIPMISimOn runs ipmi_sim on a free port of addr.
func startIPMISimOn(t *testing.T, addr string, on bool, fault simFault) *ipmiSim {
	t.Helper()
	dir := t.TempDir()
	s := &ipmiSim{port: testutil.FreeUDPPort(t), state: filepath.Join(dir, "power"), setsLog: filepath.Join(dir, "sets.log"), gate: filepath.Join(dir, "gate")}
	initial := "0"
	if on {
		initial = "1"
	}
	if err := os.WriteFile(s.state, []byte(initial+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	get := fmt.Sprintf(`echo "power:$(cat %s)"`, s.state)
	switch fault {
	case simBrokenGet:
		get = "exit 1"
	case simMissesThirdRead:
		get = fmt.Sprintf(`echo x >> %[1]s.reads; [ "$(wc -l < %[1]s.reads)" -eq 3 ] && exit 1; %[2]s`, s.state, get)
	}
	apply := fmt.Sprintf(`echo "$4" > %s;`, s.state)
	switch fault {
	case simStuck:
		apply = ""
	case simLags:
		apply = fmt.Sprintf(`(sleep 1; echo "$4" > %s) >/dev/null 2>&1 &`, s.state)
	}
	shutdown := ""
	if fault == simShutsDownAtGate {
		shutdown = fmt.Sprintf(`(while [ ! -e %s ]; do sleep 0.05; done; echo 0 > %s) >/dev/null 2>&1 &`, s.gate, s.state)
		// The OS ends with the test, whatever it asked.
		t.Cleanup(func() { s.open(t) })
	}
	sim := ipmisim.BMC{Dir: dir, Name: "sim", Addr: addr, Port: s.port, Users: []ipmisim.User{
		{ID: 1, Name: "", Password: "test", Privilege: "user"},
		{ID: 2, Name: "admin", Password: "secret", Privilege: "admin"},
	}, Chassis: fmt.Sprintf(`#!/bin/sh
case "$2" in
get) %s ;;
set) case "$3" in
	power) %s echo "set $4" >> %[3]s ;;
	shutdown) %[4]s echo "set soft" >> %[3]s ;;
	esac ;;
esac
`, get, apply, s.setsLog, shutdown)}
	if err := sim.Write(); err != nil {
		t.Fatal(err)
	}
	testutil.Start(t, "ipmi_sim", sim.Args()...)
	hostPort := net.JoinHostPort(addr, strconv.Itoa(s.port))
	testutil.Eventually(t, 10*time.Second, "ipmi_sim answering an RMCP ping on "+hostPort, func() error {
		if !RMCPPing(context.Background(), hostPort) {
			return errors.New("no pong")
		}
		return nil
	})
	return s
}

func ipmiEndpoint(t *testing.T, port int, password string) Endpoint {
	return Endpoint{Protocol: ProtocolIPMI, Host: "127.0.0.1", Port: port, Username: "admin", PasswordFile: writeSecret(t, password)}
}

// TestIPMIAddresses: a BMC is reached at the address its endpoint gives, an IPv6 one (without
// brackets, as the config takes it) as well as an IPv4 one.
func TestIPMIAddresses(t *testing.T) {
	needIPMI(t)
	for _, tt := range []struct{ name, addr string }{
		{"ipv4", "127.0.0.1"},
		{"ipv6", "::1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sim := startIPMISimOn(t, tt.addr, false, simHealthy)
			ep := ipmiEndpoint(t, sim.port, "secret")
			ep.Host = tt.addr
			log, buf := testLogger()
			c, err := NewController(map[string]Endpoint{"n": ep}, realOptions(Options{Logger: log}))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := c.On(ctx, "n"); err != nil {
				t.Errorf("on: %v", err)
			}
			if err := c.Off(ctx, "n", true); err != nil {
				t.Errorf("graceful off: %v", err)
			}
			if st, err := c.State(ctx, "n"); err != nil || st != StateOff {
				t.Errorf("state %s, %v; want off", st, err)
			}
			// ipmi_sim has no OS to shut down: the grace period ends in a hard off.
			if got, want := sim.sets(t), []string{"1", "soft", "0"}; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("chassis sets %q, want %q", got, want)
			}
			if t.Failed() {
				t.Logf("log:\n%s", buf.String())
			}
		})
	}
}

// realOptions are short waits for BMCs that answer in milliseconds.
func realOptions(log Options) Options {
	log.Clock = clock.Real{}
	log.PollInterval = 100 * time.Millisecond
	log.MinCommandInterval = 50 * time.Millisecond
	log.ConfirmTimeout = 10 * time.Second
	log.GracePeriod = time.Second
	log.CallTimeout = 10 * time.Second
	log.BackoffBase = 50 * time.Millisecond
	return log
}

// TestIPMIOperations drives three ipmi_sim BMCs at once through every operation.
func TestIPMIOperations(t *testing.T) {
	needIPMI(t)
	sims := map[string]*ipmiSim{}
	eps := map[string]Endpoint{}
	for i := range 3 {
		name := fmt.Sprintf("node%d", i)
		sims[name] = startIPMISim(t, false, simHealthy)
		eps[name] = ipmiEndpoint(t, sims[name].port, "secret")
	}
	log, _ := testLogger()
	c, err := NewController(eps, realOptions(Options{Logger: log}))
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name     string
		op       func(context.Context, string) error
		want     State
		wantSets []string // the chassis script's log after the step
	}{
		{"on", c.On, StateOn, []string{"1"}},
		{"on again sends nothing", c.On, StateOn, []string{"1"}},
		{"cycle", c.Cycle, StateOn, []string{"1", "0", "1"}},
		// ipmi_sim has no OS to shut down: the soft request changes nothing and the grace
		// period ends in a hard off.
		{"graceful off falls back to hard off", func(ctx context.Context, n string) error { return c.Off(ctx, n, true) }, StateOff, []string{"1", "0", "1", "soft", "0"}},
		{"off again sends nothing", func(ctx context.Context, n string) error { return c.Off(ctx, n, false) }, StateOff, []string{"1", "0", "1", "soft", "0"}},
		{"cycle of an off node powers on", c.Cycle, StateOn, []string{"1", "0", "1", "soft", "0", "1"}},
		{"hard off", func(ctx context.Context, n string) error { return c.Off(ctx, n, false) }, StateOff, []string{"1", "0", "1", "soft", "0", "1", "0"}},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			var wg sync.WaitGroup
			for name, sim := range sims {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					if err := step.op(ctx, name); err != nil {
						t.Errorf("%s: %v", name, err)
						return
					}
					st, err := c.State(ctx, name)
					if err != nil || st != step.want {
						t.Errorf("%s: state %s, %v; want %s", name, st, err, step.want)
					}
					if got := sim.sets(t); fmt.Sprint(got) != fmt.Sprint(step.wantSets) {
						t.Errorf("%s: chassis sets %q, want %q", name, got, step.wantSets)
					}
				}()
			}
			wg.Wait()
		})
	}
}

// TestIPMIFailures: the failures that must not turn into commands or long hangs.
func TestIPMIFailures(t *testing.T) {
	needIPMI(t)
	good := startIPMISim(t, false, simHealthy)
	broken := startIPMISim(t, false, simBrokenGet)
	unreachable := testutil.FreeUDPPort(t)
	tests := []struct {
		name     string
		ep       Endpoint
		sim      *ipmiSim
		timeout  time.Duration
		wantErr  error
		maxTime  time.Duration
		maxOpens float64
	}{
		{"wrong password fails fast without retries", ipmiEndpoint(t, good.port, "wrong"), good, 30 * time.Second, ErrAuth, 5 * time.Second, 1},
		{"unreachable bmc is bounded by the context", ipmiEndpoint(t, unreachable, "secret"), nil, 3 * time.Second, ErrStateUnknown, 6 * time.Second, 3},
		{"unreadable state sends no command", ipmiEndpoint(t, broken.port, "secret"), broken, 30 * time.Second, ErrStateUnknown, 10 * time.Second, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, buf := testLogger()
			reg := prometheus.NewRegistry()
			c, err := NewController(map[string]Endpoint{"n": tt.ep}, realOptions(Options{Logger: log, Registerer: reg}))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			start := time.Now()
			err = c.On(ctx, "n")
			took := time.Since(start)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("On: %v, want %v", err, tt.wantErr)
			}
			t.Logf("On failed after %s: %v", took.Round(time.Millisecond), err)
			if took > tt.maxTime {
				t.Errorf("took %s, want under %s", took, tt.maxTime)
			}
			if opens := metricValue(t, reg, "rota_bmc_requests_total", map[string]string{"operation": "open"}); opens > tt.maxOpens {
				t.Errorf("%v connection attempts, want at most %v", opens, tt.maxOpens)
			}
			if tt.sim != nil && len(tt.sim.sets(t)) != 0 {
				t.Errorf("power commands reached the BMC: %q", tt.sim.sets(t))
			}
			for _, secret := range []string{"wrong", "secret"} {
				if strings.Contains(err.Error(), "-P "+secret) || strings.Contains(buf.String(), "IPMITOOL_PASSWORD="+secret) {
					t.Errorf("password %q leaked", secret)
				}
			}
		})
	}
}

// TestIPMIStuckBMC: a BMC that takes every power command and whose state never moves. Nothing
// it does counts as done: a hard off is not confirmed, and neither is a cycle, whose On after
// IPMI's native cycle would have read as done (the end state of a cycle is its start state).
func TestIPMIStuckBMC(t *testing.T) {
	needIPMI(t)
	sim := startIPMISim(t, true, simStuck)
	log, _ := testLogger()
	opts := realOptions(Options{Logger: log})
	opts.ConfirmTimeout = time.Second
	c, err := NewController(map[string]Endpoint{"n": ipmiEndpoint(t, sim.port, "secret")}, opts)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name     string
		op       func(context.Context, string) error
		wantSets []string // the chassis script's log after the step
	}{
		{"hard off", func(ctx context.Context, n string) error { return c.Off(ctx, n, false) }, []string{"0"}},
		{"cycle", c.Cycle, []string{"0", "0"}},
	}
	for _, step := range steps {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := step.op(ctx, "n")
		cancel()
		if !errors.Is(err, ErrNotConfirmed) {
			t.Errorf("%s: %v, want %v", step.name, err, ErrNotConfirmed)
		}
		if got := sim.sets(t); fmt.Sprint(got) != fmt.Sprint(step.wantSets) {
			t.Errorf("%s: chassis sets %q, want %q", step.name, got, step.wantSets)
		}
	}
}

// TestIPMIGracefulOffAsksTheOS: a BMC that misses one state read, the one bmclib's ipmitool
// provider makes before a soft shutdown, still gets the soft shutdown (bmclib answered success
// without sending it, and rota cut the power after a grace period spent waiting for nothing).
func TestIPMIGracefulOffAsksTheOS(t *testing.T) {
	needIPMI(t)
	sim := startIPMISim(t, true, simMissesThirdRead)
	log, _ := testLogger()
	c, err := NewController(map[string]Endpoint{"n": ipmiEndpoint(t, sim.port, "secret")}, realOptions(Options{Logger: log}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Off(ctx, "n", true); err != nil {
		t.Fatal(err)
	}
	// ipmi_sim has no OS to shut down: the grace period ends in a hard off.
	if got, want := sim.sets(t), []string{"soft", "0"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("chassis sets %q, want %q", got, want)
	}
}

// TestIPMIShutdownsOverlapUnderOneSlot: four ipmi_sim servers shut down gracefully at once
// through real ipmitool under MaxConcurrent 1, each OS held until the test opens its gate: every
// one is asked while none has finished, then all go off with no hard off. Holding the slot from
// the first request to the confirmed off (as until 2026-12-05), only one is ever asked.
func TestIPMIShutdownsOverlapUnderOneSlot(t *testing.T) {
	needIPMI(t)
	sims := map[string]*ipmiSim{}
	eps := map[string]Endpoint{}
	for i := range 4 {
		name := fmt.Sprintf("node%d", i)
		sims[name] = startIPMISim(t, true, simShutsDownAtGate)
		eps[name] = ipmiEndpoint(t, sims[name].port, "secret")
	}
	log, _ := testLogger()
	opts := realOptions(Options{Logger: log, MaxConcurrent: 1})
	opts.GracePeriod = time.Minute
	c, err := NewController(eps, opts)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(sims))
	for name := range sims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			errs <- c.Off(ctx, name, true)
		}()
	}
	openAll := func() {
		for _, s := range sims {
			s.open(t)
		}
	}
	// On the old code the test fails here; the OSes finish and the operations end before the
	// sims stop.
	defer func() { openAll(); wg.Wait() }()
	testutil.Eventually(t, 20*time.Second, "every server asked to shut down while none has finished", func() error {
		asked := 0
		for _, s := range sims {
			if slices.Contains(s.sets(t), "soft") {
				asked++
			}
		}
		if asked < len(sims) {
			return fmt.Errorf("%d of %d asked", asked, len(sims))
		}
		return nil
	})
	openAll()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	for name, s := range sims {
		if got := s.sets(t); !slices.Equal(got, []string{"soft"}) {
			t.Errorf("%s: chassis sets %q, want one soft off, no hard off", name, got)
		}
	}
}

// TestIPMIToolNotices: ipmitool prints notices to stderr around a command's answer on many real
// BMCs (a BMC that answers Get HPM.x Capabilities with an error code gets "Get HPM.x
// Capabilities request failed, compcode = d4" at every session's start, some a failed Close
// Session at its end), and bmclib reads stdout and stderr together. The chassis' line decides
// the state; a notice is no unknown state. ipmi_sim prints none: an ipmitool that adds them,
// first on PATH, stands in for such a BMC.
func TestIPMIToolNotices(t *testing.T) {
	needIPMI(t)
	real := testutil.Tool(t, "ipmitool")
	tests := []struct {
		name   string
		before string // printed to stderr before ipmitool runs
		after  string // and after
		fault  simFault
	}{
		{name: "a notice before the answer", before: "Get HPM.x Capabilities request failed, compcode = d4"},
		{name: "a notice after the answer", after: "Close Session command failed: Invalid Session ID in request"},
		// bmclib's ipmitool provider takes a power-on answered after a notice for a failure:
		// with the state behind the command, it was sent again and the operation failed.
		{name: "a notice before the answer, the state a second behind", before: "Get HPM.x Capabilities request failed, compcode = d4", fault: simLags},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			script := fmt.Sprintf("#!/bin/sh\n[ -n %[1]q ] && echo %[1]q >&2\n%[2]q \"$@\"\nrc=$?\n[ -n %[3]q ] && echo %[3]q >&2\nexit $rc\n", tt.before, real, tt.after)
			if err := os.WriteFile(filepath.Join(dir, "ipmitool"), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
			sim := startIPMISim(t, false, tt.fault)
			log, buf := testLogger()
			reg := prometheus.NewRegistry()
			c, err := NewController(map[string]Endpoint{"n": ipmiEndpoint(t, sim.port, "secret")}, realOptions(Options{Logger: log, Registerer: reg}))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if st, err := c.State(ctx, "n"); err != nil || st != StateOff {
				t.Errorf("state %s, %v; want off", st, err)
			}
			if err := c.On(ctx, "n"); err != nil {
				t.Errorf("on: %v", err)
			}
			if err := c.Off(ctx, "n", false); err != nil {
				t.Errorf("off: %v", err)
			}
			if got, want := sim.sets(t), []string{"1", "0"}; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("chassis sets %q, want %q", got, want)
			}
			for _, op := range []string{"on", "off"} {
				if n := metricValue(t, reg, "rota_bmc_requests_total", map[string]string{"operation": op, "result": "success"}); n != 1 {
					t.Errorf("%v successful %s requests, want 1", n, op)
				}
			}
			if t.Failed() {
				t.Logf("log:\n%s", buf.String())
			}
		})
	}
}
