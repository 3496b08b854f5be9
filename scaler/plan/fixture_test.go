package plan

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// t0 is a Monday noon, UTC.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const baseYAML = `
server: {webhook_auth_disabled: true}
jobs: {adapter: slurm, slurm: {requeue: true}}
policy:
  evaluation_interval: 1m
  idle: {cpu_threshold: 0.2, gpu_threshold: 0.05, window: 10m}
  backlog: {queued_jobs: 2, for: 2m}
  telemetry: {max_age: 2m}
  cooldown: {scale_up: 2m, scale_down: 5m}
  node: {min_on: 30m, min_off: 10m, max_cycles_per_day: 6}
  disruption: {max_power_offs: 4, window: 10m, max_concurrent: 8}
  drain: {timeout: 30m}
  break_even: {wear_time: 10m}
  spares: {quantile: 0.9, max_share: 0.1}
%s
pools:
  - name: cpu
    profile: {cpu_cores: 32, memory: 128GiB}
    cost: {hourly: 1}
    nodes: [{name: x, bmc: {protocol: ipmi, host: h, username: u, password_env: P}}]
  - name: gpu
    profile: {cpu_cores: 64, memory: 512GiB, gpus: 8}
    cost: {hourly: 10}
    nodes: [{name: y, bmc: {protocol: ipmi, host: h, username: u, password_env: P}}]
`

// newConfig parses the base config with extra policy YAML (indented under policy:), then
// gives pool cpu nCPU nodes and pool gpu nGPU nodes (c1.., g1..), Max = all, Min = 0.
func newConfig(t testing.TB, policy string, nCPU, nGPU int) *config.Config {
	t.Helper()
	return configOf(t, fmt.Sprintf(baseYAML, policy), nCPU, nGPU)
}

// configOf is newConfig of a config file y with pools cpu and gpu.
func configOf(t testing.TB, y string, nCPU, nGPU int) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range []int{nCPU, nGPU} {
		pl := &cfg.Pools[i]
		pl.Nodes = make([]config.Node, n)
		for j := range pl.Nodes {
			pl.Nodes[j].Name = fmt.Sprintf("%c%d", pl.Name[0], j+1)
		}
		m := n
		pl.Max = &m
	}
	return cfg
}

// Node builders: an idle On server and an Off one, long settled.
func onNode(name, pool string) fleet.Node {
	return fleet.Node{
		Name: name, Pool: pool, State: fleet.StateOn, Since: t0.Add(-2 * time.Hour), Power: bmc.StateOn,
		Jobs:      fleet.JobsView{Known: true, Responding: true},
		Telemetry: fleet.TelemetryView{Present: true, LastSample: t0.Add(-15 * time.Second), CPUMax: 0.02},
		LastOn:    t0.Add(-2 * time.Hour), IdleSince: t0.Add(-2 * time.Hour),
	}
}

func offNode(name, pool string) fleet.Node {
	return fleet.Node{
		Name: name, Pool: pool, State: fleet.StateOff, Since: t0.Add(-2 * time.Hour), Power: bmc.StateOff,
		Jobs:    fleet.JobsView{Known: true},
		LastOff: t0.Add(-2 * time.Hour),
	}
}

func drainingNode(name, pool string) fleet.Node {
	n := onNode(name, pool)
	n.State, n.Since = fleet.StateDraining, t0.Add(-5*time.Minute)
	n.Jobs.Drained, n.Jobs.DrainedByRota = true, true
	return n
}

func with(n fleet.Node, f func(*fleet.Node)) fleet.Node { f(&n); return n }

func booting(n fleet.Node) fleet.Node { n.State = fleet.StateBooting; return n }

func busy(n *fleet.Node) { n.Jobs.Jobs, n.Jobs.CPUs, n.Telemetry.CPUMax = 1, 32, 0.9 }

func snapshot(nodes ...fleet.Node) fleet.Snapshot {
	return fleet.Snapshot{Nodes: nodes, Telemetry: true, JobsKnown: true}
}

func jobs(count, cpus, gpus int) fleet.Demand {
	return fleet.Demand{Shape: config.Shape{CPUs: cpus, GPUs: gpus}, Nodes: 1, Count: count, Since: t0.Add(-10 * time.Minute)}
}

// outcome maps each node to "kind/reason" for an action or "skip/reason" for a skip.
func outcome(d fleet.Decision) map[string]string {
	m := map[string]string{}
	for _, a := range d.Actions {
		m[a.Node] = string(a.Kind) + "/" + string(a.Reason)
	}
	for _, s := range d.Skips {
		m[s.Node] = "skip/" + string(s.Reason)
	}
	return m
}

func describe(d fleet.Decision) string {
	var b strings.Builder
	for _, a := range d.Actions {
		fmt.Fprintf(&b, "  %s %s %s (%s)\n", a.Node, a.Kind, a.Reason, a.Detail)
	}
	for _, s := range d.Skips {
		fmt.Fprintf(&b, "  %s skip %s (%s)\n", s.Node, s.Reason, s.Detail)
	}
	fmt.Fprintf(&b, "  desired %v\n", d.Desired)
	return b.String()
}

func modelDuration(d time.Duration) model.Duration { return model.Duration(d) }
