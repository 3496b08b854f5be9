package bmc

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/clock"
)

// TestTransportTellsALostAnswer: a request that failed after it was sent (the BMC hung up
// before answering) is told from one that never left (nothing listening) and from one answered
// with an error, as only the first may have been done.
func TestTransportTellsALostAnswer(t *testing.T) {
	hangs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hangUp(w) }))
	defer hangs.Close()
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		shapeError(w, http.StatusServiceUnavailable, "Base.1.0.ServiceTemporarilyUnavailable", "busy")
	}))
	defer busy.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := "http://" + ln.Addr().String()
	ln.Close()
	for _, tt := range []struct {
		name, url string
		want      bool
	}{
		{"hung up after the request", hangs.URL, true},
		{"nothing listening", nobody, false},
		{"answered 503", busy.URL, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rt := &redfishTransport{host: "127.0.0.1", clock: clock.Real{}, base: &http.Transport{DisableKeepAlives: true}}
			resp, err := (&http.Client{Transport: rt}).Post(tt.url+"/redfish/v1/Systems/1/Actions/ComputerSystem.Reset", "application/json", strings.NewReader(`{"ResetType":"GracefulShutdown"}`))
			if err == nil {
				resp.Body.Close()
			}
			te := &transientError{err: err}
			if rt.annotate(te); te.unanswered != tt.want {
				t.Errorf("unanswered %v, want %v (error %v)", te.unanswered, tt.want, err)
			}
			next := &transientError{err: err}
			if rt.annotate(next); next.unanswered {
				t.Errorf("a failure annotated next was said unanswered: annotate forgets what it gave")
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name, v string
		want    time.Duration
		ok      bool
	}{
		{"seconds", "7", 7 * time.Second, true},
		{"spaces", " 7 ", 7 * time.Second, true},
		{"capped", "3600", maxRetryAfter, true},
		{"past uint64", "99999999999999999999999", maxRetryAfter, true},
		{"zero asks no wait", "0", 0, false},
		{"negative", "-5", 0, false},
		{"a date", "Thu, 01 Jan 2026 12:00:30 GMT", 30 * time.Second, true},
		{"a date past the cap", "Thu, 01 Jan 2026 13:00:00 GMT", maxRetryAfter, true},
		{"a date gone", "Thu, 01 Jan 2026 11:00:00 GMT", 0, false},
		{"none", "", 0, false},
		{"garbage", "soon", 0, false},
		{"a fraction", "1.5", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseRetryAfter(tt.v, now)
			if got != tt.want || ok != tt.ok {
				t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tt.v, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestLocalLinks(t *testing.T) {
	tests := []struct {
		name, host, body, want string // want "": unchanged
	}{
		{"same host and port", "10.0.0.5", `{"@odata.id":"https://10.0.0.5:443/redfish/v1/Systems/1"}`, `{"@odata.id":"/redfish/v1/Systems/1"}`},
		{"same host, no port", "10.0.0.5", `{"Members":[{"@odata.id":"https://10.0.0.5/redfish/v1/Systems/1"}]}`, `{"Members":[{"@odata.id":"/redfish/v1/Systems/1"}]}`},
		{"escaped slashes", "10.0.0.5", `{"target":"https:\/\/10.0.0.5\/redfish\/v1\/Systems\/1\/Actions\/ComputerSystem.Reset"}`, `{"target":"/redfish/v1/Systems/1/Actions/ComputerSystem.Reset"}`},
		{"host name in another case", "bmc-07.mgmt", `{"@odata.id":"https://BMC-07.mgmt/redfish/v1/Chassis/1/Power#/PowerControl/0"}`, `{"@odata.id":"/redfish/v1/Chassis/1/Power#/PowerControl/0"}`},
		{"ipv6 written otherwise", "fd00::5", `{"@odata.id":"https://[fd00:0::5]/redfish/v1"}`, `{"@odata.id":"/redfish/v1"}`},
		{"numbers kept as written", "h", `{"n":12345678901234567890,"@odata.id":"https://h/redfish/v1"}`, `{"@odata.id":"/redfish/v1","n":12345678901234567890}`},
		{"another host", "10.0.0.5", `{"@odata.id":"https://10.0.0.9/redfish/v1/Systems/1"}`, ""},
		{"not a redfish path", "10.0.0.5", `{"Oem":"https://10.0.0.5/help.html"}`, ""},
		{"relative", "10.0.0.5", `{"@odata.id":"/redfish/v1/Systems/1"}`, ""},
		{"not json", "10.0.0.5", `<a href="https://10.0.0.5/redfish/v1">`, ""},
		{"two values", "10.0.0.5", `{"a":"https://10.0.0.5/redfish/v1"} {}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := localLinks([]byte(tt.body), tt.host)
			want := tt.want
			if want == "" {
				want = tt.body
			}
			if string(got) != want || changed != (tt.want != "") {
				t.Errorf("localLinks = %s, %v; want %s", got, changed, want)
			}
		})
	}
}

// FuzzLocalLinks feeds arbitrary BMC answers: the transport passes them on as they came or as
// one JSON value that decodes to the same but for the links on the host taken to their paths,
// with no such link left.
func FuzzLocalLinks(f *testing.F) {
	f.Add([]byte(`{"Members":[{"@odata.id":"https://h:8443/redfish/v1/Systems/1"}],"n":1e400}`))
	f.Add([]byte(`["http://h/redfish","https:\/\/h\/redfish\/v1?x=1#y",{"a":"https://o/redfish/v1"}]`))
	f.Add([]byte(`"https://h/redfish/v1/%zz"`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, changed := localLinks(body, "h")
		if !changed {
			if !bytes.Equal(got, body) {
				t.Fatalf("unchanged, yet %q became %q", body, got)
			}
			return
		}
		if !json.Valid(got) {
			t.Fatalf("%q became %q, not JSON", body, got)
		}
		if _, again := localLinks(got, "h"); again {
			t.Fatalf("%q became %q, which still holds a link on the host", body, got)
		}
		if strings.Count(string(got), "/redfish") < 1 {
			t.Fatalf("%q became %q, with its links lost", body, got)
		}
	})
}
