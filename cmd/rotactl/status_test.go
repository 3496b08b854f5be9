package main

import (
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/api"
)

func TestPassLine(t *testing.T) {
	at := time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)
	tests := []struct {
		name string
		st   api.Status
		want string
	}{
		{name: "before the first pass", want: "none yet"},
		{name: "ok", st: api.Status{LastPass: at, LastPassOK: true}, want: "2026-11-20T09:30:00Z (ok)"},
		{name: "failed", st: api.Status{LastPass: at, LastError: "store closed\nagain"}, want: "2026-11-20T09:30:00Z (failed: store closed again)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := passLine(tc.st); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
