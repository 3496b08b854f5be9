package exec

import (
	"strings"
	"testing"

	"github.com/rotahq/rota/scaler/config"
)

// FuzzParseState: no output makes the parser panic, and whatever it accepts is a whole,
// sane view.
func FuzzParseState(f *testing.F) {
	for _, s := range []string{
		`{"nodes": {"n1": {"jobs": 1, "cpus": 4, "gpus": 0, "drained": false, "drained_by_rota": false, "responding": true}}}`,
		`{"nodes": {}}`, `{"nodes": null}`, `{}`, `[]`, `{"nodes": {"": {}}}`,
		`{"nodes": {"n1": {"jobs": 1e3, "cpus": -4}}}`,
		`{"nodes": {"n1": {"jobs": 1, "cpus": 1, "gpus": 0, "drained": false, "drained_by_rota": false, "responding": true,
		  "running": [{"id": "7", "cpus": 1, "requeueable": true, "started": "2026-11-20T09:00:00Z", "time_limit_seconds": 3600, "constraint": "a100&ib"}]}}}`,
		`{"nodes": {"n1": {"jobs": 1, "cpus": 1, "gpus": 0, "drained": false, "drained_by_rota": false, "responding": true, "running": [{"id": ""}]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		views, err := parseState(b)
		if err != nil {
			if views != nil {
				t.Fatal("error with a partial view")
			}
			return
		}
		for name, v := range views {
			if name == "" || !v.Known || v.Jobs < 0 || v.CPUs < 0 || v.GPUs < 0 || (v.DrainedByRota && !v.Drained) {
				t.Fatalf("accepted %q: %+v", name, v)
			}
			if len(v.Running) > v.Jobs {
				t.Fatalf("accepted %q: %d running jobs listed, jobs %d", name, len(v.Running), v.Jobs)
			}
			seen := map[string]bool{}
			for _, j := range v.Running {
				if seen[j.ID] {
					t.Fatalf("accepted %q: job %q listed twice", name, j.ID)
				}
				seen[j.ID] = true
				if j.ID == "" || j.CPUs < 0 || j.GPUs < 0 || j.Servers < 1 || j.Started.IsZero() || j.TimeLimit < 0 {
					t.Fatalf("accepted %q running %+v", name, j)
				}
			}
		}
	})
}

// FuzzParseDemand: likewise for demand_command's output.
func FuzzParseDemand(f *testing.F) {
	for _, s := range []string{
		`{"demand": [{"partition": "batch", "cpus": 4, "gpus": 1, "memory_bytes": 0, "nodes": 1, "count": 3, "department": "", "region": "", "since": "2026-11-20T09:00:00Z"}]}`,
		`{"demand": []}`, `{"demand": null}`, `{"demand": [{}]}`,
		`{"demand": [{"cpus": 1, "nodes": 1, "count": 1, "since": "0001-01-01T00:00:00Z"}]}`,
		`{"demand": [{"cpus": 1, "nodes": 1, "count": 1, "since": "2026-11-20T09:00:00Z", "time_limit_seconds": 60, "gpu_type": "a100", "exclude": "n1"}]}`,
	} {
		f.Add([]byte(s))
	}
	classes := &config.Config{Classes: config.DefaultClasses()}
	f.Fuzz(func(t *testing.T, b []byte) {
		demand, err := parseDemand(b, classes.Classify)
		if err != nil {
			if demand != nil {
				t.Fatal("error with a partial demand")
			}
			return
		}
		for _, d := range demand {
			if d.Class == "" || d.Shape.CPUs < 1 || d.Shape.GPUs < 0 || d.Nodes < 1 || d.Count < 1 || d.Since.IsZero() {
				t.Fatalf("accepted %+v", d)
			}
		}
	})
}

// FuzzParseWaiting: likewise for watch_command's output.
func FuzzParseWaiting(f *testing.F) {
	for _, s := range []string{`{"waiting": ["1", "2_3"]}`, `{"waiting": []}`, `{"waiting": null}`, `{"waiting": [""]}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ids, err := parseWaiting(b)
		if err != nil {
			if ids != nil {
				t.Fatal("error with a partial list")
			}
			return
		}
		for _, id := range ids {
			if id == "" {
				t.Fatal("accepted an empty id")
			}
		}
	})
}

// FuzzParseMove: move_command's output is a count or an error.
func FuzzParseMove(f *testing.F) {
	for _, s := range []string{`{"moved": 2}`, `{"moved": -1}`, `{}`, `{"moved": 1, "x": 2}`, `2`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if n, err := parseMove(b, 3); err == nil && (n < 0 || n > 3) {
			t.Fatalf("accepted %d", n)
		}
	})
}

// A job manager's output that does not read fails with an error that quotes no value whole,
// however long it is (the error reaches the log and rotactl status).
func TestParseErrorsAreShort(t *testing.T) {
	huge := strings.Repeat("7", 1<<20)
	classes := &config.Config{Classes: config.DefaultClasses()}
	for _, tc := range []struct {
		name, out string
		parse     func([]byte) error
		want      string
	}{
		{"a huge number", `{"nodes": {"n1": {"jobs": ` + huge + `}}}`, parseStateErr, "cannot unmarshal number 7777"},
		{"a huge node name", `{"nodes": {"` + huge + `": {"jobs": 1}}}`, parseStateErr, `node "7777`},
		{"a huge node name of a bad job", `{"nodes": {"` + huge + `": {"jobs": 1, "cpus": 1, "gpus": 0, "drained": false, "drained_by_rota": false, "responding": true, "running": [{"id": ""}]}}}`, parseStateErr, `node "7777`},
		{"a huge time", `{"demand": [{"cpus": 1, "nodes": 1, "count": 1, "since": "` + huge + `"}]}`, func(b []byte) error { _, err := parseDemand(b, classes.Classify); return err }, `parsing time "7777`},
		{"a huge unknown field", `{"waiting": [], "` + huge + `": 1}`, func(b []byte) error { _, err := parseWaiting(b); return err }, `unknown field "7777`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.parse([]byte(tc.out))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %.300v, want an error naming %q", err, tc.want)
			}
			if len(err.Error()) > 1000 {
				t.Errorf("an error of %d bytes: %.300s", len(err.Error()), err)
			}
		})
	}
}

func parseStateErr(b []byte) error { _, err := parseState(b); return err }
