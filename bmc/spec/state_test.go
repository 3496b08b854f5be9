package spec

import (
	"strings"
	"testing"
)

func TestParseState(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want State
	}{
		{"ipmitool on", "Chassis Power is on\n", StateOn},
		{"ipmitool off", "Chassis Power is off\n", StateOff},
		{"redfish on", "On", StateOn},
		{"redfish off", "Off", StateOff},
		{"redfish powering on", "PoweringOn", StateTransitioning},
		{"redfish powering off", "PoweringOff", StateTransitioning},
		{"case and spaces", "  oN \r\n", StateOn},
		{"paused is not sure", "Paused", StateUnknown},
		{"empty", "", StateUnknown},
		{"error text", "Error: Unable to establish IPMI v2 / RMCP+ session", StateUnknown},
		{"on with trailing words", "Chassis Power is on and off", StateUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseState(tt.raw); got != tt.want {
				t.Errorf("ParseState(%q) = %s, want %s", tt.raw, got, tt.want)
			}
		})
	}
}

// FuzzParseState: any answer maps to one of the four states, and on/off only when the answer
// says exactly that.
func FuzzParseState(f *testing.F) {
	for _, s := range []string{"Chassis Power is on\n", "Off", "PoweringOn", "", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		st := ParseState(raw)
		switch st {
		case StateOn, StateOff:
			norm := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(raw)), "chassis power is ")
			if norm != string(st) {
				t.Fatalf("ParseState(%q) = %s from a different answer", raw, st)
			}
		case StateTransitioning, StateUnknown:
		default:
			t.Fatalf("ParseState(%q) = %q, not a State", raw, st)
		}
	})
}
