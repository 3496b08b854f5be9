package main

import (
	"strings"
	"testing"
)

// TestHelpStopsBeforeTheVerb: --help prints usage and exits 0 without running the verb (which
// here would fail for want of a config file), and no verb at all is a usage error.
func TestHelpStopsBeforeTheVerb(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		code     int
		inStderr string
	}{
		{"verb help", []string{"validate", "--help"}, 0, "validate"},
		{"top-level help", []string{"--help"}, 0, "power"},
		{"no verb", nil, 2, "command"},
		{"unknown verb", []string{"frobnicate"}, 2, "frobnicate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := rotactlInProcess(tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			if !strings.Contains(stderr+stdout, tc.inStderr) {
				t.Errorf("output does not mention %q:\n%s%s", tc.inStderr, stdout, stderr)
			}
			if strings.Contains(stderr, "no such file") {
				t.Errorf("the verb ran after --help: %s", stderr)
			}
		})
	}
}
