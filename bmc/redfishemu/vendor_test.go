package redfishemu

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/redfish"

	"github.com/rotahq/rota/internal/testutil"
)

// TestVendorShapes: the options that give an emulated BMC the shape of a vendor's, as a
// client sees them over HTTP and through gofish.
func TestVendorShapes(t *testing.T) {
	plain := server("plain")
	ifMatch := server("if-match")
	ifMatch.Faults.RejectIfMatch = true
	few := server("few-resets")
	few.ResetTypes = []string{"On", "GracefulShutdown", "PushPowerButton"}
	noSessions := server("no-sessions")
	noSessions.NoSessions = true
	login405 := server("login-405")
	login405.Faults.LoginStatus = http.StatusMethodNotAllowed
	hidden := server("hidden")
	hidden.Faults.HideTransitions = true
	hidden.Faults.ConflictOnSameState = true
	hidden.TransitionDelay = Duration(600 * time.Millisecond)
	e := start(t, Config{Servers: []ServerConfig{plain, ifMatch, few, noSessions, login405, hidden}})
	hc := trustingClient(e)
	do := func(server, method, path, body string, hdr ...string) (*http.Response, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, "https://"+e.Server(server).Addr()+path, strings.NewReader(body))
		req.SetBasicAuth("admin", "secret")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&doc)
		return resp, doc
	}
	const sys, reset = "/redfish/v1/Systems/437XR1138R2", "/redfish/v1/Systems/437XR1138R2/Actions/ComputerSystem.Reset"
	status := func(name string, resp *http.Response, want int) {
		t.Helper()
		if resp.StatusCode != want {
			t.Errorf("%s: status %d, want %d", name, resp.StatusCode, want)
		}
	}

	t.Run("reject_if_match", func(t *testing.T) {
		r, _ := do("if-match", "GET", sys, "")
		etag := r.Header.Get("ETag")
		got, _ := do("if-match", "POST", reset, `{"ResetType":"On"}`, "If-Match", etag)
		status("current If-Match", got, 412)
		got, _ = do("if-match", "POST", reset, `{"ResetType":"On"}`, "If-Match", "*")
		status("If-Match *", got, 412)
		got, _ = do("if-match", "POST", reset, `{"ResetType":"On"}`)
		status("no If-Match", got, 204)
		if st := e.Server("if-match").Stats(); st.PreconditionErr != 2 || !slices.Equal(st.Resets, []string{"On"}) {
			t.Errorf("stats %+v", st)
		}
		// Without the fault a current ETag is taken (an ETag-honouring BMC).
		r, _ = do("plain", "GET", sys, "")
		got, _ = do("plain", "POST", reset, `{"ResetType":"On"}`, "If-Match", r.Header.Get("ETag"))
		status("plain BMC, current If-Match", got, 204)
	})

	t.Run("reset_types", func(t *testing.T) {
		client, err := gofish.Connect(gofish.ClientConfig{Endpoint: "https://" + e.Server("few-resets").Addr(), Username: "admin", Password: "secret", HTTPClient: hc})
		if err != nil {
			t.Fatal(err)
		}
		defer client.Logout()
		systems, err := client.Service.Systems()
		if err != nil || len(systems) != 1 {
			t.Fatalf("systems %d, %v", len(systems), err)
		}
		if got := fmt.Sprint(systems[0].SupportedResetTypes); got != "[On GracefulShutdown PushPowerButton]" {
			t.Errorf("allowable values %s", got)
		}
		got, _ := do("few-resets", "POST", reset, `{"ResetType":"ForceOff"}`)
		status("ForceOff not offered", got, 400)
		got, _ = do("few-resets", "POST", reset, `{"ResetType":"On"}`)
		status("On offered", got, 204)
		// The shared mockup document is not changed for the other servers.
		_, doc := do("plain", "GET", sys, "")
		allowed := doc["Actions"].(map[string]any)["#ComputerSystem.Reset"].(map[string]any)["ResetType@Redfish.AllowableValues"].([]any)
		if len(allowed) != 8 {
			t.Errorf("the plain server offers %v", allowed)
		}
	})

	t.Run("no_sessions", func(t *testing.T) {
		_, root := do("no-sessions", "GET", "/redfish/v1/", "")
		if root["Links"].(map[string]any)["Sessions"] != nil || root["SessionService"] != nil {
			t.Errorf("service root still links sessions: %v", root)
		}
		if _, plainRoot := do("plain", "GET", "/redfish/v1/", ""); plainRoot["Links"].(map[string]any)["Sessions"] == nil {
			t.Error("the shared service root lost its Sessions link")
		}
		got, _ := do("no-sessions", "POST", "/redfish/v1/SessionService/Sessions", `{"UserName":"admin","Password":"secret"}`)
		status("login", got, 405)
		got, _ = do("no-sessions", "GET", "/redfish/v1/Systems", "")
		status("basic auth", got, 200)
	})

	t.Run("login_status", func(t *testing.T) {
		got, _ := do("login-405", "POST", "/redfish/v1/SessionService/Sessions", `{"UserName":"admin","Password":"secret"}`)
		status("login", got, 405)
		_, root := do("login-405", "GET", "/redfish/v1/", "")
		if root["Links"].(map[string]any)["Sessions"] == nil {
			t.Error("login_status should keep the Sessions link")
		}
	})

	t.Run("hide_transitions", func(t *testing.T) {
		got, _ := do("hidden", "POST", reset, `{"ResetType":"On"}`)
		status("On", got, 204)
		if p := e.Server("hidden").Power(); p != powerPoweringOn {
			t.Fatalf("emulator power %s, want PoweringOn", p)
		}
		if _, doc := do("hidden", "GET", sys, ""); doc["PowerState"] != "Off" {
			t.Errorf("PowerState %v while powering on, want Off", doc["PowerState"])
		}
		got, doc := do("hidden", "POST", reset, `{"ResetType":"On"}`)
		status("second On while powering on", got, 409)
		if !strings.Contains(fmt.Sprint(doc), "already powering on") {
			t.Errorf("409 body %v", doc)
		}
		testutil.Eventually(t, 5*time.Second, "PowerState On", func() error {
			if _, doc := do("hidden", "GET", sys, ""); doc["PowerState"] != string(redfish.OnPowerState) {
				return fmt.Errorf("PowerState %v", doc["PowerState"])
			}
			return nil
		})
	})
}
