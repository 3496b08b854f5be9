package bmc

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestRedfishRequestEndsWithItsCall: a BMC that hangs on a request, at any step of an
// operation, holds it only as long as the operation's context lasts: cancelling that context
// ends the operation at once with the context's error, and nothing is asked of the BMC after
// it but the logout, which is made all the same (the session is given back). gofish fixes one context for a client's
// life, so each request used to wait out the call timeout instead.
func TestRedfishRequestEndsWithItsCall(t *testing.T) {
	const callTimeout = time.Minute
	reading := func(ctx context.Context, c *Controller) error { _, err := c.PowerReading(ctx, "n"); return err }
	tests := []struct {
		name  string
		power string
		hang  string // "METHOD path" of the request that hangs
		edit  func(*shapeBMC)
		op    func(context.Context, *Controller) error
	}{
		{name: "the login", power: "Off", hang: "POST /redfish/v1/SessionService/Sessions", op: on},
		{name: "the check of the systems", power: "Off", hang: "GET /redfish/v1/Systems", op: on},
		{name: "the state read", power: "Off", hang: "GET " + shapeSystem, op: on},
		{name: "the reset", power: "Off", hang: "POST " + shapeReset, op: on},
		{name: "the task", power: "Off", hang: "GET " + shapeTask, op: on,
			edit: func(b *shapeBMC) { b.reset = func(w http.ResponseWriter, _ int, _ func()) { taskAccepted(w) } }},
		{name: "a power reading", power: "On", hang: "GET /redfish/v1/Chassis", op: reading},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			hung := make(chan struct{})
			ended := make(chan struct{}) // the test ended: the hung request is let go
			var mu sync.Mutex
			var after []string // the requests that came after the hang began
			b := newShapeBMC(t, tt.power, func(b *shapeBMC) {
				if tt.edit != nil {
					tt.edit(b)
				}
				systemReads := 0
				b.intercept = func(w http.ResponseWriter, r *http.Request) bool {
					req := r.Method + " " + strings.TrimRight(r.URL.Path, "/")
					mu.Lock()
					select {
					case <-hung:
						after = append(after, req)
						mu.Unlock()
						return false
					default:
					}
					if req == "GET "+shapeSystem {
						systemReads++
					}
					// The state read is the system's second read (the first is the check).
					if req != tt.hang || (req == "GET "+shapeSystem && systemReads < 2) {
						mu.Unlock()
						return false
					}
					close(hung)
					mu.Unlock()
					// The body read, the server sees the client go (r.Context ends).
					_, _ = io.Copy(io.Discard, r.Body)
					select {
					case <-r.Context().Done(): // until rota gives up the request
					case <-ended:
					}
					return true
				}
			})
			t.Cleanup(func() { close(ended) }) // before the server's Close, which waits for its requests
			log, _ := testLogger()
			opts := redfishOptions(Options{Logger: log, Registerer: prometheus.NewRegistry()})
			opts.CallTimeout = callTimeout
			c, err := NewController(map[string]Endpoint{"n": serverEndpoint(t, b.srv)}, opts)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- tt.op(ctx, c) }()
			select {
			case <-hung:
			case err := <-done:
				t.Fatalf("the operation ended (%v) before the request that hangs", err)
			}
			cancel()
			select {
			case err = <-done:
			case <-time.After(callTimeout / 2):
				t.Fatalf("the operation still waits on the hung request %s after its context was cancelled", tt.hang)
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("error %v, want the context's (%v)", err, context.Canceled)
			}
			mu.Lock()
			defer mu.Unlock()
			logouts := 0
			for _, req := range after {
				if !strings.HasPrefix(req, "DELETE /redfish/v1/SessionService/Sessions/") {
					t.Errorf("after the context was cancelled rota asked %s (all: %q)", req, after)
					continue
				}
				logouts++
			}
			// A session was opened unless the login hung: it is given back all the same.
			if loggedIn := tt.name != "the login"; loggedIn && logouts != 1 {
				t.Errorf("%d logouts after the context was cancelled, want 1 (all: %q)", logouts, after)
			}
		})
	}
}
