package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
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
  disruption: {max_concurrent: lots, max_power_offs: -1, max_power_offs_share: 2, max_concurrent_share: -0.5}
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
		{"policy.disruption.max_concurrent_share", "-0.5 is not a share in [0, 1]", 19},
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

// TestUndecodedFieldAlone: a value that could not be decoded is its field's one problem; the
// checks that weigh it with its siblings would judge the default it kept.
func TestUndecodedFieldAlone(t *testing.T) {
	for _, cost := range []string{"{watts: abc, price_per_kwh: 0.2}", "{watts: 500, price_per_kwh: cheap}", "{hourly: x, watts: 300}"} {
		got := problemsOf(t, strings.Replace(minimal, "cost: {hourly: 1.5}", "cost: "+cost, 1), Daemon)
		if len(got) != 1 {
			t.Errorf("cost %s: problems %v, want the undecoded field alone", cost, got)
		}
	}
	// A problem of the field above that reads other fields stays.
	got := problemsOf(t, strings.Replace(minimal, "profile: {cpu_cores: 8}", "profile: {cpu_cores: 8}\n    min: lots\n    max: -1", 1), Daemon)
	if _, ok := got["pools[0].max"]; !ok || len(got) != 2 {
		t.Errorf("problems %v, want pools[0].min and pools[0].max", got)
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

// A list item that cannot be read keeps its place: the problems of the items after it name
// their own index and line, and an empty item (`- ~`, a bare `-`) is a problem too. yaml.v3
// leaves null items of a list of structs out, so the bad item used to shift the rest up one
// (schedules[1].timezone for the third schedule, on the second's line) and hide the second's
// problem; an empty item was silently dropped.
func TestListItemsKeepTheirPlace(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       []Problem
	}{
		{"a schedule that is no mapping", strings.Replace(minimal, "server:", `policy:
  schedules:
    - "business-hours"
    - {name: night, start: "22:00", end: "25:00"}
    - {name: day, timezone: Mars/Olympus, start: "08:00", end: "18:00"}
server:`, 1), []Problem{
			{Path: "policy.schedules[0]", Message: "must be a mapping (key: value)", Line: 4},
			{Path: "policy.schedules[1].end", Message: `"25:00" is not a time of day HH:MM (or 24:00)`, Line: 5},
			{Path: "policy.schedules[2].timezone", Message: `unknown time zone "Mars/Olympus"`, Line: 6},
		}},
		{"an empty pool before a bad one", minimal + "  - ~\n  - {name: gpu, profile: {cpu_cores: 0}, cost: {hourly: 1}}\n", []Problem{
			{Path: "pools[1]", Message: "is empty", Line: 11},
			{Path: "pools[2].profile.cpu_cores", Message: "must be positive", Line: 12},
		}},
		{"an empty node", strings.Replace(minimal, "    nodes:\n", "    nodes:\n      -\n", 1), []Problem{
			{Path: "pools[0].nodes[0]", Message: "is empty", Line: 9},
		}},
		{"an empty partition", minimal + "classes: [{name: a, partitions: [x, ~]}, {name: b}]\n", []Problem{
			{Path: "classes[0].partitions[1]", Message: "is empty", Line: 11},
		}},
		{"a bad class before a bad one", minimal + "classes:\n  - [light]\n  - {name: b, max_cpus: -1}\n  - {name: c}\n", []Problem{
			{Path: "classes[0]", Message: "must be a mapping (key: value)", Line: 12},
			{Path: "classes[1].max_cpus", Message: "must not be negative", Line: 13},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := problemList(t, tc.yaml, Daemon)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("problems:\n%v\nwant:\n%v", got, tc.want)
			}
		})
	}
}

// An anchored value used through aliases of aliases is checked once per use as a type, so a
// file of a few kilobytes cannot make the check walk millions of values: this one (a pool of
// 400 nodes, each an alias, listed 400 times) took 12 s, walking each of its 400 labels 160,000
// times. The walk now checks no more values than the file holds. yaml.v3 then refuses it.
func TestAliasesOfAliasesAreCheap(t *testing.T) {
	const n = 400
	var b strings.Builder
	b.WriteString("server: {webhook_auth_disabled: true}\npools:\n  - &p\n    name: cpu\n    profile: {cpu_cores: 8}\n    cost: {hourly: 1}\n    nodes:\n      - &n\n        name: n1\n        labels: &l {")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "k%d: v", i)
	}
	b.WriteString("}\n" + strings.Repeat("      - *n\n", n-1) + strings.Repeat("  - *p\n", n-1))
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatal(err)
	}
	w := newWalker(&problems{})
	w.walk(doc.Content[0], reflect.TypeFor[Config](), "")
	if held := nodesHeld(&doc); w.values > held {
		t.Errorf("the walk checked %d values; the file holds %d", w.values, held)
	}
	if _, err := Parse([]byte(b.String())); err == nil || !strings.Contains(err.Error(), "excessive aliasing") {
		t.Errorf("error %v, want yaml's excessive aliasing", err)
	}
}

// nodesHeld counts the nodes of n's tree as the text writes them: an alias is one node.
func nodesHeld(n *yaml.Node) int {
	c := 1
	for _, k := range n.Content {
		c += nodesHeld(k)
	}
	return c
}

// Aliases that are used as they are meant to still read, and the problems of an anchored
// value are reported once, where it is first used.
func TestAliasesStillRead(t *testing.T) {
	y := `
server: {webhook_auth_disabled: true}
pools:
  - name: cpu
    profile: &prof {cpu_cores: 8}
    cost: {hourly: 1}
    nodes:
      - {name: n1, bmc: &bmc {protocol: ipmi, host: 127.0.0.1, username: admin, password_env: PW}}
      - {name: n2, bmc: *bmc}
  - name: cpu2
    profile: *prof
    cost: {hourly: 1}
    nodes:
      - {name: n3, bmc: *bmc}
`
	c, err := Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if c.Pools[1].Profile.CPUCores != 8 || c.Pools[1].Nodes[0].BMC.Host != "127.0.0.1" || c.Pools[0].Nodes[1].BMC.Username != "admin" {
		t.Errorf("aliases not read: %+v", c.Pools)
	}
	bad := strings.Replace(y, "profile: &prof {cpu_cores: 8}", "profile: &prof {cpu_cores: 8, cpus: 8}", 1)
	got := problemList(t, bad, Daemon)
	if len(got) != 1 || got[0].Path != "pools[0].profile.cpus" || got[0].Line != 5 {
		t.Errorf("problems %v, want one unknown key at pools[0].profile.cpus (line 5)", got)
	}
}

// Every value a validation problem quotes is cut to errtext.Max bytes: a 1 MB value makes a
// short message wherever it is given.
func TestValidationDoesNotEchoHugeValues(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	source := "telemetry_sources:\n  - name: fleet\n"
	cases := map[string]string{
		"defer until":         "classes:\n  - {name: batch, defer: {until: " + huge + ", max: 1h}}\n  - {name: rest}\n",
		"gpu signal":          "policy: {gpu_signal: " + huge + "}\n",
		"source name":         "telemetry_sources:\n  - name: " + huge + "\n",
		"source name twice":   "telemetry_sources:\n  - name: a" + huge + "\n  - name: a" + huge + "\n",
		"node label":          source + "    node_exporter: {node_label: '-" + huge + "'}\n",
		"node regex no group": source + "    node_exporter: {node_regex: " + huge + "}\n",
		"node regex invalid":  source + "    node_exporter: {node_regex: '(" + huge + "'}\n",
		"metric name":         source + "    dcgm_exporter: {power: a-" + huge + "}\n    node_exporter: {cpu_seconds: b-" + huge + "}\n",
		"pool source":         "",
		"storage name":        "policy: {storage: [{name: '" + huge + "!', regions: [a, b]}]}\n",
		"storage name twice":  "policy: {storage: [{name: " + huge + ", regions: [a, b]}, {name: " + huge + ", regions: [a, b]}]}\n",
		"moves adapter":       "jobs: {adapter: " + huge + "}\npolicy: {moves: {enabled: true}}\n",
		"kubernetes label":    "jobs: {adapter: kubernetes, kubernetes: {node_label: " + huge + "}}\n",
		"tariff currency":     "",
	}
	for name, extra := range cases {
		t.Run(name, func(t *testing.T) {
			y := minimal + extra
			switch name {
			case "pool source":
				y = strings.Replace(minimal, "cost: {hourly: 1.5}", "cost: {hourly: 1.5}\n    telemetry_source: "+huge, 1)
			case "kubernetes label":
				y = strings.Replace(y, "name: n1", "name: _n1", 1)
			case "tariff currency":
				y = strings.Replace(owned, "tariff: berlin}", "tariff: berlin, currency: "+huge+"}", 1)
			}
			_, err := Parse([]byte(y))
			if err == nil {
				t.Fatal("accepted")
			}
			if n := len(err.Error()); n > 2000 {
				t.Errorf("the error is %d bytes: %.300s", n, err)
			}
			if !strings.Contains(err.Error(), " bytes)") {
				t.Errorf("the error does not say how long the value was: %v", err)
			}
		})
	}
}

// Merge keys read as YAML means them (a fleet's pools and nodes written as shared defaults
// plus their own keys): a key set beside `<<` wins, an earlier source over a later, and the
// merged keys are checked as if written there. `<<` was an unknown key.
func TestMergeKeys(t *testing.T) {
	y := `
server: {webhook_auth_disabled: true}
pools:
  - &gpu
    name: a100
    profile: {cpu_cores: 64, gpus: 8}
    cost: {hourly: 30}
    boot_timeout: 20m
    labels: &region {region: eu-west, site: ams}
    nodes:
      - &node
        name: g1
        bmc: &bmc {protocol: redfish, host: g1-bmc, username: admin, password_env: PW}
      - <<: *node
        name: g2
        bmc: {<<: *bmc, host: g2-bmc}
  - <<: [*gpu, {min: 1}]
    name: h100
    cost: {hourly: 40}
    labels: {<<: *region, site: fra}
    nodes:
      - {name: h1, bmc: {<<: *bmc, host: h1-bmc, port: 8443}}
`
	c, err := Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	g2, h100 := c.Pools[0].Nodes[1], c.Pools[1]
	if g2.BMC.Host != "g2-bmc" || g2.BMC.Username != "admin" || g2.BMC.Protocol != "redfish" {
		t.Errorf("g2's bmc %+v", g2.BMC)
	}
	if h100.Profile.GPUs != 8 || h100.Cost.Hourly != 40 || time.Duration(h100.BootTimeout) != 20*time.Minute || h100.Min != 1 ||
		h100.Labels["region"] != "eu-west" || h100.Labels["site"] != "fra" || len(h100.Nodes) != 1 || h100.Nodes[0].BMC.Port != 8443 {
		t.Errorf("h100 %+v", h100)
	}
	// Each case's problem is the only one, but for a merge of no mapping: the keys it was to
	// bring are missing too.
	for _, tc := range []struct{ name, from, to, path, want string }{
		{"a merged key unknown, once", "profile: {cpu_cores: 64, gpus: 8}", "profile: {cpu_cores: 64, gpus: 8}\n    cpus: 64", "pools[0].cpus", "unknown key"},
		{"a merged value wrong, once", "boot_timeout: 20m", "boot_timeout: 20 minutes", "pools[0].boot_timeout", `"20 minutes" is not a duration (a number and a unit, no sign or spaces: 30s, 10m, 1h30m)`},
		{"merging no mapping", "{<<: *bmc, host: g2-bmc}", "{<<: 5, host: g2-bmc}", "pools[0].nodes[1].bmc.<<", "merges a mapping (<<: *defaults) or a list of them"},
		{"merging itself", "- &node\n        name: g1", "- &node\n        <<: *node\n        name: g1", "pools[0].nodes[0].<<", "merges the mapping it is in"},
		{"a key given twice beside a merge", "name: h100", "name: h100\n    name: h200", "pools[1].name", "given twice (first on line 18)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(y, tc.from) {
				t.Fatalf("no %q", tc.from)
			}
			got := problemList(t, strings.Replace(y, tc.from, tc.to, 1), Daemon)
			if len(got) != 1 && tc.name != "merging no mapping" || got[0].Path != tc.path || got[0].Message != tc.want || got[0].Line == 0 {
				t.Errorf("problems %v, want one at %s: %s", got, tc.path, tc.want)
			}
		})
	}
}

// A merged value is checked once, however many mappings merge it: 400 nodes that each merge
// one of 400 labels cost what the file holds.
func TestMergesAreCheap(t *testing.T) {
	const n = 400
	var b strings.Builder
	b.WriteString("server: {webhook_auth_disabled: true}\npools:\n  - name: cpu\n    profile: {cpu_cores: 8}\n    cost: {hourly: 1}\n    nodes:\n      - &n\n        name: n0\n        bmc: {protocol: ipmi, host: 127.0.0.1, username: admin, password_env: PW}\n        labels: {")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "k%d: v", i)
	}
	b.WriteString("}\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "      - {<<: *n, name: n%d}\n", i)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatal(err)
	}
	held := nodesHeld(&doc)
	w := newWalker(&problems{})
	w.walk(doc.Content[0], reflect.TypeFor[Config](), "")
	if w.values > held {
		t.Errorf("the walk checked %d values; the file holds %d", w.values, held)
	}
	c, err := Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if last := c.Pools[0].Nodes[n-1]; last.Name != fmt.Sprintf("n%d", n-1) || len(last.Labels) != n || last.BMC.Username != "admin" {
		t.Errorf("the last node %+v", last)
	}
}

// dropUnderCase is n nodes' problems: each node's undecoded port, and the checks over it
// (a sibling kept, the node's bmc and the port itself dropped), and a few paths around the first
// node's port.
func dropUnderCase(n int) (all, undecoded problems) {
	var checked problems
	for i := range n {
		node := fmt.Sprintf("pools[0].nodes[%d]", i)
		undecoded.add(node+".bmc.port", "not a whole number")
		checked.add(node+".bmc.username", "required")      // a sibling: kept
		checked.add(node+".bmc", "held with its siblings") // holds it: dropped
		checked.add(node+".bmc.port", "out of range")      // the same: dropped
	}
	checked.add("pools[0].nodes[0].bmc.port.x", "under it")          // dropped
	checked.add("pools[0].nodes[0].bmc.portal", "another key")       // kept
	checked.add("pools[0].nodes[0]", "two levels up")                // kept
	checked.add("pools[0].nodes[0].labels.kubernetes.io/x", "a key") // kept
	return append(slices.Clone(undecoded), checked...), undecoded
}

// dropUnder drops what repeats an undecoded value (its field, the key holding it, what lies
// under it) and keeps its siblings, and looks paths up rather than comparing each pair: a
// fleet of 50,000 nodes, each with a value that cannot be read and a key left out, took
// tens of seconds here (20,000: 2.6 s of a 2.9 s parse).
func TestDropUnder(t *testing.T) {
	const n = 100
	got := dropUnder(dropUnderCase(n))
	if len(got) != 2*n+3 || got[n].Path != "pools[0].nodes[0].bmc.username" || got[2*n].Path != "pools[0].nodes[0].bmc.portal" {
		t.Errorf("kept %d problems (want %d): %v ... %v", len(got), 2*n+3, got[n:n+1], got[2*n:])
	}
}

// BenchmarkDropUnder: a fleet of 50,000 nodes, each with a value that did not decode. The
// dropping was quadratic: at 10,000 nodes, 1,755 ms an op before and 6.5 ms after, measured in
// the same session (2026-12-04).
func BenchmarkDropUnder(b *testing.B) {
	all, undecoded := dropUnderCase(50_000)
	for b.Loop() {
		dropUnder(slices.Clone(all), undecoded)
	}
}

// max_concurrent: 0 was taken: the planner then started no scale-down while the executor still
// ran one action at a time (max(0, 1)). It is refused, and the problem says what stops
// scale-down instead.
func TestMaxConcurrentZeroIsRefused(t *testing.T) {
	for _, v := range []string{"0", "-1"} {
		got := problemsOf(t, minimal+"policy: {disruption: {max_concurrent: "+v+"}}\n", Daemon)
		p, ok := got["policy.disruption.max_concurrent"]
		if !ok {
			t.Errorf("max_concurrent: %s: no problem; got %v", v, got)
			continue
		}
		for _, says := range []string{v + " is not a positive count", "max_power_offs: 0", "rotactl pause"} {
			if !strings.Contains(p.Message, says) {
				t.Errorf("max_concurrent: %s: %q does not say %q", v, p.Message, says)
			}
		}
	}
}
