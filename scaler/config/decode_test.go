package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// problemList parses y, which must fail validation, and returns its problems.
func problemList(t *testing.T, y string, mode Mode) []Problem {
	t.Helper()
	_, err := ParseFor([]byte(y), mode)
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("want a ValidationError, got %v", err)
	}
	return ve.Problems
}

// problemsOf parses y and returns its problems by path.
func problemsOf(t *testing.T, y string, mode Mode) map[string]Problem {
	t.Helper()
	got := map[string]Problem{}
	for _, p := range problemList(t, y, mode) {
		got[p.Path] = p
	}
	return got
}

// A value that cannot be decoded is a problem with its key path and line, reported with every
// other problem of the file; it used to stop decoding with yaml's first error (a bad duration
// named neither key nor line, and hid the rest).
func TestUndecodableValuesAreProblemsWithTheRest(t *testing.T) {
	y := minimal + `policy:
  idle:
    window: -10m
    cpu_threshold: 1.5
  backlog:
    for: 10 minutes
  dry_run: maybe
  polcy: 1
  disruption: {max_concurrent: lots, max_power_offs: -1, max_power_offs_share: 2}
  schedules:
    - {name: a, days: mon, start: '08:00', end: '18:00'}
    - 5
prometheus:
  timeout: 10s
  timeout: 20s
`
	got := problemsOf(t, y, Daemon)
	want := []struct {
		path, says string
		line       int
	}{
		{"policy.idle.window", `"-10m" is not a duration`, 13},
		{"policy.idle.cpu_threshold", "1.5 is not a ratio", 14},
		{"policy.backlog.for", `"10 minutes" is not a duration`, 16},
		{"policy.dry_run", `"maybe" is not true or false`, 17},
		{"policy.polcy", "unknown key", 18},
		{"policy.disruption.max_concurrent", `"lots" is not a whole number`, 19},
		{"policy.disruption.max_power_offs", "must not be negative", 19},
		{"policy.disruption.max_power_offs_share", "2 is not a share in [0, 1]", 19},
		{"policy.schedules[0].days", "must be a list", 21},
		{"policy.schedules[1]", "must be a mapping", 22},
		{"prometheus.timeout", "given twice (first on line 24)", 25},
	}
	for _, w := range want {
		p, ok := got[w.path]
		if !ok {
			t.Errorf("no problem at %s; got %v", w.path, got)
			continue
		}
		if !strings.Contains(p.Message, w.says) || p.Line != w.line {
			t.Errorf("%s: %q at line %d, want %q at line %d", w.path, p.Message, p.Line, w.says, w.line)
		}
	}
	// The schedule item that was no mapping is not also "name: required".
	if p, ok := got["policy.schedules[1].name"]; ok {
		t.Errorf("a problem repeated under an undecodable value: %v", p)
	}
	if len(got) != len(want) {
		t.Errorf("%d problems, want %d: %v", len(got), len(want), got)
	}
}

// The error prints each problem with its line.
func TestProblemsPrintTheirLine(t *testing.T) {
	_, err := Parse([]byte(minimal + "policy: {idle: {window: 10 minutes}}\n"))
	if err == nil || !strings.Contains(err.Error(), `policy.idle.window: "10 minutes" is not a duration`) || !strings.Contains(err.Error(), "(line 11)") {
		t.Errorf("error %v; want the path, the value and the line", err)
	}
}

// Outside input is quoted cut short: a 1 MB node name or duration makes a short message.
func TestProblemsDoNotEchoHugeValues(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	y := strings.Replace(minimal, "name: n1", "name: "+huge, 1) + "policy: {idle: {window: " + huge + "}}\n" + strings.Repeat("k", 1000) + ": 1\n"
	_, err := Parse([]byte(y))
	if err == nil {
		t.Fatal("accepted")
	}
	if n := len(err.Error()); n > 2000 {
		t.Errorf("the error is %d bytes: it echoes the input", n)
	}
	if !strings.Contains(err.Error(), "(1048576 bytes)") {
		t.Errorf("the error does not say how long the value was: %v", err)
	}
}

func TestTokenSettingsAgree(t *testing.T) {
	base := strings.Replace(minimal, "  webhook_auth_disabled: true\n", "", 1)
	cases := []struct {
		name, server, says string
	}{
		{"a token file and auth disabled", "  webhook_auth_disabled: true\n  webhook_token_file: /etc/rota/webhook.token\n", "would ignore it"},
		{"one file for both", "  webhook_token_file: /etc/rota/rota.token\n  api_token_file: /etc/rota/./rota.token\n", "need a token each"},
		{"neither", "  listen_address: 127.0.0.1:10091\n", "required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			y := strings.Replace(base, "server:\n", "server:\n"+c.server, 1)
			got := problemsOf(t, y, Daemon)
			if p, ok := got["server.webhook_token_file"]; !ok || !strings.Contains(p.Message, c.says) {
				t.Errorf("server.webhook_token_file: %v, want %q", got, c.says)
			}
		})
	}
}

// A replay reads the pools and the policy; it needs no listener, token, store, Prometheus, job
// manager or BMC settings (it used to need server.webhook_auth_disabled: true), and still
// checks what it uses.
func TestReplayModeChecksWhatAReplayUses(t *testing.T) {
	replay := `
pools:
  - name: cpu
    profile: {cpu_cores: 8}
    cost: {hourly: 1.5}
    nodes: [{name: n1}]
`
	if _, err := ParseFor([]byte(replay), Replay); err != nil {
		t.Fatalf("replay: %v", err)
	}
	daemon := problemsOf(t, replay, Daemon)
	for _, path := range []string{"server.webhook_token_file", "pools[0].nodes[0].bmc.protocol"} {
		if _, ok := daemon[path]; !ok {
			t.Errorf("the daemon mode does not ask for %s: %v", path, daemon)
		}
	}
	got := problemsOf(t, replay+"policy: {idle: {window: 10 minutes}}\njobs: {adapter: lsf}\n", Replay)
	if _, ok := got["policy.idle.window"]; !ok || len(got) != 1 {
		t.Errorf("replay problems %v, want policy.idle.window alone", got)
	}
}

// BenchmarkParseLargeFleet parses a config of 10,000 servers (the target scale): the checked
// decode walks every value once.
func BenchmarkParseLargeFleet(b *testing.B) {
	var y strings.Builder
	y.WriteString("server: {webhook_auth_disabled: true}\npools:\n  - name: cpu\n    profile: {cpu_cores: 8, memory: 512GiB}\n    cost: {hourly: 1.5}\n    boot_timeout: 10m\n    nodes:\n")
	for i := range 10000 {
		fmt.Fprintf(&y, "      - {name: n%05d, exporter: 'n%05d:9100', labels: {rack: r%d}, bmc: {protocol: ipmi, host: 10.0.%d.%d, username: admin, password_env: PW}}\n", i, i, i%40, i/250, i%250)
	}
	data := []byte(y.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
