package bmc

import "testing"

func TestIPMISessionRefused(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want bool
	}{
		{"lanplus refused", "Error: Unable to establish IPMI v2 / RMCP+ session\n", true},
		{"lan refused", "Error: Unable to establish LAN session", true},
		{"answer", "Chassis Power is on", false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IPMISessionRefused(tt.out); got != tt.want {
				t.Errorf("IPMISessionRefused(%q) = %v", tt.out, got)
			}
		})
	}
}

func FuzzPresencePong(f *testing.F) {
	f.Add([]byte{0x06, 0x00, 0xff, 0x06, 0x00, 0x00, 0x11, 0xbe, 0x40, 0x01, 0x00, 0x10})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if isPresencePong(b) && (len(b) < 9 || b[8] != 0x40) {
			t.Fatalf("accepted %x", b)
		}
	})
}
