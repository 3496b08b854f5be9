package config

import (
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/testutil"
)

// minimal is the smallest valid file: one pool, one node, webhook auth off.
const minimal = `
server:
  webhook_auth_disabled: true
pools:
  - name: cpu
    profile: {cpu_cores: 8}
    cost: {hourly: 1.5}
    nodes:
      - name: n1
        bmc: {protocol: ipmi, host: 127.0.0.1, username: admin, password_env: PW}
`

func TestDeployExamplesParse(t *testing.T) {
	root := testutil.RepoRoot(t)
	files, err := filepath.Glob(filepath.Join(root, "deploy", "*", "rota*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example configs under deploy/: %v", err)
	}
	nested, err := filepath.Glob(filepath.Join(root, "deploy", "*", "config", "rota*.yml"))
	if err != nil || len(nested) == 0 {
		t.Fatalf("no example configs under deploy/*/config (deploy/kubernetes): %v", err)
	}
	files = append(files, nested...)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			// The simulator's configs are read as a replay reads them.
			mode := Daemon
			if filepath.Base(filepath.Dir(f)) == "simulate" {
				mode = Replay
			}
			if _, err := LoadFor(f, mode); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The example's commented store.etcd block, uncommented with backend etcd, is a valid HA
// config: what an operator uncomments is what was checked.
func TestDeployHAExampleParses(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "deploy", "rota", "rota.yml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "  backend: bbolt ", "  backend: etcd  ", 1)
	text = strings.Replace(text, "  # etcd:\n", "  etcd:\n", 1)
	text = regexp.MustCompile(`(?m)^  #   ([a-z_]+:)`).ReplaceAllString(text, "    $1")
	c, err := Parse([]byte(text))
	if err != nil {
		t.Fatalf("the uncommented HA example: %v", err)
	}
	if c.Store.Backend != BackendEtcd || len(c.Store.Etcd.Endpoints) != 3 || c.Store.Etcd.EtcdPrefix() != "/rota/site-a" || c.Store.Etcd.TLS.CAFile == "" {
		t.Errorf("the HA example reads as %+v", c.Store)
	}
}

// The packaged config and the default listen on loopback: plain HTTP with tokens is not put on
// the network by default (the packaged file said 0.0.0.0).
func TestPackagedListenerIsLoopback(t *testing.T) {
	c, err := Load(filepath.Join(testutil.RepoRoot(t), "deploy", "rota", "rota.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{c.Server.ListenAddress, DefaultListenAddress} {
		host, _, err := net.SplitHostPort(addr)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			t.Errorf("listen address %s is not loopback", addr)
		}
	}
}

func TestDefaults(t *testing.T) {
	c, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"idle cpu threshold", c.Policy.Idle.CPUThreshold, 0.20},
		{"idle window", time.Duration(c.Policy.Idle.Window), 2 * time.Minute},
		{"backlog", c.Policy.Backlog.QueuedJobs, 10},
		{"no dwell time", time.Duration(c.Policy.Node.MinOn + c.Policy.Node.MinOff), time.Duration(0)},
		{"no cooldown", time.Duration(c.Policy.Cooldown.ScaleUp + c.Policy.Cooldown.ScaleDown), time.Duration(0)},
		{"cycle budget", c.Policy.Node.MaxCyclesPerDay, 12},
		{"cap in flight", c.Policy.Disruption.MaxConcurrent, 40},
		{"cap in flight's share", c.Policy.Disruption.MaxConcurrentShare, 0.1},
		{"cap in flight, 128 servers", c.Policy.Disruption.Concurrent(128), 40},
		{"cap in flight, 40,960 servers", c.Policy.Disruption.Concurrent(40960), 4096},
		{"forecast history", time.Duration(c.Policy.Forecast.MinHistory), 24 * time.Hour},
		{"adapter", c.Jobs.Adapter, "none"},
		{"listen", c.Server.ListenAddress, DefaultListenAddress},
		{"pool max = nodes", *c.Pools[0].Max, 1},
		{"saves when off", c.Pools[0].Cost.Saves(), true},
		{"classes", len(c.Classes), 3},
		{"gpu device classes", strings.Join(c.Jobs.Kubernetes.GPUDeviceClasses, ","), "gpu.nvidia.com"},
		{"emptyDir data kept (kubectl drain's default)", c.Jobs.Kubernetes.DeleteEmptyDirData, false},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

// TestExplicitZerosAreKept: a key the file sets to zero is honoured where zero means something
// (no threshold, no wait, no cooldown, a cap that allows nothing); keys it leaves out, even
// beside it in the same block, keep their defaults.
func TestExplicitZerosAreKept(t *testing.T) {
	c, err := Parse([]byte(minimal + `policy:
  backlog: {queued_jobs: 0, for: 0s}
  cooldown: {scale_up: 0s}
  node: {min_off: 0s, max_cycles_per_day: 0}
  disruption: {max_power_offs: 0, max_concurrent_share: 0}
jobs: {watch_interval: 0s, kubernetes: {gpu_device_classes: []}}
`))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"backlog.queued_jobs", c.Policy.Backlog.QueuedJobs, 0},
		{"backlog.for", time.Duration(c.Policy.Backlog.For), time.Duration(0)},
		{"cooldown.scale_up", time.Duration(c.Policy.Cooldown.ScaleUp), time.Duration(0)},
		{"node.min_off", time.Duration(c.Policy.Node.MinOff), time.Duration(0)},
		{"spares.quantile (left out)", c.Policy.Spares.Quantile, 0.8},
		{"break_even.wear_time (left out)", time.Duration(c.Policy.BreakEven.WearTime), 20 * time.Minute},
		{"node.max_cycles_per_day", c.Policy.Node.MaxCyclesPerDay, 0},
		{"disruption.max_power_offs", c.Policy.Disruption.MaxPowerOffs, 0},
		{"disruption.max_concurrent (left out)", c.Policy.Disruption.MaxConcurrent, 40},
		{"disruption.max_concurrent_share", c.Policy.Disruption.Concurrent(40960), 40},
		{"idle.window (left out)", time.Duration(c.Policy.Idle.Window), 2 * time.Minute},
		{"pool max = nodes", *c.Pools[0].Max, 1},
		{"jobs.watch_interval (0: no watch)", time.Duration(c.Jobs.WatchInterval), time.Duration(0)},
		{"jobs.kubernetes.gpu_device_classes (none)", len(c.Jobs.Kubernetes.GPUDeviceClasses), 0},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	if d := Default(); time.Duration(d.Jobs.WatchInterval) != 2*time.Second {
		t.Errorf("Default() jobs.watch_interval = %s, want 2s", time.Duration(d.Jobs.WatchInterval))
	}
	if d := Default(); d.Policy.Backlog.QueuedJobs != 10 || len(d.Classes) != 3 {
		t.Errorf("Default() lost its defaults: backlog %d, %d classes", d.Policy.Backlog.QueuedJobs, len(d.Classes))
	}
}

// A zero the file gives for a key whose default is filled after decoding (a pool's
// boot_timeout, accounting.stale_after) is refused like any other zero that makes no sense;
// it used to become the default silently (`boot_timeout: 0s` read as 10m).
func TestExplicitZerosOfLateDefaultsAreRefused(t *testing.T) {
	y := strings.Replace(minimal, "cost: {hourly: 1.5}", "cost: {hourly: 1.5}\n    boot_timeout: 0s", 1) +
		"accounting: {stale_after: 0s}\n"
	got := problemsOf(t, y, Daemon)
	for _, want := range []string{"pools[0].boot_timeout", "accounting.stale_after"} {
		if p, ok := got[want]; !ok || !strings.Contains(p.Message, "positive") {
			t.Errorf("no problem at %s; got:\n%v", want, got)
		}
	}
	c, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(c.Pools[0].BootTimeout) != DefaultBootTimeout || time.Duration(c.Accounting.StaleAfter) != 3*time.Minute {
		t.Errorf("left out: boot_timeout %v, stale_after %v; want the defaults", c.Pools[0].BootTimeout, c.Accounting.StaleAfter)
	}
}

// server.listen_address is what net.Listen takes; one it cannot open used to pass validation
// and stop rota at start.
func TestListenAddress(t *testing.T) {
	cases := []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:10091", true},
		{":10091", true},
		{"[::1]:10091", true},
		{"127.0.0.1:0", true},
		{"localhost:http", true},
		{"not an address", false},
		{"127.0.0.1", false},
		{":99999", false},
		{"127.0.0.1:-1", false},
		{"::1:10091", false},
		{"rota host:10091", false},
		{"http://127.0.0.1:10091", false},
	}
	for _, tc := range cases {
		t.Run(tc.addr, func(t *testing.T) {
			_, err := Parse([]byte(strings.Replace(minimal, "server:\n", "server:\n  listen_address: "+strconv.Quote(tc.addr)+"\n", 1)))
			if bad := err != nil && strings.Contains(err.Error(), "server.listen_address: "); bad == tc.ok {
				t.Errorf("listen_address %q: %v, want ok %v", tc.addr, err, tc.ok)
			}
		})
	}
}

// A pool's min beyond its nodes is one problem, the min's: max, left out (all the nodes), is
// not blamed for being under it too.
func TestMinBeyondNodesBlamesMinAlone(t *testing.T) {
	got := problemsOf(t, strings.Replace(minimal, "cost: {hourly: 1.5}", "cost: {hourly: 1.5}\n    min: 3", 1), Daemon)
	if _, ok := got["pools[0].min"]; !ok {
		t.Errorf("no problem at pools[0].min; got:\n%v", got)
	}
	if p, ok := got["pools[0].max"]; ok {
		t.Errorf("max, left out, is blamed: %v", p)
	}
	got = problemsOf(t, strings.Replace(minimal, "cost: {hourly: 1.5}", "cost: {hourly: 1.5}\n    min: 3\n    max: 4", 1), Daemon)
	if _, ok := got["pools[0].max"]; !ok {
		t.Errorf("max beyond the nodes is not reported; got:\n%v", got)
	}
}

func TestValidationNamesEveryField(t *testing.T) {
	cases := []struct {
		name  string
		yaml  string
		paths []string
	}{
		{"no pools", "server: {webhook_auth_disabled: true}\n", []string{"pools"}},
		{"webhook token required", strings.Replace(minimal, "webhook_auth_disabled: true", "listen_address: 127.0.0.1:1", 1),
			[]string{"server.webhook_token_file"}},
		{"bad thresholds and adapter", minimal + "policy:\n  idle: {cpu_threshold: 1.5}\njobs: {adapter: lsf}\n",
			[]string{"policy.idle.cpu_threshold", "jobs.adapter"}},
		{"bad schedule", minimal + "policy:\n  schedules:\n    - {name: x, timezone: Mars/Olympus, days: [funday], start: '25:00', end: '08:00', pools: [nope]}\n",
			[]string{"policy.schedules[0].timezone", "policy.schedules[0].days[0]", "policy.schedules[0].start", "policy.schedules[0].pools[0]"}},
		{"a node named as an option", strings.Replace(minimal, "name: n1", "name: -rf", 1), []string{"pools[0].nodes[0].name"}},
		{"quota without its number", minimal + "policy:\n  quotas:\n    - {department: max_servers, pool: cpu, borrow: true}\n",
			[]string{"policy.quotas[0].max_servers"}},
		{"a host's own time zone", minimal + "policy:\n  schedules:\n    - {name: x, timezone: Local, start: '08:00', end: '18:00'}\n",
			[]string{"policy.schedules[0].timezone"}},
		{"quota on unknown pool", minimal + "policy:\n  quotas:\n    - {department: a, pool: gpu, max_servers: 1}\n",
			[]string{"policy.quotas[0].pool"}},
		{"duplicate node and missing host", minimal + `  - name: cpu2
    profile: {cpu_cores: 0}
    cost: {hourly: 1, price_per_kwh: 3}
    min: 3
    nodes:
      - name: n1
        bmc: {protocol: ipmi, host: h, username: u, password_env: PW}
      - name: n2
        bmc: {protocol: redfish, username: u, password_env: PW}
`, []string{"pools[1].profile.cpu_cores", "pools[1].cost", "pools[1].min", "pools[1].nodes[0].name", "pools[1].nodes[1].bmc.host"}},
		{"exec adapter needs commands", minimal + "jobs: {adapter: exec}\n",
			[]string{"jobs.exec.state_command", "jobs.exec.demand_command", "jobs.exec.drain_command", "jobs.exec.resume_command"}},
		{"zeros that make no sense", minimal + "policy:\n  idle: {window: 0s, cpu_threshold: 0}\n  evaluation_interval: 0s\nprometheus: {timeout: 0s}\nbmc: {concurrency: 0}\n",
			[]string{"policy.idle.window", "policy.idle.cpu_threshold", "policy.evaluation_interval", "prometheus.timeout", "bmc.concurrency"}},
		{"windows shorter than a scrape", minimal + "prometheus: {scrape_interval: 1m}\npolicy:\n  idle: {window: 30s}\n  underuse: {window: 45s}\n  telemetry: {max_age: 1m}\n  failure: {alert_window: 1m}\n",
			[]string{"policy.idle.window", "policy.underuse.window", "policy.telemetry.max_age", "policy.failure.alert_window"}},
		// [90s:1m] holds two steps at some evaluations and one at others: a count of one would
		// pass a window with a scrape missing.
		{"windows of no whole number of scrapes", minimal + "prometheus: {scrape_interval: 1m}\npolicy:\n  idle: {window: 90s}\n  underuse: {window: 30m30s}\n",
			[]string{"policy.idle.window", "policy.underuse.window"}},
		{"a negative cost names its field", strings.Replace(minimal, "cost: {hourly: 1.5}", "cost: {watts: -5, price_per_kwh: 0.2}", 1),
			[]string{"pools[0].cost.watts"}},
		{"retries without a wait", minimal + "policy: {failure: {backoff: 0s}}\n", []string{"policy.failure.backoff"}},
		{"graceful shutdown of no time", minimal + "bmc: {graceful_timeout: 0s}\n", []string{"bmc.graceful_timeout"}},
		{"graceful shutdown as long as the operation", minimal + "bmc: {graceful_timeout: 5m, operation_timeout: 5m}\n", []string{"bmc.graceful_timeout"}},
		{"exporters that are no host:port, or another node's", strings.Replace(minimal, "name: n1\n", "name: n1\n        exporter: n1\n", 1) + `  - name: cpu2
    profile: {cpu_cores: 8}
    nodes:
      - {name: a, exporter: "a:10090", bmc: {protocol: ipmi, host: h, username: u, password_env: PW}}
      - {name: b, exporter: "a:10090", bmc: {protocol: ipmi, host: h, username: u, password_env: PW}}
      - {name: c, exporter: "c:99999", bmc: {protocol: ipmi, host: h, username: u, password_env: PW}}
`, []string{"pools[0].nodes[0].exporter", "pools[1].nodes[1].exporter", "pools[1].nodes[2].exporter"}},
		{"last class must catch all", minimal + "classes:\n  - {name: light, max_gpus: 0}\n", []string{"classes[0]"}},
		{"classes: an empty list is no default", minimal + "classes: []\n", []string{"classes"}},
		{"classes: a key with nothing", minimal + "classes:\n", []string{"classes"}},
		{"deferral and service", minimal + "classes:\n  - {name: b, partitions: [b], defer: {until: night}}\n  - {name: w, service: true, defer: {until: x, max: 1h}}\n  - {name: rest}\n",
			[]string{"classes[0].defer.until", "classes[0].defer.max", "classes[1].defer", "classes[1].defer.until"}},
		{"break-even and forecast", minimal + "policy:\n  spares: {quantile: 1}\n  break_even: {wear_cost: -1, wait_per_job_hour: -2, wait_per_gpu_hour: .nan}\n",
			[]string{"policy.spares.quantile", "policy.break_even.wear_cost", "policy.break_even.wait_per_job_hour", "policy.break_even.wait_per_gpu_hour"}},
		{"a fleet that is no label value rota can select", minimal + "prometheus: {fleet: 'site a\"}'}\n", []string{"prometheus.fleet"}},
		{"unknown store backend", minimal + "store: {backend: consul}\n", []string{"store.backend"}},
		{"etcd without endpoints or fleet", minimal + "store: {backend: etcd}\n", []string{"store.etcd.endpoints", "store.etcd.fleet"}},
		{"etcd keys that cannot work", minimal + `store:
  backend: etcd
  etcd:
    endpoints: [etcd1:2379, "https://etcd2:2379"]
    fleet: "site a"
    name: "rota a\n"
    prefix: rota/
    advertise_url: rota-a
    lease_ttl: 1500ms
    request_timeout: 0s
    username: rota
`, []string{"store.etcd.endpoints[0]", "store.etcd.fleet", "store.etcd.name", "store.etcd.prefix", "store.etcd.advertise_url", "store.etcd.lease_ttl", "store.etcd.request_timeout", "store.etcd.password_file"}},
		{"etcd schemes mixed", minimal + "store: {backend: etcd, etcd: {endpoints: ['http://e1:2379', 'https://e2:2379'], fleet: a}}\n",
			[]string{"store.etcd.endpoints"}},
		{"etcd TLS over http", minimal + "store: {backend: etcd, etcd: {endpoints: ['http://e1:2379'], fleet: a, tls_config: {ca_file: ca.pem}}}\n",
			[]string{"store.etcd.tls_config"}},
		{"etcd request longer than the lease", minimal + "store: {backend: etcd, etcd: {endpoints: ['http://e:2379'], fleet: a, lease_ttl: 2s, request_timeout: 5s}}\n",
			[]string{"store.etcd.request_timeout"}},
		{"etcd lease longer than etcd grants", minimal + "store: {backend: etcd, etcd: {endpoints: ['http://e:2379'], fleet: a, lease_ttl: 290y}}\n",
			[]string{"store.etcd.lease_ttl"}},
		{"kubernetes names", strings.Replace(minimal, "name: n1", "name: N_1", 1) + "jobs: {adapter: kubernetes}\n",
			[]string{"pools[0].nodes[0].name"}},
		{"kubernetes label", strings.Replace(minimal, "name: n1", "name: n1/x", 1) + "jobs: {adapter: kubernetes, kubernetes: {node_label: 'Example.com/server'}}\n",
			[]string{"jobs.kubernetes.node_label", "pools[0].nodes[0].name"}},
		{"kubernetes GPU device class", minimal + "jobs: {adapter: kubernetes, kubernetes: {gpu_device_classes: [gpu.nvidia.com, 'GPU NVIDIA']}}\n",
			[]string{"jobs.kubernetes.gpu_device_classes[1]"}},
		{"kubernetes emptyDir data", minimal + "jobs: {adapter: kubernetes, kubernetes: {delete_emptydir_data: maybe}}\n",
			[]string{"jobs.kubernetes.delete_emptydir_data"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := problemsOf(t, tc.yaml, Daemon)
			for _, want := range tc.paths {
				if _, ok := got[want]; !ok {
					t.Errorf("no problem reported at %s; got:\n%v", want, got)
				}
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	cases := map[string]string{
		"unknown field":    minimal + "polcy: {}\n",
		"bad duration":     minimal + "policy: {evaluation_interval: soon}\n",
		"bad size":         strings.Replace(minimal, "{cpu_cores: 8}", "{cpu_cores: 8, memory: lots}", 1),
		"empty":            "",
		"two documents":    minimal + "---\n" + minimal,
		"not a mapping":    "- a\n- b\n",
		"wrong type":       minimal + "policy: {dry_run: maybe}\n",
		"negative backlog": minimal + "policy: {backlog: {queued_jobs: -1}}\n",
	}
	for name, y := range cases {
		t.Run(name, func(t *testing.T) {
			if c, err := Parse([]byte(y)); err == nil {
				t.Fatalf("accepted: %+v", c)
			}
		})
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rota.yml")
	if err := os.WriteFile(path, []byte("pools: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("error should name %s: %v", path, err)
	}
}

func TestScheduleActive(t *testing.T) {
	c, err := Parse([]byte(minimal + `policy:
  schedules:
    - {name: office, timezone: Europe/Berlin, days: [mon, tue, wed, thu, fri], start: "10:00", end: "18:00"}
    - {name: night, timezone: UTC, days: [fri], start: "22:00", end: "06:00"}
`))
	if err != nil {
		t.Fatal(err)
	}
	office, night := &c.Policy.Schedules[0], &c.Policy.Schedules[1]
	berlin, _ := time.LoadLocation("Europe/Berlin")
	cases := []struct {
		name string
		s    *Schedule
		at   time.Time
		want bool
	}{
		{"office opens at 10:00 Berlin", office, time.Date(2026, 11, 30, 10, 0, 0, 0, berlin), true},
		{"office closed at 09:59", office, time.Date(2026, 11, 30, 9, 59, 0, 0, berlin), false},
		{"office closes at 18:00", office, time.Date(2026, 11, 30, 18, 0, 0, 0, berlin), false},
		{"office closed on Saturday", office, time.Date(2026, 11, 28, 12, 0, 0, 0, berlin), false},
		{"office in UTC terms (09:30 UTC = 10:30 CET)", office, time.Date(2026, 11, 30, 9, 30, 0, 0, time.UTC), true},
		{"night open Friday 23:00", night, time.Date(2026, 11, 27, 23, 0, 0, 0, time.UTC), true},
		{"night still open Saturday 03:00", night, time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC), true},
		{"night not open Saturday 23:00", night, time.Date(2026, 11, 28, 23, 0, 0, 0, time.UTC), false},
		{"night not open Friday 03:00", night, time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC), false},
	}
	for _, tc := range cases {
		if got := tc.s.Active(tc.at); got != tc.want {
			t.Errorf("%s: Active = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestClassify(t *testing.T) {
	c, err := Parse([]byte(minimal + `classes:
  - {name: light, partitions: [etl], max_cpus: 8, max_gpus: 0}
  - {name: medium, max_gpus: 1, max_memory: 64GiB}
  - {name: heavy}
`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		shape Shape
		want  string
	}{
		{"partition wins over shape", Shape{Partition: "etl", CPUs: 64, GPUs: 8}, "light"},
		{"partition-bound class is not matched by shape", Shape{CPUs: 2}, "medium"},
		{"one GPU", Shape{CPUs: 16, GPUs: 1}, "medium"},
		{"memory over medium's limit", Shape{GPUs: 1, Memory: 65 << 30}, "heavy"},
		{"eight GPUs", Shape{GPUs: 8}, "heavy"},
	}
	for _, tc := range cases {
		if got := c.Classify(tc.shape); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestCostPerHour(t *testing.T) {
	if got := (Cost{Watts: 500, PricePerKWh: 0.3}).PerHour(); got != 0.15 {
		t.Errorf("owned: %v, want 0.15", got)
	}
	if got := (Cost{Hourly: 24}).PerHour(); got != 24 {
		t.Errorf("rented: %v, want 24", got)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(minimal))
	f.Add([]byte("pools: [{name: x, nodes: [{name: y, bmc: {protocol: redfish}}]}]"))
	f.Add([]byte("policy: {schedules: [{name: a, start: '23:00', end: '01:00'}]}"))
	f.Add([]byte(owned))
	f.Add([]byte(minimal + "policy: {idle: {window: 290y}}\n"))
	f.Add([]byte("pools: [&p {name: a, labels: &l {x: y}, nodes: [&n {name: n1}, {<<: *n, name: n2}]}, {<<: [*p, {min: 1}], name: b, labels: {<<: *l}}]"))
	f.Add([]byte("accounting: {tariffs: [{name: t, currency: EUR, windows: [{start: '00:00', end: '24:00', price_per_kwh: 0.1}]}]}"))
	if b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "rota", "rota.yml")); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err == nil && len(c.Pools) == 0 {
			t.Fatal("a config without pools was accepted")
		}
		if err == nil {
			if path := nonFinite(reflect.ValueOf(c).Elem(), ""); path != "" {
				t.Fatalf("a config with %s not finite was accepted", path)
			}
			// No duration of a config that validates is negative (a default derived from
			// others, such as stale_after from the evaluation interval, did not overflow) or
			// past a year, so the sums rota makes of them, all of them at once here, stay in
			// range.
			var sum time.Duration
			durationsOf(reflect.ValueOf(c).Elem(), func(d time.Duration) {
				if d < 0 || d > 365*24*time.Hour || sum > math.MaxInt64-d {
					t.Fatalf("a config with a duration of %s was accepted (sum so far %s)", d, sum)
				}
				sum += d
			})
		}
	})
}

// nonFinite is the path of a NaN or infinite number in v, or "".
func nonFinite(v reflect.Value, path string) string {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return path
		}
	case reflect.Pointer:
		if !v.IsNil() {
			return nonFinite(v.Elem(), path)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				if p := nonFinite(v.Field(i), path+"."+v.Type().Field(i).Name); p != "" {
					return p
				}
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			if p := nonFinite(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	}
	return ""
}

func TestKubernetesNames(t *testing.T) {
	for _, tc := range []struct {
		s                string
		node, key, value bool
	}{
		{"gpu01", true, true, true},
		{"gpu01.rack3.example.com", true, true, true},
		{"GPU01", false, true, true},
		{"gpu_01", false, true, true},
		{"-gpu", false, false, false},
		{"example.com/server", false, true, false},
		{"Example.com/server", false, false, false},
		{"/server", false, false, false},
		{"a/b/c", false, false, false},
		{strings.Repeat("a", 64), true, false, false},
		{"", false, false, false},
	} {
		if got := KubeNodeName(tc.s); got != tc.node {
			t.Errorf("KubeNodeName(%q) = %v", tc.s, got)
		}
		if got := KubeLabelKey(tc.s); got != tc.key {
			t.Errorf("KubeLabelKey(%q) = %v", tc.s, got)
		}
		if got := KubeLabelValue(tc.s); got != tc.value {
			t.Errorf("KubeLabelValue(%q) = %v", tc.s, got)
		}
	}
}
