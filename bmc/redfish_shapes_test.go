package bmc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rotahq/rota/internal/clock"
)

// shapeBMC is a scripted Redfish service in the shapes of vendors' BMCs that the emulator does
// not take (task monitors, odd bodies, dropped connections). Its system powers through
// transit reads of PoweringOn/PoweringOff after an accepted Reset.
type shapeBMC struct {
	srv      *httptest.Server
	absolute bool   // member URIs with the scheme and host
	foreign  bool   // the system linked on another host (shapeForeign)
	slash    string // "" or "/": appended to every @odata.id
	// reset answers the nth Reset, calling move where the power starts to move (nil: it moves,
	// answered 204).
	reset func(w http.ResponseWriter, n int, move func())
	// system answers a read of the system (nil: the system's JSON).
	system func(w http.ResponseWriter, n int, doc map[string]any) bool
	// task answers the nth read of the task monitor (nil: 404).
	task    func(w http.ResponseWriter, n int)
	transit int
	hide    bool // PowerState keeps the old state until a transition is done, as iDRAC's does
	// foreignLogin: the Sessions collection linked on another host (shapeForeign).
	foreignLogin bool
	// intercept sees every request first; true: it answered (nil: none).
	intercept func(w http.ResponseWriter, r *http.Request) bool

	mu     sync.Mutex
	power  string // On or Off
	target string
	left   int // reads of the transition left
	resets []string
	reads  int
	tasks  int
}

const (
	shapeSystem = "/redfish/v1/Systems/System.Embedded.1"
	shapeReset  = shapeSystem + "/Actions/ComputerSystem.Reset"
	shapeTask   = "/redfish/v1/TaskService/TaskMonitors/JID_1"
	// shapeForeign is another host, which rota must never be asked to follow a link to.
	shapeForeign = "https://192.0.2.9"
)

func newShapeBMC(t testing.TB, power string, edit func(*shapeBMC)) *shapeBMC {
	b := &shapeBMC{power: power, transit: 2}
	if edit != nil {
		edit(b)
	}
	b.srv = httptest.NewTLSServer(b)
	t.Cleanup(b.srv.Close)
	return b
}

func (b *shapeBMC) id(p string) string {
	if b.absolute {
		p = b.srv.URL + p
	}
	return p + b.slash
}

func (b *shapeBMC) stats() (power string, resets []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.power, append([]string(nil), b.resets...)
}

func shapeJSON(w http.ResponseWriter, code int, doc any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(doc)
}

func shapeError(w http.ResponseWriter, code int, id, msg string) {
	shapeJSON(w, code, map[string]any{"error": map[string]any{"code": id, "message": msg,
		"@Message.ExtendedInfo": []any{map[string]any{"MessageId": id, "Message": msg, "Severity": "Critical"}}}})
}

func (b *shapeBMC) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if b.intercept != nil && b.intercept(w, r) {
		return
	}
	path := strings.TrimRight(r.URL.Path, "/")
	switch {
	case path == "/redfish/v1" && r.Method == http.MethodGet:
		sessions := b.id("/redfish/v1/SessionService/Sessions")
		if b.foreignLogin {
			sessions = shapeForeign + "/redfish/v1/SessionService/Sessions"
		}
		shapeJSON(w, 200, map[string]any{
			"@odata.id": b.id("/redfish/v1"), "Id": "RootService", "RedfishVersion": "1.11.0",
			"Systems":        map[string]any{"@odata.id": b.id("/redfish/v1/Systems")},
			"SessionService": map[string]any{"@odata.id": b.id("/redfish/v1/SessionService")},
			"Links":          map[string]any{"Sessions": map[string]any{"@odata.id": sessions}},
		})
	case path == "/redfish/v1/SessionService/Sessions" && r.Method == http.MethodPost:
		w.Header().Set("X-Auth-Token", "token")
		w.Header().Set("Location", "/redfish/v1/SessionService/Sessions/1")
		shapeJSON(w, 201, map[string]any{"@odata.id": "/redfish/v1/SessionService/Sessions/1", "Id": "1"})
	case strings.HasPrefix(path, "/redfish/v1/SessionService/Sessions/") && r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
	case r.Header.Get("X-Auth-Token") != "token":
		shapeError(w, 401, "Base.1.0.NoValidSession", "no session")
	case path == "/redfish/v1/Systems" && r.Method == http.MethodGet:
		member := b.id(shapeSystem)
		if b.foreign {
			member = shapeForeign + shapeSystem
		}
		shapeJSON(w, 200, map[string]any{"@odata.id": b.id("/redfish/v1/Systems"), "Members@odata.count": 1,
			"Members": []any{map[string]any{"@odata.id": member}}})
	case path == shapeSystem && r.Method == http.MethodGet:
		b.serveSystem(w)
	case path == shapeReset && r.Method == http.MethodPost:
		b.serveReset(w, r)
	case path == shapeTask && r.Method == http.MethodGet && b.task != nil:
		b.mu.Lock()
		b.tasks++
		n := b.tasks
		b.mu.Unlock()
		b.task(w, n)
	default:
		shapeError(w, 404, "Base.1.0.ResourceMissingAtURI", "not found: "+path)
	}
}

func (b *shapeBMC) serveSystem(w http.ResponseWriter) {
	b.mu.Lock()
	b.reads++
	n := b.reads
	state := b.power
	if b.target != "" {
		if !b.hide {
			state = "Powering" + b.target
		}
		if b.left--; b.left <= 0 {
			b.power, b.target = b.target, ""
		}
	}
	b.mu.Unlock()
	doc := map[string]any{
		"@odata.id": b.id(shapeSystem), "@odata.type": "#ComputerSystem.v1_13_0.ComputerSystem",
		"Id": "System.Embedded.1", "Name": "System", "PowerState": state,
		"Actions": map[string]any{"#ComputerSystem.Reset": map[string]any{
			"target":                            b.id(shapeReset),
			"ResetType@Redfish.AllowableValues": []string{"On", "ForceOff", "GracefulShutdown", "ForceRestart"},
		}},
	}
	if b.system != nil && b.system(w, n, doc) {
		return
	}
	shapeJSON(w, 200, doc)
}

func (b *shapeBMC) serveReset(w http.ResponseWriter, r *http.Request) {
	var body struct{ ResetType string }
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		shapeError(w, 400, "Base.1.0.MalformedJSON", "malformed")
		return
	}
	b.mu.Lock()
	b.resets = append(b.resets, body.ResetType)
	n := len(b.resets)
	b.mu.Unlock()
	move := func() {
		target := map[string]string{"On": "On", "ForceOff": "Off", "GracefulShutdown": "Off"}[body.ResetType]
		b.mu.Lock()
		defer b.mu.Unlock()
		if target != "" && target != b.power {
			b.target, b.left = target, b.transit
		}
	}
	if b.reset == nil {
		move()
		w.WriteHeader(http.StatusNoContent)
		return
	}
	b.reset(w, n, move)
}

// hangUp drops the connection without an answer.
func hangUp(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

// taskAccepted answers a Reset 202 Accepted with a task monitor, as some BMCs do.
func taskAccepted(w http.ResponseWriter) {
	w.Header().Set("Location", shapeTask)
	shapeJSON(w, http.StatusAccepted, map[string]any{"@odata.id": "/redfish/v1/TaskService/Tasks/JID_1", "TaskState": "Running"})
}

// taskEnds answers the task monitor's first read 202 (running), the others with the task in
// state, with message.
func taskEnds(state, message string) func(http.ResponseWriter, int) {
	return func(w http.ResponseWriter, n int) {
		if n == 1 {
			taskAccepted(w)
			return
		}
		shapeJSON(w, http.StatusOK, map[string]any{"@odata.id": "/redfish/v1/TaskService/Tasks/JID_1", "TaskState": state, "TaskStatus": "Critical",
			"Messages": []any{map[string]any{"MessageId": "IDRAC.2.8.SYS446", "Message": message, "Severity": "Critical"}}})
	}
}

// waitLog is the real clock, but for waits of a second or more: those it records and cuts to
// a millisecond (no backoff or poll of the tests is as long; a Retry-After is).
type waitLog struct {
	clock.Real
	mu   sync.Mutex
	long []time.Duration
}

func (c *waitLog) Sleep(ctx context.Context, d time.Duration) error {
	if d >= time.Second {
		c.mu.Lock()
		c.long = append(c.long, d)
		c.mu.Unlock()
		d = time.Millisecond
	}
	return c.Real.Sleep(ctx, d)
}

func (c *waitLog) waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.long...)
}

// failFirst answers the first Reset with fail (the power does not move) and the others 204.
func failFirst(fail func(http.ResponseWriter)) func(http.ResponseWriter, int, func()) {
	return func(w http.ResponseWriter, n int, move func()) {
		if n == 1 {
			fail(w)
			return
		}
		move()
		w.WriteHeader(http.StatusNoContent)
	}
}

// spoilRead answers the second read of the system with spoil (the first is the dial's check
// of which system commands reach).
func spoilRead(spoil func(w http.ResponseWriter, doc map[string]any)) func(http.ResponseWriter, int, map[string]any) bool {
	return func(w http.ResponseWriter, n int, doc map[string]any) bool {
		if n != 2 {
			return false
		}
		spoil(w, doc)
		return true
	}
}

// TestRedfishVendorShapes: Redfish services shaped like vendors' BMCs beyond the emulator's
// (task monitors, other answers to a Reset, absolute links, Retry-After, odd and broken bodies,
// a BMC that hangs up). Every command is confirmed by PowerState, sent again only after a read
// shows the node still not there, and a state that cannot be read sends nothing. A task that
// fails ends the operation with the BMC's message, and a wait the BMC asks for is waited.
func TestRedfishVendorShapes(t *testing.T) {
	const html = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
	htmlPage := func(code int) func(http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(code)
			_, _ = w.Write([]byte(html))
		}
	}
	busyFor := func(code int, after string) func(http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", after)
			shapeError(w, code, "Base.1.0.ServiceTemporarilyUnavailable", "busy")
		}
	}
	busy := busyFor(http.StatusServiceUnavailable, "7")
	const psu = "Unable to perform the power operation because PSU 2 is not present."
	tests := []struct {
		name     string
		power    string
		edit     func(*shapeBMC)
		tweak    func(*Options)
		op       func(context.Context, *Controller) error
		wantErr  error
		errText  string // in the error, when set
		resets   []string
		endPower string
		waits    []time.Duration // the waits of a second or more, when set
	}{
		{name: "202 with a task monitor: sent once, confirmed by PowerState", power: "Off", op: on, resets: []string{"On"}, endPower: "On",
			edit: func(b *shapeBMC) {
				b.reset = func(w http.ResponseWriter, _ int, move func()) { move(); taskAccepted(w) }
				b.task = taskEnds("Completed", "The task completed successfully.")
			}},
		{name: "202 whose task monitor is gone: confirmed by PowerState", power: "Off", op: on, resets: []string{"On"}, endPower: "On",
			edit: func(b *shapeBMC) {
				b.reset = func(w http.ResponseWriter, _ int, move func()) { move(); taskAccepted(w) }
			}},
		// The task's failure ends the operation with the BMC's reason, as a refusal: not sent
		// again, not waited out to the confirm deadline.
		{name: "202 whose task ends in Exception: refused with the bmc's message, not sent again", power: "Off", op: on, tweak: waitedOut,
			wantErr: ErrRefused, errText: psu, resets: []string{"On"}, endPower: "Off",
			edit: func(b *shapeBMC) {
				b.reset = func(w http.ResponseWriter, _ int, _ func()) { taskAccepted(w) }
				b.task = taskEnds("Exception", psu)
			}},
		{name: "202 whose task is Cancelled: refused", power: "Off", op: on, tweak: waitedOut,
			wantErr: ErrRefused, errText: `ended "Cancelled"`, resets: []string{"On"}, endPower: "Off",
			edit: func(b *shapeBMC) {
				b.reset = func(w http.ResponseWriter, _ int, _ func()) { taskAccepted(w) }
				b.task = taskEnds("Cancelled", "The task was cancelled.")
			}},
		// The OS was not asked, as when the BMC refuses the request: no grace period to wait.
		{name: "a graceful shutdown whose task ends in Exception: forced off at once", power: "On", op: off(true),
			tweak:  func(o *Options) { o.GracePeriod = time.Minute },
			resets: []string{"GracefulShutdown", "ForceOff"}, endPower: "Off",
			edit: func(b *shapeBMC) {
				b.reset = func(w http.ResponseWriter, n int, move func()) {
					if n == 1 {
						taskAccepted(w)
						return
					}
					move()
					w.WriteHeader(http.StatusNoContent)
				}
				b.task = taskEnds("Exception", "The operating system did not respond.")
			}},
		{name: "200 with @Message.ExtendedInfo", power: "Off", op: on, resets: []string{"On"}, endPower: "On",
			edit: func(b *shapeBMC) {
				b.reset = func(w http.ResponseWriter, _ int, move func()) {
					move()
					shapeJSON(w, http.StatusOK, map[string]any{"@Message.ExtendedInfo": []any{map[string]any{"MessageId": "Base.1.8.Success", "Severity": "OK"}}})
				}
			}},
		{name: "PoweringOff for eight reads", power: "On", op: off(false), resets: []string{"ForceOff"}, endPower: "Off",
			edit: func(b *shapeBMC) { b.transit = 8 }},
		{name: "PowerState null: unknown, nothing sent", power: "Off", op: on, wantErr: ErrStateUnknown, endPower: "Off",
			edit: func(b *shapeBMC) {
				b.system = func(_ http.ResponseWriter, _ int, doc map[string]any) bool { doc["PowerState"] = nil; return false }
			}},
		{name: "PowerState missing: unknown, nothing sent", power: "Off", op: on, wantErr: ErrStateUnknown, endPower: "Off",
			edit: func(b *shapeBMC) {
				b.system = func(_ http.ResponseWriter, _ int, doc map[string]any) bool { delete(doc, "PowerState"); return false }
			}},
		{name: "@odata.id with trailing slashes", power: "Off", op: on, resets: []string{"On"}, endPower: "On",
			edit: func(b *shapeBMC) { b.slash = "/" }},
		// Every link, the Sessions collection's and the Reset's target too, on the endpoint's
		// host: followed.
		{name: "absolute URIs on the endpoint's host: followed", power: "Off", op: on, resets: []string{"On"}, endPower: "On",
			edit: func(b *shapeBMC) { b.absolute = true }},
		{name: "a system linked on another host: refused naming it, nothing sent", power: "Off", op: on,
			wantErr: ErrRefused, errText: shapeForeign + shapeSystem, endPower: "Off",
			edit: func(b *shapeBMC) { b.foreign = true }},
		// As a system there: refused, not retried (the login never reaches any host).
		{name: "the login linked on another host: refused naming it, nothing sent", power: "Off", op: on,
			wantErr: ErrRefused, errText: shapeForeign + "/redfish/v1/SessionService/Sessions", endPower: "Off",
			edit: func(b *shapeBMC) { b.foreignLogin = true }},
		{name: "503 with Retry-After to a read: retried after the wait asked", power: "Off", op: on, resets: []string{"On"}, endPower: "On",
			waits: []time.Duration{7 * time.Second},
			edit:  func(b *shapeBMC) { b.system = spoilRead(func(w http.ResponseWriter, _ map[string]any) { busy(w) }) }},
		{name: "429 with Retry-After to a read: retried after the wait asked", power: "Off", op: on, resets: []string{"On"}, endPower: "On",
			waits: []time.Duration{2 * time.Second},
			edit: func(b *shapeBMC) {
				b.system = spoilRead(func(w http.ResponseWriter, _ map[string]any) { busyFor(http.StatusTooManyRequests, "2")(w) })
			}},
		{name: "Retry-After of an hour to a read: a minute waited", power: "Off", op: on, resets: []string{"On"}, endPower: "On",
			waits: []time.Duration{maxRetryAfter},
			edit: func(b *shapeBMC) {
				b.system = spoilRead(func(w http.ResponseWriter, _ map[string]any) { busyFor(http.StatusServiceUnavailable, "3600")(w) })
			}},
		{name: "503 with Retry-After to the reset: read, then sent again after the wait asked", power: "Off", op: on, resets: []string{"On", "On"}, endPower: "On",
			waits: []time.Duration{7 * time.Second},
			edit:  func(b *shapeBMC) { b.reset = failFirst(busy) }},
		{name: "an HTML page to a read: retried", power: "Off", op: on, resets: []string{"On"}, endPower: "On",
			edit: func(b *shapeBMC) {
				b.system = spoilRead(func(w http.ResponseWriter, _ map[string]any) { htmlPage(http.StatusOK)(w) })
			}},
		{name: "truncated JSON to a read: retried", power: "Off", op: on, resets: []string{"On"}, endPower: "On",
			edit: func(b *shapeBMC) {
				b.system = spoilRead(func(w http.ResponseWriter, doc map[string]any) {
					j, _ := json.Marshal(doc)
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write(j[:len(j)/2])
				})
			}},
		{name: "500 with an extended error to the reset: read, then sent again", power: "Off", op: on, resets: []string{"On", "On"}, endPower: "On",
			edit: func(b *shapeBMC) {
				b.reset = failFirst(func(w http.ResponseWriter) {
					shapeError(w, http.StatusInternalServerError, "Base.1.0.InternalError", "internal error")
				})
			}},
		{name: "a proxy's HTML 502 to the reset: read, then sent again", power: "Off", op: on, resets: []string{"On", "On"}, endPower: "On",
			edit: func(b *shapeBMC) { b.reset = failFirst(htmlPage(http.StatusBadGateway)) }},
		{name: "hung up after taking the reset: the read shows it, not sent again", power: "Off", op: on, resets: []string{"On"}, endPower: "On",
			edit: func(b *shapeBMC) { b.reset = func(w http.ResponseWriter, _ int, move func()) { move(); hangUp(w) } }},
		{name: "hung up before taking the reset: read, then sent again", power: "Off", op: on, resets: []string{"On", "On"}, endPower: "On",
			edit: func(b *shapeBMC) { b.reset = failFirst(hangUp) }},
		// iDRAC: the first On landed, its answer was lost, PowerState stays Off while the
		// server comes up, and the On sent again is answered 409 "already powered ON". The
		// first stands: the state decides.
		// (No re-send while confirming: this case is the one sent again before it.)
		{name: "hung up after taking the reset, the one sent again refused: confirmed by the state", power: "Off", op: on, resets: []string{"On", "On"}, endPower: "On",
			tweak: func(o *Options) { o.ResendAfter = time.Minute },
			edit: func(b *shapeBMC) {
				b.hide, b.transit = true, 6
				b.reset = func(w http.ResponseWriter, n int, move func()) {
					if n == 1 {
						move()
						hangUp(w)
						return
					}
					shapeError(w, http.StatusConflict, "IDRAC.2.8.PSU501", "Server is already powered ON.")
				}
			}},
		// Waiting the grace period (a minute, past the test's 30 s) for a request that never
		// reached the BMC would cut the power of an OS never asked to shut down.
		// A lost answer is no refusal: the shutdown may be under way, with PowerState On until
		// the OS is done, so no read can show it did not take.
		{name: "hung up after taking a graceful shutdown: not sent again, the state decides", power: "On", op: off(true),
			tweak:  func(o *Options) { o.GracePeriod = time.Minute },
			resets: []string{"GracefulShutdown"}, endPower: "Off",
			edit: func(b *shapeBMC) {
				b.hide, b.transit = true, 6
				b.reset = func(w http.ResponseWriter, _ int, move func()) { move(); hangUp(w) }
			}},
		{name: "503 to a graceful shutdown: read, then sent again", power: "On", op: off(true), tweak: func(o *Options) { o.GracePeriod = time.Minute },
			resets: []string{"GracefulShutdown", "GracefulShutdown"}, endPower: "Off",
			edit: func(b *shapeBMC) { b.reset = failFirst(busy) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newShapeBMC(t, tt.power, tt.edit)
			log, buf := testLogger()
			opts := redfishOptions(Options{Logger: log, Registerer: prometheus.NewRegistry()})
			waits := &waitLog{}
			opts.Clock = waits
			if tt.tweak != nil {
				tt.tweak(&opts)
			}
			c, err := NewController(map[string]Endpoint{"n": serverEndpoint(t, b.srv)}, opts)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err = tt.op(ctx, c)
			if tt.wantErr == nil && err != nil {
				t.Errorf("unexpected error: %v", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
			if tt.errText != "" && (err == nil || !strings.Contains(err.Error(), tt.errText)) {
				t.Errorf("error %v, want it to say %q", err, tt.errText)
			}
			if got := waits.waits(); tt.waits != nil && fmt.Sprint(got) != fmt.Sprint(tt.waits) {
				t.Errorf("waited %v, want %v", got, tt.waits)
			}
			power, resets := b.stats()
			if fmt.Sprint(resets) != fmt.Sprint(tt.resets) {
				t.Errorf("resets %q, want %q", resets, tt.resets)
			}
			if power != tt.endPower {
				t.Errorf("power %s, want %s", power, tt.endPower)
			}
			if t.Failed() {
				t.Logf("log:\n%s", buf.String())
			}
		})
	}
}

// movingBMC is a small Redfish service (basic auth) whose systems, by URI, set changes: a blade
// reseated in another slot of its enclosure, two blades that swapped slots, a firmware update
// that renamed a system's Id. A URI no system is at answers 404.
type movingBMC struct {
	mu      sync.Mutex
	systems map[string]string // URI -> Name
	power   map[string]string // Name -> PowerState
	reset   []string          // the URIs Resets were posted to
}

func (b *movingBMC) set(systems map[string]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.systems = systems
}

func (b *movingBMC) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	defer b.mu.Unlock()
	path := strings.TrimSuffix(r.URL.Path, "/")
	if u, p, ok := r.BasicAuth(); path != "/redfish/v1" && (!ok || u != "admin" || p != emuPassword) {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	system, action := strings.CutSuffix(path, "/Actions/ComputerSystem.Reset")
	name, found := b.systems[system]
	switch {
	case path == "/redfish/v1":
		_, _ = w.Write([]byte(`{"@odata.id":"/redfish/v1","Id":"RootService","RedfishVersion":"1.6.0","Systems":{"@odata.id":"/redfish/v1/Systems"}}`))
	case path == "/redfish/v1/Systems":
		var members []string
		for uri := range b.systems {
			members = append(members, fmt.Sprintf(`{"@odata.id":%q}`, uri))
		}
		fmt.Fprintf(w, `{"Members":[%s],"Members@odata.count":%d}`, strings.Join(members, ","), len(members))
	case found && !action && r.Method == http.MethodGet:
		fmt.Fprintf(w, `{"@odata.id":%q,"Name":%q,"PowerState":%q,"Actions":{"#ComputerSystem.Reset":{"target":%q}}}`, system, name, b.power[name], system+"/Actions/ComputerSystem.Reset")
	case found && action && r.Method == http.MethodPost:
		var body struct{ ResetType string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		b.reset = append(b.reset, system)
		b.power[name] = map[string]string{"On": "On", "ForceOff": "Off"}[body.ResetType]
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"code":"Base.1.8.ResourceMissingAtURI","message":"not found"}}`))
	}
}

// TestRedfishSystemMoved: the system rota checked once is no longer where it was: its URI
// answers 404 (a blade reseated in another slot, a firmware update that renamed the system's
// Id), or another system is there (two blades swapped slots). The operation that meets it
// fails, sending nothing, and the next checks the BMC's systems again and commands the system
// where it is now: never another blade, nor a node failing until rota restarts.
func TestRedfishSystemMoved(t *testing.T) {
	const (
		slot3 = "/redfish/v1/Systems/Slot3"
		slot5 = "/redfish/v1/Systems/Slot5"
	)
	tests := []struct {
		name, systemName string
		before, after    map[string]string
		want             string // where the power-on must go
	}{
		{"a blade reseated in another slot", "blade7", map[string]string{slot3: "blade7"}, map[string]string{slot5: "blade7"}, slot5},
		{"the only system's Id renamed", "", map[string]string{"/redfish/v1/Systems/1": "blade7"},
			map[string]string{"/redfish/v1/Systems/System.Embedded.1": "blade7"}, "/redfish/v1/Systems/System.Embedded.1"},
		{"two blades swapped slots", "blade7", map[string]string{slot3: "blade7", slot5: "blade9"}, map[string]string{slot3: "blade9", slot5: "blade7"}, slot5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &movingBMC{systems: tt.before, power: map[string]string{"blade7": "Off", "blade9": "Off"}}
			srv := httptest.NewTLSServer(b)
			t.Cleanup(srv.Close)
			ep := serverEndpoint(t, srv)
			ep.BasicAuth, ep.SystemName = true, tt.systemName
			log, _ := testLogger()
			c, err := NewController(map[string]Endpoint{"n": ep}, redfishOptions(Options{Logger: log}))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if st, err := c.State(ctx, "n"); err != nil || st != StateOff {
				t.Fatalf("state %s, %v; want off", st, err)
			}
			b.set(tt.after)
			_, _ = c.State(ctx, "n") // may meet the system gone, or another in its place
			if st, err := c.State(ctx, "n"); err != nil || st != StateOff {
				t.Errorf("state after the move %s, %v; want off", st, err)
			}
			if err := c.On(ctx, "n"); err != nil {
				t.Errorf("on after the move: %v", err)
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			if fmt.Sprint(b.reset) != fmt.Sprint([]string{tt.want}) {
				t.Errorf("resets posted to %q, want %q", b.reset, tt.want)
			}
			if b.power["blade9"] != "Off" {
				t.Error("another blade was powered on")
			}
		})
	}
}
