package bmc

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// chassisBMC is a small Redfish service (basic auth, one system) whose system links the
// chassis given, each a JSON document by URI; a URI with no document answers 404, and one
// whose document is a status alone ("503") answers that status with an error. The
// emulator serves the DMTF mockup's one rack-mount chassis; these are the shapes of other
// vendors' trees.
func chassisBMC(t *testing.T, links []string, docs map[string]string) Endpoint {
	t.Helper()
	var linked []string
	for _, l := range links {
		linked = append(linked, `{"@odata.id":"`+l+`"}`)
	}
	docs["/redfish/v1"] = `{"@odata.id":"/redfish/v1/","Id":"RootService","RedfishVersion":"1.6.0","Systems":{"@odata.id":"/redfish/v1/Systems"},
		"Links":{"Sessions":{"@odata.id":"/redfish/v1/SessionService/Sessions"}}}`
	docs["/redfish/v1/Systems"] = `{"Members":[{"@odata.id":"/redfish/v1/Systems/1"}],"Members@odata.count":1}`
	docs["/redfish/v1/Systems/1"] = `{"@odata.id":"/redfish/v1/Systems/1","Id":"1","Name":"System","PowerState":"On",
		"Links":{"Chassis":[` + strings.Join(linked, ",") + `]}}`
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := strings.TrimSuffix(r.URL.Path, "/")
		if u, p, ok := r.BasicAuth(); path != "/redfish/v1" && (!ok || u != "admin" || p != emuPassword) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		doc, ok := docs[path]
		if !ok || r.Method != http.MethodGet {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"code":"Base.1.8.ResourceMissingAtURI","message":"not found"}}`))
			return
		}
		if code, err := strconv.Atoi(doc); err == nil {
			w.WriteHeader(code)
			_, _ = w.Write([]byte(`{"error":{"code":"Base.1.8.GeneralError","message":"failed"}}`))
			return
		}
		_, _ = w.Write([]byte(doc))
	}))
	t.Cleanup(srv.Close)
	ep := serverEndpoint(t, srv)
	ep.BasicAuth = true
	return ep
}

// TestRedfishReadingChassisShapes: the reading comes from the server's own chassis, not from
// an enclosure or rack its system also links (whose draw is every server's in it), and a
// linked chassis that is not there does not hide the next one.
func TestRedfishReadingChassisShapes(t *testing.T) {
	chassis := func(id, typ string) string {
		return `{"@odata.id":"/redfish/v1/Chassis/` + id + `","Id":"` + id + `","ChassisType":"` + typ + `","Power":{"@odata.id":"/redfish/v1/Chassis/` + id + `/Power"}}`
	}
	power := func(w string) string { return `{"PowerControl":[{"PowerConsumedWatts":` + w + `}]}` }
	tests := []struct {
		name  string
		links []string
		docs  map[string]string
		watts float64
	}{
		{"enclosure linked first", []string{"/redfish/v1/Chassis/Enclosure", "/redfish/v1/Chassis/Blade1"}, map[string]string{
			"/redfish/v1/Chassis/Enclosure": chassis("Enclosure", "Enclosure"), "/redfish/v1/Chassis/Enclosure/Power": power("4200"),
			"/redfish/v1/Chassis/Blade1": chassis("Blade1", "Blade"), "/redfish/v1/Chassis/Blade1/Power": power("350"),
		}, 350},
		{"rack linked first", []string{"/redfish/v1/Chassis/Rack", "/redfish/v1/Chassis/1"}, map[string]string{
			"/redfish/v1/Chassis/Rack": chassis("Rack", "Rack"), "/redfish/v1/Chassis/Rack/Power": power("9000"),
			"/redfish/v1/Chassis/1": chassis("1", "RackMount"), "/redfish/v1/Chassis/1/Power": power("280"),
		}, 280},
		{"only the enclosure has a reading", []string{"/redfish/v1/Chassis/Enclosure", "/redfish/v1/Chassis/Blade1"}, map[string]string{
			"/redfish/v1/Chassis/Enclosure": chassis("Enclosure", "Enclosure"), "/redfish/v1/Chassis/Enclosure/Power": power("4200"),
			"/redfish/v1/Chassis/Blade1": `{"@odata.id":"/redfish/v1/Chassis/Blade1","ChassisType":"Blade"}`,
		}, 4200},
		{"first linked chassis not there", []string{"/redfish/v1/Chassis/Gone", "/redfish/v1/Chassis/1"}, map[string]string{
			"/redfish/v1/Chassis/1": chassis("1", "RackMount"), "/redfish/v1/Chassis/1/Power": power("300"),
		}, 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, _ := testLogger()
			c, err := NewController(map[string]Endpoint{"n": chassisBMC(t, tt.links, tt.docs)}, redfishOptions(Options{Logger: log}))
			if err != nil {
				t.Fatal(err)
			}
			r, err := c.PowerReading(context.Background(), "n")
			if err != nil || r.Watts != tt.watts || r.Source != "redfish_power" {
				t.Errorf("%+v, %v; want %v W", r, err, tt.watts)
			}
		})
	}
}

// TestRedfishReadingFailures: a power resource the BMC failed to answer (busy, an internal
// error, cut off) is no proof that it offers no reading: the reading fails (reason error,
// asked again at the next interval), not ErrNoReading (the pool's watts for an hour). Only
// resources that are not there (404) or hold no value make a BMC without a reading, and
// another chassis or resource with a value still gives it.
func TestRedfishReadingFailures(t *testing.T) {
	chassis := `{"@odata.id":"/redfish/v1/Chassis/1","Id":"1","ChassisType":"RackMount","Power":{"@odata.id":"/redfish/v1/Chassis/1/Power"},
		"EnvironmentMetrics":{"@odata.id":"/redfish/v1/Chassis/1/EnvironmentMetrics"}}`
	tests := []struct {
		name       string
		env, power string // the two resources' documents ("" : not there)
		watts      float64
		wantReason string
	}{
		{name: "power resource answers 503", power: "503", wantReason: "error"},
		{name: "power resource answers 500", power: "500", wantReason: "error"},
		{name: "both answer 503", env: "503", power: "503", wantReason: "error"},
		{name: "power resource answers an html page", power: "<html><body>Service Unavailable</body></html>", wantReason: "error"},
		{name: "environment metrics answer 503, the power resource has a reading", env: "503", power: `{"PowerControl":[{"PowerConsumedWatts":310}]}`, watts: 310, wantReason: "success"},
		{name: "neither is there", wantReason: "no_reading"},
		{name: "the power resource holds no value", power: `{"PowerControl":[{"PowerConsumedWatts":null}]}`, wantReason: "no_reading"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs := map[string]string{"/redfish/v1/Chassis/1": chassis}
			if tt.env != "" {
				docs["/redfish/v1/Chassis/1/EnvironmentMetrics"] = tt.env
			}
			if tt.power != "" {
				docs["/redfish/v1/Chassis/1/Power"] = tt.power
			}
			log, _ := testLogger()
			c, err := NewController(map[string]Endpoint{"n": chassisBMC(t, []string{"/redfish/v1/Chassis/1"}, docs)}, redfishOptions(Options{Logger: log}))
			if err != nil {
				t.Fatal(err)
			}
			r, err := c.PowerReading(context.Background(), "n")
			if got := Reason(err); got != tt.wantReason || r.Watts != tt.watts {
				t.Errorf("%+v, %v (reason %s); want %v W, reason %s", r, err, got, tt.watts, tt.wantReason)
			}
			if tt.wantReason == "error" && errors.Is(err, ErrNoReading) {
				t.Errorf("%v: a failed read taken for a bmc without a reading", err)
			}
		})
	}
}
