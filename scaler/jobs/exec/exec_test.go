package exec_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/jobs"
	"github.com/rotahq/rota/scaler/jobs/exec"
)

// script writes an executable shell script into dir and returns its path.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func newManager(t *testing.T, cmds config.ExecJobs, edit func(*exec.Options)) *exec.Manager {
	t.Helper()
	logger, _ := logtest.NewNullLogger()
	classes := &config.Config{Classes: config.DefaultClasses()}
	o := exec.Options{Commands: cmds, Timeout: 5 * time.Second, Classify: classes.Classify, Log: logrus.NewEntry(logger)}
	if edit != nil {
		edit(&o)
	}
	m, err := exec.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// fill completes cmds with programs that must not run.
func fill(t *testing.T, dir string, cmds config.ExecJobs) config.ExecJobs {
	never := script(t, dir, "never", `echo "must not run" >&2; exit 99`)
	for _, c := range []*string{&cmds.State, &cmds.Demand, &cmds.Drain, &cmds.Resume} {
		if *c == "" {
			*c = never
		}
	}
	return cmds
}

const goodState = `{"nodes": {
  "n1": {"jobs": 2, "cpus": 8, "gpus": 1, "drained": false, "drained_by_rota": false, "responding": true},
  "n2": {"jobs": 0, "cpus": 0, "gpus": 0, "drained": true, "drained_by_rota": true, "responding": true}}}`

func TestNodes(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		maxBytes int64
		timeout  time.Duration
		want     map[string]fleet.JobsView
		wantErr  string // part of the error's text
	}{
		{name: "good output", body: "cat <<'EOF'\n" + goodState + "\nEOF", want: map[string]fleet.JobsView{
			"n1": {Known: true, Jobs: 2, CPUs: 8, GPUs: 1, Responding: true},
			"n2": {Known: true, Drained: true, DrainedByRota: true, Responding: true},
		}},
		{name: "no nodes known", body: `echo '{"nodes": {}}'`, want: map[string]fleet.JobsView{}},
		{name: "garbage", body: `echo 'NODELIST STATE'; echo 'n1 idle'`, wantErr: "not the documented JSON"},
		{name: "empty output", body: `true`, wantErr: "not the documented JSON"},
		{name: "no nodes key", body: `echo '{}'`, wantErr: `no "nodes" object`},
		{name: "misspelt field", body: `echo '{"nodes": {"n1": {"job": 2, "cpus": 8, "gpus": 0, "drained": false, "drained_by_rota": false, "responding": true}}}'`, wantErr: `unknown field "job"`},
		{name: "missing field", body: `echo '{"nodes": {"n1": {"cpus": 8, "gpus": 0, "drained": false, "drained_by_rota": false, "responding": true}}}'`, wantErr: "are all required"},
		{name: "negative jobs", body: `echo '{"nodes": {"n1": {"jobs": -1, "cpus": 8, "gpus": 0, "drained": false, "drained_by_rota": false, "responding": true}}}'`, wantErr: "negative"},
		{name: "two objects", body: `echo '{"nodes": {}}{"nodes": {}}'`, wantErr: "data after"},
		// encoding/json keeps the last of a key given twice: the busy n1 would read idle.
		{name: "node listed twice", body: `echo '{"nodes": {"n1": {"jobs": 3, "cpus": 8, "gpus": 0, "drained": true, "drained_by_rota": true, "responding": true}, "n1": {"jobs": 0, "cpus": 0, "gpus": 0, "drained": true, "drained_by_rota": true, "responding": true}}}'`, wantErr: `"n1" given twice`},
		{name: "field given twice", body: `echo '{"nodes": {"n1": {"jobs": 3, "cpus": 8, "gpus": 0, "drained": true, "drained_by_rota": true, "responding": true, "jobs": 0}}}'`, wantErr: `"jobs" given twice`},
		// Allocated reads jobs, cpus and gpus: a running job listed on a server they call empty
		// must not let it be powered off.
		{name: "running jobs on a server with none", body: `echo '{"nodes": {"n1": {"jobs": 0, "cpus": 0, "gpus": 0, "drained": true, "drained_by_rota": true, "responding": true, "running": [{"id": "7", "cpus": 4, "started": "2026-11-20T09:00:00Z"}]}}}'`, wantErr: `lists 1 running jobs but "jobs" is 0`},
		{name: "a job listed twice on a server", body: `echo '{"nodes": {"n1": {"jobs": 2, "cpus": 8, "gpus": 0, "drained": false, "drained_by_rota": false, "responding": true, "running": [{"id": "7", "cpus": 4, "started": "2026-11-20T09:00:00Z"}, {"id": "7", "cpus": 4, "started": "2026-11-20T09:00:00Z"}]}}}'`, wantErr: `running[1]: job "7" listed twice`},
		{name: "field in another case", body: `echo '{"nodes": {"n1": {"jobs": 3, "JOBS": 0, "cpus": 8, "gpus": 0, "drained": true, "drained_by_rota": true, "responding": true}}}'`, wantErr: `unknown field "JOBS"`},
		{name: "exit 1", body: `echo '{"nodes": {}}'; echo 'sinfo: error: slurmctld down' >&2; exit 1`, wantErr: "exit status 1: sinfo: error: slurmctld down"},
		{name: "hangs past the timeout", body: `sleep 60 & wait`, timeout: 200 * time.Millisecond, wantErr: "no answer within 200ms"},
		{name: "huge output", body: `while :; do echo '{"nodes": {}}'; done`, maxBytes: 4096, wantErr: "printed more than 4096 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cmds := fill(t, dir, config.ExecJobs{State: script(t, dir, "state", tc.body)})
			m := newManager(t, cmds, func(o *exec.Options) {
				if tc.timeout > 0 {
					o.Timeout = tc.timeout
				}
				o.MaxOutputBytes = tc.maxBytes
			})
			got, err := m.Nodes(context.Background())
			if tc.wantErr != "" {
				var ee *exec.Error
				if !errors.As(err, &ee) || ee.Command != "state_command" || !strings.HasSuffix(ee.Program, "/state") {
					t.Fatalf("error %v is not an *exec.Error naming state_command", err)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %q does not say %q", err, tc.wantErr)
				}
				if got != nil {
					t.Errorf("a failed call returned a partial view %v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestDemandIsClassified(t *testing.T) {
	dir := t.TempDir()
	out := `{"demand": [
	  {"partition": "batch", "cpus": 4, "gpus": 0, "memory_bytes": 0, "nodes": 1, "count": 3, "department": "", "region": "", "since": "2026-11-20T09:00:00Z"},
	  {"partition": "train", "cpus": 32, "gpus": 8, "memory_bytes": 1073741824, "nodes": 2, "count": 1, "department": "research", "region": "eu-west", "since": "2026-11-20T08:00:00+01:00"}]}`
	cmds := fill(t, dir, config.ExecJobs{Demand: script(t, dir, "demand", "cat <<'EOF'\n"+out+"\nEOF")})
	got, err := newManager(t, cmds, nil).Demand(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []fleet.Demand{
		{Class: "light", Partition: "batch", Shape: config.Shape{Partition: "batch", CPUs: 4}, Nodes: 1, Count: 3, Since: time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)},
		{Class: "heavy", Partition: "train", Department: "research", Region: "eu-west", Shape: config.Shape{Partition: "train", CPUs: 32, GPUs: 8, Memory: 1 << 30}, Nodes: 2, Count: 1, Since: time.Date(2026, 11, 20, 7, 0, 0, 0, time.UTC)},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if !got[i].Since.Equal(want[i].Since) {
			t.Errorf("[%d] since %v, want %v", i, got[i].Since, want[i].Since)
		}
		got[i].Since = want[i].Since
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestDemandRejects(t *testing.T) {
	tests := []struct{ name, out, wantErr string }{
		{"no demand key", `{}`, `no "demand" list`},
		{"missing since", `{"demand": [{"cpus": 1, "nodes": 1, "count": 1}]}`, "required"},
		{"bad since", `{"demand": [{"cpus": 1, "nodes": 1, "count": 1, "since": "yesterday"}]}`, "not the documented JSON"},
		{"zero count", `{"demand": [{"cpus": 1, "nodes": 1, "count": 0, "since": "2026-11-20T09:00:00Z"}]}`, "at least 1"},
		{"negative memory", `{"demand": [{"cpus": 1, "nodes": 1, "count": 1, "memory_bytes": -1, "since": "2026-11-20T09:00:00Z"}]}`, "not the documented JSON"},
		{"field given twice", `{"demand": [{"cpus": 1, "nodes": 1, "count": 1, "count": 5, "since": "2026-11-20T09:00:00Z"}]}`, `"count" given twice`},
		// nodes times count past 2^63 read as no demand at all
		{"a count past any queue", `{"demand": [{"cpus": 1, "nodes": 2, "count": 4611686018427387904, "since": "2026-11-20T09:00:00Z"}]}`, "count at most"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cmds := fill(t, dir, config.ExecJobs{Demand: script(t, dir, "demand", "cat <<'EOF'\n"+tc.out+"\nEOF")})
			got, err := newManager(t, cmds, nil).Demand(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "demand_command") {
				t.Fatalf("error %v, want one naming demand_command and saying %q", err, tc.wantErr)
			}
			if got != nil {
				t.Errorf("partial demand %+v", got)
			}
		})
	}
}

// TestDrainPassesArgumentsWithoutShell: the reason reaches the program as one argument, and
// the command line's own quoted arguments come first.
func TestDrainPassesArgumentsWithoutShell(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "args")
	drain := script(t, dir, "drain", `for a in "$@"; do printf '%s\n' "$a" >> "`+log+`"; done`)
	state := script(t, dir, "state", "cat <<'EOF'\n"+goodState+"\nEOF")
	cmds := fill(t, dir, config.ExecJobs{State: state, Drain: drain + ` --partition 'gpu nodes'`})
	if err := newManager(t, cmds, nil).Drain(context.Background(), "n1", "idle; $(rm -rf /)"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := "--partition\ngpu nodes\nn1\n" + jobs.Marker + " idle; $(rm -rf /)\n"
	if string(b) != want {
		t.Errorf("arguments:\n%s\nwant:\n%s", b, want)
	}
}

func TestDrainFailure(t *testing.T) {
	dir := t.TempDir()
	cmds := fill(t, dir, config.ExecJobs{State: script(t, dir, "state", "cat <<'EOF'\n"+goodState+"\nEOF"),
		Drain: script(t, dir, "drain", `echo 'scontrol: Invalid node name' >&2; exit 2`)})
	err := newManager(t, cmds, nil).Drain(context.Background(), "n1", "idle")
	if err == nil || !strings.Contains(err.Error(), "draining n1") || !strings.Contains(err.Error(), "Invalid node name") {
		t.Fatalf("error %v", err)
	}
}

// TestDrainAndResumeReadTheStateFirst: each reads state_command now, not the pass's older
// view: neither takes over a person's drain (made since), and neither acts on a node that
// state_command does not list; a resume leaves a node that is not drained alone.
func TestDrainAndResumeReadTheStateFirst(t *testing.T) {
	state := `{"nodes": {
	  "ours":    {"jobs": 0, "cpus": 0, "gpus": 0, "drained": true, "drained_by_rota": true, "responding": true},
	  "theirs":  {"jobs": 0, "cpus": 0, "gpus": 0, "drained": true, "drained_by_rota": false, "responding": true},
	  "running": {"jobs": 1, "cpus": 4, "gpus": 0, "drained": false, "drained_by_rota": false, "responding": true}}}`
	tests := []struct {
		name, verb, node string
		wantRun          bool
		wantIs           error
		wantErr          bool
	}{
		{name: "rota's drain is resumed", verb: "resume", node: "ours", wantRun: true},
		{name: "a person's drain is not resumed", verb: "resume", node: "theirs", wantIs: jobs.ErrNotOurs},
		{name: "a node not drained is left", verb: "resume", node: "running"},
		{name: "an unknown node is not resumed", verb: "resume", node: "ghost", wantErr: true},
		{name: "a node in service is drained", verb: "drain", node: "running", wantRun: true},
		{name: "rota's drain is drained again", verb: "drain", node: "ours", wantRun: true},
		{name: "a person's drain is not taken over", verb: "drain", node: "theirs", wantIs: jobs.ErrNotOurs},
		{name: "an unknown node is not drained", verb: "drain", node: "ghost", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ran := filepath.Join(dir, "ran")
			cmds := fill(t, dir, config.ExecJobs{
				State:  script(t, dir, "state", "cat <<'EOF'\n"+state+"\nEOF"),
				Drain:  script(t, dir, "drain", `echo "$1" > "`+ran+`"`),
				Resume: script(t, dir, "resume", `echo "$1" > "`+ran+`"`),
			})
			m := newManager(t, cmds, nil)
			var err error
			if tc.verb == "drain" {
				err = m.Drain(context.Background(), tc.node, "idle")
			} else {
				err = m.Resume(context.Background(), tc.node)
			}
			switch {
			case tc.wantIs != nil && !errors.Is(err, tc.wantIs):
				t.Fatalf("error %v, want %v", err, tc.wantIs)
			case tc.wantErr && err == nil:
				t.Fatal("no error")
			case tc.wantIs == nil && !tc.wantErr && err != nil:
				t.Fatal(err)
			}
			b, _ := os.ReadFile(ran)
			if got := strings.TrimSpace(string(b)); (got == tc.node) != tc.wantRun {
				t.Errorf("%s_command ran with %q, want run %v", tc.verb, got, tc.wantRun)
			}
		})
	}
}

func TestProgramNotFound(t *testing.T) {
	dir := t.TempDir()
	cmds := fill(t, dir, config.ExecJobs{State: filepath.Join(dir, "missing")})
	_, err := newManager(t, cmds, nil).Nodes(context.Background())
	var ee *exec.Error
	if !errors.As(err, &ee) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("error %v", err)
	}
}

func TestNewRejectsBadCommandLines(t *testing.T) {
	logger, _ := logtest.NewNullLogger()
	_, err := exec.New(exec.Options{
		Commands: config.ExecJobs{State: "state 'unterminated", Demand: "demand", Drain: "", Resume: "resume"},
		Timeout:  time.Second, Classify: func(config.Shape) string { return "x" }, Log: logrus.NewEntry(logger),
	})
	if err == nil || !strings.Contains(err.Error(), "jobs.exec.state_command") || !strings.Contains(err.Error(), "jobs.exec.drain_command") {
		t.Fatalf("error %v, want both bad commands named", err)
	}
}

// TestWatcher: without watch_command there is no watch; with it, the ids it prints are read
// strictly, and a failing or garbled run is an error naming the command.
func TestWatcher(t *testing.T) {
	dir := t.TempDir()
	if w := newManager(t, fill(t, dir, config.ExecJobs{}), nil).Watcher(); w != nil {
		t.Fatalf("a watch without watch_command: %v", w)
	}
	for _, tc := range []struct {
		name, body string
		want       []string
		wantErr    string
	}{
		{name: "two jobs wait", body: `echo '{"waiting": ["1041", "1042"]}'`, want: []string{"1041", "1042"}},
		{name: "nothing waits", body: `echo '{"waiting": []}'`, want: []string{}},
		{name: "no waiting key", body: `echo '{}'`, wantErr: `watch_command`},
		{name: "misspelt key", body: `echo '{"wating": []}'`, wantErr: `unknown field "wating"`},
		{name: "an empty id", body: `echo '{"waiting": [""]}'`, wantErr: "empty identifier"},
		{name: "exit status", body: `echo 'squeue: error' >&2; exit 1`, wantErr: "squeue: error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmds := fill(t, dir, config.ExecJobs{Watch: script(t, dir, "watch", tc.body)})
			got, err := newManager(t, cmds, nil).Watcher().Waiting(context.Background())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Waiting: %q, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Waiting: %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestMove: move_command gets the node, the servers to exclude and the job ids as separate
// arguments, and its count comes back; without move_command no move is possible.
func TestMove(t *testing.T) {
	dir := t.TempDir()
	args := filepath.Join(dir, "args")
	move := script(t, dir, "move", `printf '%s\n' "$@" > `+args+`; echo '{"moved": 2}'`)
	m := newManager(t, fill(t, dir, config.ExecJobs{Move: move}), nil)
	n, err := m.Move(context.Background(), "g1", []string{"7", "8"}, []string{"g1", "g2"})
	if err != nil || n != 2 {
		t.Fatalf("Move: %d, %v; want 2", n, err)
	}
	got, _ := os.ReadFile(args)
	if string(got) != "g1\ng1,g2\n7\n8\n" {
		t.Fatalf("move_command got %q", got)
	}
	if _, err := newManager(t, fill(t, dir, config.ExecJobs{}), nil).Move(context.Background(), "g1", []string{"7"}, nil); !errors.Is(err, jobs.ErrCannotMove) {
		t.Fatalf("without move_command: %v, want ErrCannotMove", err)
	}
	bad := script(t, dir, "badmove", `echo moved`)
	if _, err := newManager(t, fill(t, dir, config.ExecJobs{Move: bad}), nil).Move(context.Background(), "g1", []string{"7"}, nil); err == nil {
		t.Fatal("a move_command that prints no count succeeded")
	}
	if n, err := m.Move(context.Background(), "g1", []string{"7"}, nil); err == nil {
		t.Fatalf("a move_command that moved 2 of the 1 job asked: %d, no error", n)
	}
}

// TestStateListsRunningJobs: state_command may list each server's jobs, what rota weighs a
// move by; demand may carry what its jobs can run on.
func TestStateListsRunningJobs(t *testing.T) {
	dir := t.TempDir()
	state := script(t, dir, "state", `cat <<'EOF'
{"nodes": {"g1": {"jobs": 1, "cpus": 2, "gpus": 0, "drained": false, "drained_by_rota": false, "responding": true,
  "running": [{"id": "7", "cpus": 2, "requeueable": true, "started": "2026-11-20T09:00:00Z", "time_limit_seconds": 7200,
               "checkpoint": "2026-11-20T10:00:00Z", "partition": "batch"}]}}}
EOF`)
	demand := script(t, dir, "demand", `echo '{"demand": [{"cpus": 1, "nodes": 1, "count": 1, "since": "2026-11-20T09:00:00Z", "time_limit_seconds": 600, "constraint": "a100", "exclude": "g1"}]}'`)
	m := newManager(t, fill(t, dir, config.ExecJobs{State: state, Demand: demand}), nil)
	views, err := m.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r := views["g1"].Running
	if len(r) != 1 || r[0].ID != "7" || !r[0].Requeueable || r[0].TimeLimit != 2*time.Hour || r[0].Checkpoint.IsZero() || r[0].Servers != 1 {
		t.Fatalf("running %+v", r)
	}
	d, err := m.Demand(context.Background())
	if err != nil || len(d) != 1 || d[0].TimeLimit != 10*time.Minute || d[0].Needs.Features != "a100" || d[0].Needs.Exclude != "g1" {
		t.Fatalf("demand %+v, %v", d, err)
	}
}
