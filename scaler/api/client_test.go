package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/api/apifake"
	"github.com/rotahq/rota/scaler/fleet"
)

// TestClientRoundTrip: what the backend says is what the client reads, through real HTTP.
func TestClientRoundTrip(t *testing.T) {
	h := newHarness(t, nil)
	ts := httptest.NewServer(h.srv)
	defer ts.Close()
	c, err := api.NewClient(ts.URL+"/", api.NewToken(apiToken), ts.Client())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := h.backend.Status(ctx)
	if !reflect.DeepEqual(st, want) {
		t.Errorf("Status = %+v\nwant %+v", st, want)
	}
	e, err := c.Explain(ctx, "gpu01")
	if err != nil {
		t.Fatal(err)
	}
	wantE, _ := h.backend.Explain(ctx, "gpu01")
	if !reflect.DeepEqual(e, wantE) {
		t.Errorf("Explain = %+v\nwant %+v", e, wantE)
	}
	d, err := c.Plan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantD, _ := h.backend.Plan(ctx)
	if !reflect.DeepEqual(d, wantD) {
		t.Errorf("Plan = %+v\nwant %+v", d, wantD)
	}
	if err := c.SetPinned(ctx, "cpu01", true, "alice: bios"); err != nil {
		t.Fatal(err)
	}
	if pinned, note := h.backend.Pin("cpu01"); !pinned || note != "alice: bios" {
		t.Errorf("pin = %v %q", pinned, note)
	}
	if err := c.SetPinned(ctx, "cpu01", false, ""); err != nil {
		t.Fatal(err)
	}
	if pinned, _ := h.backend.Pin("cpu01"); pinned {
		t.Error("unpin left the pin")
	}
	if err := c.SetMaintenance(ctx, "cpu01", true, "carol: disks"); err != nil {
		t.Fatal(err)
	}
	if on, note := h.backend.Maintenance("cpu01"); !on || note != "carol: disks" {
		t.Errorf("maintenance = %v %q", on, note)
	}
	if err := c.SetMaintenance(ctx, "cpu01", false, ""); err != nil {
		t.Fatal(err)
	}
	if on, _ := h.backend.Maintenance("cpu01"); on {
		t.Error("maintenance off left it in maintenance")
	}
	if err := c.SetPaused(ctx, true, "bob"); err != nil {
		t.Fatal(err)
	}
	if paused, note := h.backend.Paused(); !paused || note != "bob" {
		t.Errorf("pause = %v %q", paused, note)
	}
	if err := c.SetPaused(ctx, false, ""); err != nil {
		t.Fatal(err)
	}
	if paused, _ := h.backend.Paused(); paused {
		t.Error("resume left the pause")
	}
}

func TestClientErrors(t *testing.T) {
	h := newHarness(t, nil)
	ts := httptest.NewServer(h.srv)
	defer ts.Close()
	ctx := context.Background()
	tests := []struct {
		name     string
		token    string
		call     func(*api.Client) error
		base     string // added to the server's URL
		wantIs   error
		wantNot  error
		wantCode int
	}{
		{name: "explain unknown node", token: apiToken, call: func(c *api.Client) error { _, err := c.Explain(ctx, "nope"); return err }, wantIs: api.ErrUnknownNode},
		{name: "pin unknown node", token: apiToken, call: func(c *api.Client) error { return c.SetPinned(ctx, "nope", true, "") }, wantIs: api.ErrUnknownNode},
		{name: "maintenance of an unknown node", token: apiToken, call: func(c *api.Client) error { return c.SetMaintenance(ctx, "nope", true, "") }, wantIs: api.ErrUnknownNode},
		{name: "backup without a token", call: func(c *api.Client) error { _, err := c.Backup(ctx, io.Discard); return err }, wantCode: http.StatusUnauthorized},
		{name: "no token", call: func(c *api.Client) error { _, err := c.Status(ctx); return err }, wantCode: http.StatusUnauthorized},
		{name: "wrong token", token: "nope", call: func(c *api.Client) error { _, err := c.Status(ctx); return err }, wantCode: http.StatusForbidden},
		{name: "explain of an empty name", token: apiToken, call: func(c *api.Client) error { _, err := c.Explain(ctx, ""); return err }, wantIs: api.ErrUnknownNode},
		{name: "pin of ..", token: apiToken, call: func(c *api.Client) error { return c.SetPinned(ctx, "..", true, "") }, wantIs: api.ErrUnknownNode},
		// A URL that is not rota's API (a proxy's prefix, another server) answers 404 too:
		// that said "no such node in the inventory" of a node rota has.
		{name: "explain at a wrong URL", base: "/prefix", token: apiToken, call: func(c *api.Client) error { _, err := c.Explain(ctx, "cpu01"); return err }, wantCode: http.StatusNotFound, wantNot: api.ErrUnknownNode},
		{name: "pin at a wrong URL", base: "/prefix", token: apiToken, call: func(c *api.Client) error { return c.SetPinned(ctx, "cpu01", true, "") }, wantCode: http.StatusNotFound, wantNot: api.ErrUnknownNode},
		{name: "maintenance at a wrong URL", base: "/prefix", token: apiToken, call: func(c *api.Client) error { return c.SetMaintenance(ctx, "cpu01", true, "") }, wantCode: http.StatusNotFound, wantNot: api.ErrUnknownNode},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := api.NewClient(ts.URL+tc.base, api.NewToken(tc.token), ts.Client())
			if err != nil {
				t.Fatal(err)
			}
			err = tc.call(c)
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Fatalf("error %v, want %v", err, tc.wantIs)
			}
			if tc.wantNot != nil && errors.Is(err, tc.wantNot) {
				t.Fatalf("error %v, want anything but %v", err, tc.wantNot)
			}
			var se *api.StatusError
			if tc.wantCode != 0 && (!errors.As(err, &se) || se.Code != tc.wantCode) {
				t.Fatalf("error %v, want status %d", err, tc.wantCode)
			}
		})
	}
}

func TestClientEscapesNodeNames(t *testing.T) {
	const odd = "rack 1/node?2#3"
	backend := apifake.New(api.Status{Nodes: []api.NodeStatus{{Name: odd}}})
	h := newHarness(t, func(o *api.Options) { o.Backend = backend })
	ts := httptest.NewServer(h.srv)
	defer ts.Close()
	c, err := api.NewClient(ts.URL, api.NewToken(apiToken), ts.Client())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetPinned(context.Background(), odd, true, "x"); err != nil {
		t.Fatal(err)
	}
	if pinned, _ := backend.Pin(odd); !pinned {
		t.Errorf("%q not pinned", odd)
	}
}

func TestNewClientRejectsBadURLs(t *testing.T) {
	// A query or fragment took the API's path into it (GET http://rota:10091?x=1/api/v1/status).
	for _, u := range []string{"", "127.0.0.1:10091", "ftp://rota", "http://", "http://rota:10091?x=1", "http://rota:10091/?", "http://rota:10091#top"} {
		if _, err := api.NewClient(u, api.Token{}, nil); err == nil {
			t.Errorf("NewClient(%q) accepted it", u)
		}
	}
}

// The backup arrives byte for byte, with the stream's headers; a copy cut short is an error,
// never a short file that looks whole.
func TestClientBackup(t *testing.T) {
	data := bytes.Repeat([]byte("bolt page "), 10_000)
	cases := []struct {
		name    string
		err     error
		wantErr bool
	}{
		{name: "whole copy"},
		{name: "cut short", err: errors.New("disk read error"), wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.backend.SetBackup(data, tc.err)
			ts := httptest.NewServer(h.srv)
			defer ts.Close()
			c, err := api.NewClient(ts.URL, api.NewToken(apiToken), ts.Client())
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			n, err := c.Backup(context.Background(), &got)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Backup = %d, %v; want an error: %v", n, err, tc.wantErr)
			}
			if !tc.wantErr && (!bytes.Equal(got.Bytes(), data) || n != int64(len(data))) {
				t.Errorf("copied %d bytes, want the %d the backend wrote", n, len(data))
			}
		})
	}
	h := newHarness(t, nil)
	h.backend.SetBackup(data, nil)
	rec := h.do(http.MethodGet, "/api/v1/store/backup", apiToken, nil)
	if ct := rec.Header().Get("Content-Type"); rec.Code != http.StatusOK || ct != "application/octet-stream" {
		t.Errorf("status %d, Content-Type %q", rec.Code, ct)
	}
}

// TestClientSendsAWriteToTheLeaderOnce: a write refused with 503 by a rota that does not lead
// goes once to the leader_url it names, with the token; never from https down to http, never
// to a URL that is not http(s) or that is the rota asked, and never a second hop.
func TestClientSendsAWriteToTheLeaderOnce(t *testing.T) {
	type rota struct {
		srv   *httptest.Server
		calls atomic.Int32
	}
	// refusing answers every call with 503 naming *leaderURL.
	refusing := func(tls bool, leaderURL *string) *rota {
		r := &rota{}
		h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			r.calls.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "pin: this rota does not lead", "leader": "rota-b", "leader_url": *leaderURL})
		})
		if tls {
			r.srv = httptest.NewTLSServer(h)
		} else {
			r.srv = httptest.NewServer(h)
		}
		t.Cleanup(r.srv.Close)
		return r
	}
	leader := &rota{}
	leader.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		leader.calls.Add(1)
		if req.Header.Get("Authorization") != "Bearer "+apiToken || req.URL.Path != "/api/v1/nodes/cpu01/pin" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		_, _ = io.WriteString(w, `{"node":"cpu01","pinned":true}`)
	}))
	t.Cleanup(leader.srv.Close)

	for _, tc := range []struct {
		name       string
		tls        bool
		leaderURL  func(self, other string) string
		wantLeader int32 // calls the leader receives
		wantOK     bool
	}{
		{"to the leader", false, func(_, _ string) string { return leader.srv.URL }, 1, true},
		{"never https down to http", true, func(_, _ string) string { return leader.srv.URL }, 0, false},
		{"not to itself", false, func(self, _ string) string { return self }, 0, false},
		{"not to a URL that is not http(s)", false, func(_, _ string) string { return "ftp://rota-b:10091" }, 0, false},
		{"no second hop", false, func(_, other string) string { return other }, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leader.calls.Store(0)
			var firstURL, secondURL string
			first := refusing(tc.tls, &firstURL)
			second := refusing(false, &secondURL) // a rota that does not lead either, naming first
			firstURL, secondURL = tc.leaderURL(first.srv.URL, second.srv.URL), first.srv.URL
			c, err := api.NewClient(first.srv.URL, api.NewToken(apiToken), first.srv.Client())
			if err != nil {
				t.Fatal(err)
			}
			err = c.SetPinned(context.Background(), "cpu01", true, "")
			if (err == nil) != tc.wantOK {
				t.Fatalf("SetPinned: %v, want ok %v", err, tc.wantOK)
			}
			var se *api.StatusError
			if err != nil && (!errors.As(err, &se) || se.Code != http.StatusServiceUnavailable) {
				t.Errorf("error %v, want the 503 of the rota asked", err)
			}
			if n := leader.calls.Load(); n != tc.wantLeader {
				t.Errorf("the leader got %d calls, want %d", n, tc.wantLeader)
			}
			if first.calls.Load() != 1 || second.calls.Load() > 1 {
				t.Errorf("calls: the rota asked %d, the one it named %d; want 1 and at most 1", first.calls.Load(), second.calls.Load())
			}
		})
	}
}

// TestClientRefusesAnswersThatAreNotRotas: a 200 whose body does not say what was asked (a
// proxy or another service at the URL answering "{}" to anything) is an error naming both,
// never a write reported done: the client read it as rota's zero answer, so rotactl said
// "pinned" of a server nothing pinned, and slurm resume exited 0 with no server asked for.
func TestClientRefusesAnswersThatAreNotRotas(t *testing.T) {
	ctx := context.Background()
	calls := map[string]func(*api.Client) error{
		"pin":             func(c *api.Client) error { return c.SetPinned(ctx, "cpu01", true, "") },
		"unpin":           func(c *api.Client) error { return c.SetPinned(ctx, "cpu01", false, "") },
		"maintenance on":  func(c *api.Client) error { return c.SetMaintenance(ctx, "cpu01", true, "") },
		"maintenance off": func(c *api.Client) error { return c.SetMaintenance(ctx, "cpu01", false, "") },
		"pause":           func(c *api.Client) error { return c.SetPaused(ctx, true, "") },
		"resume":          func(c *api.Client) error { return c.SetPaused(ctx, false, "") },
		"explain":         func(c *api.Client) error { _, err := c.Explain(ctx, "cpu01"); return err },
		"wake":            func(c *api.Client) error { _, err := c.Wake(ctx, []string{"cpu01", "cpu02"}, ""); return err },
	}
	answers := map[string]string{
		"empty object": `{}`,
		"null":         `null`,
		// rota's answer for another node, or the opposite change
		"another answer": `{"node": "gpu01", "pinned": false, "maintenance": false, "nodes": [{"node": "cpu02", "result": "started"}, {"node": "cpu01", "result": "started"}]}`,
	}
	for aname, body := range answers {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, body)
		}))
		defer ts.Close()
		c, err := api.NewClient(ts.URL, api.NewToken(apiToken), ts.Client())
		if err != nil {
			t.Fatal(err)
		}
		for cname, call := range calls {
			t.Run(aname+"/"+cname, func(t *testing.T) {
				err := call(c)
				if err == nil || !strings.Contains(err.Error(), "not rota's") && !strings.Contains(err.Error(), "decoding rota's answer") {
					t.Fatalf("error %v, want one saying the answer is not rota's", err)
				}
			})
		}
	}
}

// TestClientSaysWhatAnsweredInstead: an answer that is not rota's JSON (a proxy's HTML page, a
// login page served 200) is named by its type and its start, on one short line: a proxy's 502
// page was printed whole, every line of it, up to 64 MiB.
func TestClientSaysWhatAnsweredInstead(t *testing.T) {
	page := "<html><head><title>502 Bad Gateway</title></head>\n<body>\n" + strings.Repeat("<p>padding</p>\n", 10000) + "</body></html>\n"
	tests := []struct {
		name, contentType, body string
		code                    int
		want                    string
	}{
		{"a proxy's error page", "text/html", page, http.StatusBadGateway, `502 Bad Gateway: text/html, 150072 bytes: "<html><head><title>502 Bad Gateway</title></head> <body> <p>padd…"`},
		{"a login page", "text/html; charset=utf-8", "<!DOCTYPE html>\n<html>Please log in</html>", http.StatusOK, `decoding rota's answer (text/html; charset=utf-8, 42 bytes: "<!DOCTYPE html> <html>Please log in</html>"): invalid character '<'`},
		{"rota's own error", "application/json", `{"error": "status: store closed"}`, http.StatusInternalServerError, "500 Internal Server Error: status: store closed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				w.WriteHeader(tc.code)
				io.WriteString(w, tc.body)
			}))
			defer ts.Close()
			c, err := api.NewClient(ts.URL, api.Token{}, ts.Client())
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Status(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || len(err.Error()) > 300 {
				t.Errorf("error %q, want one short line with %q", err, tc.want)
			}
		})
	}
}

// Forget answers 409 with why for a record kept (a server in the config, an action under way),
// 404 for a server the store holds no record of, and the record deleted when it is forgotten.
func TestClientForget(t *testing.T) {
	backend := apifake.New(api.Status{Nodes: []api.NodeStatus{{Name: "cpu01", Pool: "cpu"},
		{Name: "old01", State: fleet.StateOff, LeftConfig: "not in the config any more"},
		{Name: "old02", LeftConfig: "not in the config any more", InFlight: &api.InFlight{Kind: fleet.Move}}}})
	h := newHarness(t, func(o *api.Options) { o.Backend = backend })
	ts := httptest.NewServer(h.srv)
	defer ts.Close()
	c, err := api.NewClient(ts.URL, api.NewToken(apiToken), ts.Client())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for node, want := range map[string]string{"cpu01": "record kept: it is in the config", "old02": "record kept: an action is under way"} {
		var se *api.StatusError
		if _, err := c.Forget(ctx, node, "alice"); !errors.As(err, &se) || se.Code != http.StatusConflict || !strings.Contains(se.Message, want) {
			t.Errorf("forget %s: %v, want 409 saying %q", node, err, want)
		}
	}
	if _, err := c.Forget(ctx, "nobody", "alice"); !errors.Is(err, api.ErrUnknownNode) {
		t.Errorf("forget of an unknown server: %v, want ErrUnknownNode", err)
	}
	if n, err := c.Forget(ctx, "old01", "alice"); err != nil || n.Name != "old01" || n.State != fleet.StateOff {
		t.Fatalf("forget old01: %+v, %v", n, err)
	}
	if _, err := c.Forget(ctx, "old01", "alice"); !errors.Is(err, api.ErrUnknownNode) {
		t.Errorf("forget old01 again: %v, want ErrUnknownNode", err)
	}
	// Its history stays, and explain shows it with the forget.
	e, err := c.Explain(ctx, "old01")
	if err != nil || e.Forgotten == nil || !strings.Contains(e.Forgotten.Detail, "alice") || len(e.History) != 1 || e.History[0] != *e.Forgotten {
		t.Errorf("explain old01 once forgotten: %+v, %v; want its history and forget", e, err)
	}
}
