package redfishemu

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	example, err := os.ReadFile("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		in      string
		wantErr []string
	}{
		{"example", string(example), nil},
		{"minimal", "servers: [{name: a, listen: '127.0.0.1:0', username: u, password: p}]", nil},
		{"no servers", "control_listen: 127.0.0.1:0", []string{"servers: at least one is required"}},
		{"unknown field", "servers: [{name: a, listen: x, username: u, password: p, colour: red}]", []string{"field colour not found"}},
		{"everything wrong at once", `servers:
  - {name: a, listen: x, username: u, password: p, power: Paused, faults: {error_rate: 1.5}}
  - {name: a, username: u}
`, []string{`servers[0].power: want On or Off, got "Paused"`, "servers[0].faults.error_rate: want 0-1, got 1.5", `servers[1].name: duplicate "a"`, "servers[1].listen: required", "servers[1].username, password: required"}},
		{"bad duration", "servers: [{name: a, listen: x, username: u, password: p, transition_delay: soon}]", []string{"invalid duration"}},
		{"negative duration", "servers: [{name: a, listen: x, username: u, password: p, transition_delay: -1s}]", []string{"negative duration"}},
		{"two hooks", "servers: [{name: a, listen: x, username: u, password: p, hook: {command: [true], url: 'http://h'}}]", []string{"set command or url, not both"}},
		{"hook url scheme", "servers: [{name: a, listen: x, username: u, password: p, hook: {url: 'ftp://h'}}]", []string{"hook.url: want http:// or https://"}},
		{"other systems", "servers: [{name: a, listen: x, username: u, password: p, other_systems: [{id: Blade2, power: On}, {id: b3, name: WebFrontEnd483}]}]", nil},
		{"other systems wrong", `servers: [{name: a, listen: x, username: u, password: p, other_systems: [{id: "a/b"}, {id: 437XR1138R2}, {id: x, power: half}, {id: x}]}]`, []string{
			`servers[0].other_systems[0].id: want letters, digits, '.', '_' or '-', got "a/b"`, `servers[0].other_systems[1].id: duplicate "437XR1138R2"`,
			`servers[0].other_systems[2].power: want On or Off, got "half"`, `servers[0].other_systems[3].id: duplicate "x"`}},
		{"drop count", "servers: [{name: a, listen: x, username: u, password: p, faults: {drop_power_on: -2}}]", []string{"drop_power_on: want -1 (all) or a count"}},
		{"vendor shapes", "servers: [{name: a, listen: x, username: u, password: p, no_sessions: true, reset_types: [On, GracefulShutdown], faults: {reject_if_match: true, hide_transitions: true, login_status: 405}}]", nil},
		{"reset type not the mockup's", "servers: [{name: a, listen: x, username: u, password: p, reset_types: [On, PowerCycle]}]", []string{`servers[0].reset_types[1]: "PowerCycle" is not one of the mockup's ResetTypes`}},
		{"login status", "servers: [{name: a, listen: x, username: u, password: p, faults: {login_status: 200}}]", []string{"login_status: want 400-599, got 200"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.in))
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	c, _ := ParseConfig(example)
	if got := c.Servers[1]; time.Duration(got.Faults.Latency) != 50*time.Millisecond || got.Power != "On" || got.Faults.DropPowerOn != 1 {
		t.Errorf("example decoded as %+v", got)
	}
	if s := c.Servers[0].Password.String(); s != "<redacted>" {
		t.Errorf("password prints as %q", s)
	}
}

// FuzzParseConfig: any input either fails cleanly or yields a config that validates.
func FuzzParseConfig(f *testing.F) {
	if b, err := os.ReadFile("testdata/example.yaml"); err == nil {
		f.Add(string(b))
	}
	f.Add("servers: [{name: a, listen: x, username: u, password: p}]")
	f.Add("servers: [{faults: {error_rate: .nan}}]")
	f.Fuzz(func(t *testing.T, in string) {
		c, err := ParseConfig([]byte(in))
		if err == nil {
			if verr := c.Validate(); verr != nil {
				t.Fatalf("ParseConfig accepted a config that does not validate: %v", verr)
			}
		}
	})
}

func FuzzParseFaults(f *testing.F) {
	f.Add(`{"error_rate":0.5,"latency":"10ms"}`)
	f.Add(`{"drop_power_on":-1}`)
	f.Fuzz(func(t *testing.T, in string) {
		fl, err := ParseFaults([]byte(in))
		if err == nil && (fl.ErrorRate < 0 || fl.ErrorRate > 1 || fl.DropPowerOn < -1 || fl.Latency < 0) {
			t.Fatalf("accepted %+v", fl)
		}
	})
}
