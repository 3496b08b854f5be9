package config

import "testing"

// TestNearestNode: a typo is answered with the node meant, a name far from every node with
// nothing.
func TestNearestNode(t *testing.T) {
	cfg := &Config{Pools: []Pool{
		{Name: "cpu", Nodes: []Node{{Name: "cpu01"}, {Name: "cpu02"}}},
		{Name: "gpu", Nodes: []Node{{Name: "gpu01"}, {Name: "gpu-h100-17"}}},
	}}
	for _, tc := range []struct{ name, want string }{
		{"gpu1", "gpu01"},               // a letter left out
		{"GPU01", "gpu01"},              // another case
		{"cpu0", "cpu01"},               // as near cpu01 as cpu02: the first
		{"cpu10", ""},                   // two edits of five: too far (a node of its own?)
		{"gpu-h100-71", "gpu-h100-17"},  // two edits of eleven
		{"gpu-h101-71", "gpu-h100-17"},  // three edits of eleven
		{"storage01", ""},               // far from all
		{"", ""},                        // nothing to be near
		{"x", ""},                       // four edits or more from every name
		{string(make([]byte, 300)), ""}, // longer than a host name
	} {
		if got := cfg.NearestNode(tc.name); got != tc.want {
			t.Errorf("NearestNode(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}
