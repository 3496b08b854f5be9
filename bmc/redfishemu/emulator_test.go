package redfishemu

import (
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/redfish"

	"github.com/rotahq/rota/internal/testutil"
)

// upstream regenerates mockup/SHA256SUMS from a checkout of DMTF/Redfish-Mockup-Server (the
// folder holding LICENSE.md and public-rackmount1), for the files the emulator embeds.
var upstream = flag.String("mockup.upstream", "", "a DMTF Redfish-Mockup-Server checkout: rewrite mockup/SHA256SUMS from it")

// TestMockupMatchesUpstream: the embedded copy is byte for byte the DMTF tree (the SHA-256 of
// every upstream file, listed in mockup/SHA256SUMS in sha256sum's format), each embedded file
// has a sum and each sum an embedded file, and the copy stays small.
func TestMockupMatchesUpstream(t *testing.T) {
	files, err := MockupFiles()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("only %d files embedded", len(files))
	}
	embedded := map[string][]byte{}
	total := 0
	for _, f := range files {
		b, err := MockupFile(f)
		if err != nil {
			t.Fatal(err)
		}
		embedded["public-rackmount1/"+f] = b
		total += len(b)
	}
	lic, err := mockupFS.ReadFile("mockup/LICENSE.md")
	if err != nil {
		t.Fatal(err)
	}
	embedded["LICENSE.md"] = lic
	if total+len(lic) > 300<<10 {
		t.Errorf("embedded tree is %d bytes, keep it under 300 KB", total+len(lic))
	}

	sumsFile := filepath.Join("mockup", "SHA256SUMS")
	if *upstream != "" {
		writeSums(t, sumsFile, *upstream, embedded)
	}
	sums := readSums(t, sumsFile)
	for name, b := range embedded {
		want, ok := sums[name]
		if !ok {
			t.Errorf("%s is embedded but has no sum in %s", name, sumsFile)
			continue
		}
		if got := fmt.Sprintf("%x", sha256.Sum256(b)); got != want {
			t.Errorf("%s: sha256 %s, upstream %s", name, got, want)
		}
	}
	for name := range sums {
		if _, ok := embedded[name]; !ok {
			t.Errorf("%s has a sum in %s but is not embedded", name, sumsFile)
		}
	}
}

// readSums reads a sha256sum listing ("<hex>  <path>" per line) into path -> hex.
func readSums(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok || len(sum) != 64 || name == "" {
			t.Fatalf("%s:%d: want \"<sha256>  <path>\", got %q", file, i+1, line)
		}
		sums[name] = sum
	}
	return sums
}

// writeSums writes the sums of the upstream copies of the embedded files, sorted by path.
func writeSums(t *testing.T, file, dir string, embedded map[string][]byte) {
	t.Helper()
	var out strings.Builder
	for _, name := range slices.Sorted(maps.Keys(embedded)) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("upstream: %v", err)
		}
		fmt.Fprintf(&out, "%x  %s\n", sha256.Sum256(b), name)
	}
	if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGenericClientWalk walks the tree as a generic Redfish client does, with gofish alone:
// service root, Systems, the system, Chassis, Managers, the Reset action, logout.
func TestGenericClientWalk(t *testing.T) {
	e := start(t, Config{Servers: []ServerConfig{server("n1")}})
	client, err := gofish.Connect(gofish.ClientConfig{
		Endpoint: "https://" + e.Server("n1").Addr(), Username: "admin", Password: "secret",
		HTTPClient: trustingClient(e),
	})
	if err != nil {
		t.Fatal(err)
	}
	svc := client.Service
	if svc.RedfishVersion != "1.15.0" || svc.UUID != "92384634-2938-2342-8820-489239905423" {
		t.Errorf("service root %q %q: not the DMTF mockup", svc.RedfishVersion, svc.UUID)
	}
	systems, err := svc.Systems()
	if err != nil || len(systems) != 1 {
		t.Fatalf("Systems: %d, %v", len(systems), err)
	}
	sys := systems[0]
	if sys.ID != "437XR1138R2" || sys.Name != "WebFrontEnd483" || sys.PowerState != redfish.OffPowerState {
		t.Fatalf("system %s %s %s", sys.ID, sys.Name, sys.PowerState)
	}
	if len(sys.SupportedResetTypes) == 0 {
		t.Fatal("no ResetType@Redfish.AllowableValues")
	}
	for _, rt := range sys.SupportedResetTypes {
		if rt == redfish.PowerCycleResetType {
			t.Error("the mockup offers PowerCycle; it should not")
		}
	}
	if err := sys.Reset(redfish.PowerCycleResetType); err == nil {
		t.Error("PowerCycle accepted")
	}
	chassis, err := svc.Chassis()
	if err != nil || len(chassis) != 1 {
		t.Errorf("Chassis: %d, %v", len(chassis), err)
	}
	managers, err := svc.Managers()
	if err != nil || len(managers) != 1 {
		t.Errorf("Managers: %d, %v", len(managers), err)
	}
	if err := sys.Reset(redfish.OnResetType); err != nil {
		t.Fatal(err)
	}
	if p := e.Server("n1").Power(); p != "PoweringOn" {
		t.Errorf("right after Reset(On): %s, want PoweringOn", p)
	}
	testutil.Eventually(t, 5*time.Second, "PowerState On", func() error {
		s, err := redfish.GetComputerSystem(client, sys.ODataID)
		if err != nil {
			return err
		}
		if s.PowerState != redfish.OnPowerState {
			return fmt.Errorf("power %s", s.PowerState)
		}
		return nil
	})
	if n := e.Server("n1").Stats().Sessions; n != 1 {
		t.Errorf("%d sessions open, want 1", n)
	}
	client.Logout()
	if n := e.Server("n1").Stats().Sessions; n != 0 {
		t.Errorf("%d sessions open after logout", n)
	}
}

// TestOtherSystems: a BMC that serves more than one ComputerSystem lists them all, and a Reset
// of one changes that one alone.
func TestOtherSystems(t *testing.T) {
	sc := server("n1")
	sc.OtherSystems = []SystemConfig{{ID: "Blade2", Power: "On"}, {ID: "Blade3", Name: "WebFrontEnd483"}}
	e := start(t, Config{Servers: []ServerConfig{sc}})
	client, err := gofish.Connect(gofish.ClientConfig{
		Endpoint: "https://" + e.Server("n1").Addr(), Username: "admin", Password: "secret",
		HTTPClient: trustingClient(e),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Logout()
	systems, err := client.Service.Systems()
	if err != nil {
		t.Fatal(err)
	}
	// gofish reads a collection's members at once, in no fixed order.
	slices.SortFunc(systems, func(a, b *redfish.ComputerSystem) int { return strings.Compare(a.ID, b.ID) })
	var got []string
	for _, s := range systems {
		got = append(got, s.ID+" "+s.Name+" "+string(s.PowerState))
	}
	want := []string{"437XR1138R2 WebFrontEnd483 Off", "Blade2 Blade2 On", "Blade3 WebFrontEnd483 Off"}
	if !slices.Equal(got, want) {
		t.Fatalf("systems %q, want %q", got, want)
	}
	if err := systems[1].Reset(redfish.ForceOffResetType); err != nil {
		t.Fatal(err)
	}
	srv := e.Server("n1")
	if p, o := srv.Power(), srv.OtherPower("Blade2"); p != "Off" || o != "Off" {
		t.Errorf("after ForceOff of Blade2: own system %s, Blade2 %s; want Off, Off", p, o)
	}
	if st := srv.Stats(); !slices.Equal(st.OtherResets, []string{"Blade2:ForceOff"}) || len(st.Resets) != 0 {
		t.Errorf("resets: own %q, others %q", st.Resets, st.OtherResets)
	}
	if s := srv.status(); s.OtherPower["Blade2"] != "Off" || s.OtherPower["Blade3"] != "Off" {
		t.Errorf("status other_power %v", s.OtherPower)
	}
}

// TestRedfishProtocol checks the HTTP answers a client depends on.
func TestRedfishProtocol(t *testing.T) {
	e := start(t, Config{Servers: []ServerConfig{server("n1")}})
	hc := trustingClient(e)
	base := "https://" + e.Server("n1").Addr()
	do := func(method, path, body string, hdr map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	basic := func() map[string]string {
		req, _ := http.NewRequest("GET", base, nil)
		req.SetBasicAuth("admin", "secret")
		return map[string]string{"Authorization": req.Header.Get("Authorization")}
	}
	login := do("POST", "/redfish/v1/SessionService/Sessions", `{"UserName":"admin","Password":"secret"}`, nil)
	token := login.Header.Get("X-Auth-Token")
	sys := do("GET", "/redfish/v1/Systems/437XR1138R2", "", basic())
	tests := []struct {
		name string
		resp *http.Response
		want int
	}{
		{"service root needs no auth", do("GET", "/redfish/v1/", "", nil), 200},
		{"systems need auth", do("GET", "/redfish/v1/Systems", "", nil), 401},
		{"wrong basic auth", do("GET", "/redfish/v1/Systems", "", map[string]string{"Authorization": "Basic YWRtaW46bm9wZQ=="}), 401},
		{"login", login, 201},
		{"bad login", do("POST", "/redfish/v1/SessionService/Sessions", `{"UserName":"admin","Password":"nope"}`, nil), 401},
		{"token works", do("GET", "/redfish/v1/Systems", "", map[string]string{"X-Auth-Token": token}), 200},
		{"basic auth works", sys, 200},
		{"missing resource", do("GET", "/redfish/v1/EventService", "", basic()), 404},
		{"stale etag", do("POST", "/redfish/v1/Systems/437XR1138R2/Actions/ComputerSystem.Reset", `{"ResetType":"On"}`, merge(basic(), "If-Match", `"999"`)), 412},
		{"matching etag", do("POST", "/redfish/v1/Systems/437XR1138R2/Actions/ComputerSystem.Reset", `{"ResetType":"On"}`, merge(basic(), "If-Match", sys.Header.Get("ETag"))), 204},
		{"unsupported reset type", do("POST", "/redfish/v1/Systems/437XR1138R2/Actions/ComputerSystem.Reset", `{"ResetType":"PowerCycle"}`, basic()), 400},
		{"logout", do("DELETE", login.Header.Get("Location"), "", map[string]string{"X-Auth-Token": token}), 204},
		{"token dead after logout", do("GET", "/redfish/v1/Systems", "", map[string]string{"X-Auth-Token": token}), 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", tt.resp.StatusCode, tt.want)
			}
		})
	}
	if login.Header.Get("Location") == "" || token == "" {
		t.Error("login answered without Location or X-Auth-Token")
	}
	if sys.Header.Get("ETag") == "" {
		t.Error("system answered without ETag")
	}
}

func merge(h map[string]string, k, v string) map[string]string { h[k] = v; return h }

// TestListenersBoundHeaders: a BMC's listener and the control endpoint answer 431 to headers
// over 64 KiB, as rota's own listener does; they now share its server settings (read, write and
// idle timeouts too, which a test would wait minutes for), where they had a header timeout alone
// and net/http's 1 MB of headers.
func TestListenersBoundHeaders(t *testing.T) {
	cfg := Config{Servers: []ServerConfig{server("n1")}, ControlListen: "127.0.0.1:0"}
	e := start(t, cfg)
	testutil.CheckHeaderLimit(t, trustingClient(e), "https://"+e.Server("n1").Addr()+"/redfish/v1/", "")
	testutil.CheckHeaderLimit(t, http.DefaultClient, "http://"+e.ControlAddr()+"/-/ready", "")
}

// TestControlEndpointAndHooks flips faults and power at run time over HTTP, and checks both
// kinds of hook see each transition in order.
func TestControlEndpointAndHooks(t *testing.T) {
	dir := t.TempDir()
	hookLog := filepath.Join(dir, "hook.log")
	received := make(chan string, 10)
	hookSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Server, Power string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		received <- body.Server + "=" + body.Power
	})}
	hookL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hookSrv.Close() })
	go func() { _ = hookSrv.Serve(hookL) }()

	cmdServer := server("cmd")
	cmdServer.Hook.Command = []string{"sh", "-c", `echo "$ROTA_EMU_SERVER=$ROTA_EMU_POWER" >> ` + hookLog}
	urlServer := server("url")
	urlServer.Hook.URL = "http://" + hookL.Addr().String() + "/hook"
	e := start(t, Config{ControlListen: "127.0.0.1:0", Servers: []ServerConfig{cmdServer, urlServer}})
	ctl := "http://" + e.ControlAddr()
	testutil.WaitHTTP(t, ctl+"/-/ready", 5*time.Second)

	put := func(path, body string) int {
		req, _ := http.NewRequest("PUT", ctl+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := put("/servers/cmd/faults", `{"error_rate":0.5,"latency":"10ms","reject_credentials":true}`); c != 200 {
		t.Fatalf("PUT faults: %d", c)
	}
	if f := e.Server("cmd").Faults(); f.ErrorRate != 0.5 || !f.RejectCredentials || time.Duration(f.Latency) != 10*time.Millisecond {
		t.Fatalf("faults not applied: %+v", f)
	}
	for _, bad := range []string{`{"error_rate":2}`, `{"nope":1}`, `not json`} {
		if c := put("/servers/cmd/faults", bad); c != 400 {
			t.Errorf("PUT faults %s: %d, want 400", bad, c)
		}
	}
	if c := put("/servers/missing/faults", `{}`); c != 404 {
		t.Errorf("unknown server: %d", c)
	}
	for _, p := range []string{"On", "Off"} {
		for _, name := range []string{"cmd", "url"} {
			if c := put("/servers/"+name+"/power", `{"power":"`+p+`"}`); c != 200 {
				t.Fatalf("PUT power: %d", c)
			}
		}
	}
	testutil.Eventually(t, 10*time.Second, "command hook ran twice", func() error {
		b, _ := os.ReadFile(hookLog)
		if got := strings.Fields(string(b)); fmt.Sprint(got) != "[cmd=On cmd=Off]" {
			return fmt.Errorf("hook log %q", got)
		}
		return nil
	})
	for _, want := range []string{"url=On", "url=Off"} {
		select {
		case got := <-received:
			if got != want {
				t.Errorf("url hook got %s, want %s", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("url hook: %s never arrived", want)
		}
	}
	resp, err := http.Get(ctl + "/servers")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var status []ServerStatus
	if err := json.NewDecoder(resp.Body).Decode(&status); err != nil || len(status) != 2 || status[0].Power != "Off" {
		t.Fatalf("GET /servers: %+v, %v", status, err)
	}
}

// TestStuckTransitionReleased: clearing stuck_transition at run time lets the transition end.
func TestStuckTransitionReleased(t *testing.T) {
	cfg := server("n1")
	cfg.Faults.StuckTransition = true
	e := start(t, Config{Servers: []ServerConfig{cfg}})
	s := e.Server("n1")
	s.mu.Lock()
	s.beginLocked(powerOn)
	s.mu.Unlock()
	if s.Power() != "PoweringOn" {
		t.Fatalf("power %s", s.Power())
	}
	if err := s.SetFaults(Faults{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "On", func() error {
		if p := s.Power(); p != "On" {
			return fmt.Errorf("power %s", p)
		}
		return nil
	})
}

// TestPeakRequests counts the requests answered at once across the servers: three answered
// together (each held a second by the latency fault) on two servers, then one alone, peak three.
func TestPeakRequests(t *testing.T) {
	a, b := server("a"), server("b")
	a.Faults.Latency, b.Faults.Latency = Duration(time.Second), Duration(time.Second)
	e := start(t, Config{Servers: []ServerConfig{a, b}})
	client := trustingClient(e)
	get := func(name string) error {
		resp, err := client.Get("https://" + e.Server(name).Addr() + "/redfish/v1/")
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
	if p := e.PeakRequests(); p != 0 {
		t.Fatalf("peak %d before any request", p)
	}
	errs := make(chan error, 3)
	for _, name := range []string{"a", "a", "b"} {
		go func() { errs <- get(name) }()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := get("b"); err != nil {
		t.Fatal(err)
	}
	if p := e.PeakRequests(); p != 3 {
		t.Errorf("peak %d, want 3 (three at once, then one)", p)
	}
}
