package logflags

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"
)

func TestFlagsConfigureTheLogger(t *testing.T) {
	cases := []struct {
		name      string
		args      []string
		debugSeen bool
		json      bool
	}{
		{"defaults", nil, false, false},
		{"debug in json", []string{"--log.level=debug", "--log.format=json"}, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			app := kingpin.New("x", "")
			var c Config
			Add(app, &c, "info")
			if _, err := app.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			l := c.New(&out)
			l.Debug("dbg")
			l.Info("hello")
			s := out.String()
			if strings.Contains(s, "dbg") != tc.debugSeen {
				t.Errorf("debug line shown = %v, want %v:\n%s", !tc.debugSeen, tc.debugSeen, s)
			}
			first := strings.SplitN(s, "\n", 2)[0]
			if json.Valid([]byte(first)) != tc.json {
				t.Errorf("json output = %v, want %v: %s", !tc.json, tc.json, first)
			}
		})
	}
}

func TestRejectsUnknownNames(t *testing.T) {
	app := kingpin.New("x", "")
	var c Config
	Add(app, &c, "info")
	for _, args := range [][]string{{"--log.level=loud"}, {"--log.format=xml"}} {
		if _, err := app.Parse(args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
