package lab

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"github.com/rotahq/rota/exporter/gpufake"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/config"
)

func TestExpand(t *testing.T) {
	ports := NewPorts()
	out, err := Expand("dir ${lab} a ${port:a} a ${port:a} b ${port:b} u ${udp:a} r ${rebalance} j ${adapter}", "/x", ports, Vars{Rebalance: true})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := ports.TCP("a")
	b, _ := ports.TCP("b")
	u, _ := ports.UDP("a")
	if a == b || a == 0 || u == 0 {
		t.Fatalf("ports a=%d b=%d udp a=%d: want distinct, non-zero", a, b, u)
	}
	f := strings.Fields(out)
	if f[1] != "/x" || f[3] != f[5] || f[3] == f[7] || f[11] != "true" || f[13] != "slurm" {
		t.Errorf("expanded %q", out)
	}
	for _, bad := range []string{"${nope}", "${port:}", "${udp:}", "$HOME"} {
		if _, err := Expand(bad, "/x", ports, Vars{}); err == nil {
			t.Errorf("Expand(%q): no error", bad)
		}
	}
}

// TestLabConfigLoads: the lab config, expanded for either profile, is a valid rota config with
// that job manager and two tiers behind both kinds of BMC and at least six servers.
func TestLabConfigLoads(t *testing.T) {
	for _, profile := range []string{ProfileSlurm, ProfileKubernetes} {
		t.Run(profile, func(t *testing.T) { testLabConfigLoads(t, profile) })
	}
}

func testLabConfigLoads(t *testing.T, profile string) {
	tmpl, err := os.ReadFile(filepath.Join("..", "deploy", "lab", "rota.yml.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	text, err := Expand(string(tmpl), t.TempDir(), NewPorts(), Vars{Rebalance: true, Adapter: profile})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Jobs.Adapter != profile {
		t.Errorf("adapter %s, want %s", cfg.Jobs.Adapter, profile)
	}
	protocols, servers := map[string]int{}, 0
	for _, p := range cfg.Pools {
		for _, n := range p.Nodes {
			protocols[string(n.BMC.Protocol)+"/"+map[bool]string{true: "gpu", false: "cpu"}[p.Profile.GPUs > 0]]++
			servers++
		}
	}
	if servers < 6 || protocols["ipmi/cpu"] == 0 || protocols["redfish/gpu"] == 0 {
		t.Errorf("lab fleet: %d servers, %v; want >= 6, CPU servers on IPMI and GPU servers on Redfish", servers, protocols)
	}
}

func TestParseWork(t *testing.T) {
	out := "cpu01|2|N/A\ncpu01|1|\ngpu01|2|gres:gpu:1\ngpu01|2|gres/gpu:2\ngpu02|4|gpu:h100:1,gres:tmp:3\ncpu[01-02]|4|\n\n"
	got := parseWork(out)
	want := map[string]work{
		"cpu01": {jobs: 2, cpus: 3},
		"gpu01": {jobs: 2, cpus: 4, gpus: 3},
		"gpu02": {jobs: 1, cpus: 4, gpus: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %+v, want %+v", k, got[k], w)
		}
	}
}

// TestReadingsParse: the procfs files the lab writes parse with the same library the exporter
// reads /proc with, and busy time follows the allocated CPUs.
func TestReadingsParse(t *testing.T) {
	dir := t.TempDir()
	r := newReadings(config.Profile{CPUCores: 4, Memory: 4 << 30, GPUs: 2})
	t0 := time.Unix(1000, 0)
	r.advance(t0, work{})
	r.advance(t0.Add(10*time.Second), work{jobs: 1, cpus: 2, gpus: 1})
	if err := r.write(dir, filepath.Join(dir, "gpus.json")); err != nil {
		t.Fatal(err)
	}
	fs, err := procfs.NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := fs.Stat()
	if err != nil {
		t.Fatal(err)
	}
	// 10 s on 4 CPUs, half of them allocated plus the background load.
	if want := (0.5 + idleLoad) * 40; abs(st.CPUTotal.User-want) > 0.02 {
		t.Errorf("user %v, want %v", st.CPUTotal.User, want)
	}
	if len(st.CPU) != 4 {
		t.Errorf("%d per-CPU lines, want 4", len(st.CPU))
	}
	mi, err := fs.Meminfo()
	if err != nil {
		t.Fatal(err)
	}
	if mi.MemTotal == nil || *mi.MemTotal != 4<<20 || mi.MemAvailable == nil || *mi.MemAvailable >= *mi.MemTotal {
		t.Errorf("meminfo total %v available %v", mi.MemTotal, mi.MemAvailable)
	}
	gpus, err := ReadGPUFile(filepath.Join(dir, "gpus.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus) != 2 || gpus[0].UtilizationPercent != busyGPU || gpus[0].Processes != 1 || gpus[1] != (gpufake.Reading{PowerMilliwatts: gpuIdleMW, TemperatureC: 35, EnergyMillijoules: gpus[1].EnergyMillijoules}) {
		t.Errorf("gpus %+v: want the first busy, the second idle", gpus)
	}
}

func abs(v float64) float64 { return max(v, -v) }

func TestSummarize(t *testing.T) {
	cfg, err := config.Parse([]byte(`
server: {webhook_auth_disabled: true}
pools:
  - name: cpu
    profile: {cpu_cores: 4}
    cost: {hourly: 1, currency: EUR}
    nodes:
      - {name: a, exporter: "127.0.0.1:1", bmc: {protocol: ipmi, host: 127.0.0.1, username: u, password_env: P}}
      - {name: b, exporter: "127.0.0.1:2", bmc: {protocol: ipmi, host: 127.0.0.1, username: u, password_env: P}}
`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log := "2026-01-01T00:00:00Z a On\n2026-01-01T00:00:00Z b On\n2026-01-01T00:30:00Z b Off\n2026-01-01T01:30:00Z b On\n"
	if err := os.WriteFile(PowerLog(dir), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "slurm"), 0o755); err != nil {
		t.Fatal(err)
	}
	comp := "JobId=1 UserId=root(0) Name=light JobState=COMPLETED Partition=batch\nJobId=2 Name=heavy JobState=COMPLETED\nJobId=3 JobState=NODE_FAIL\n"
	if err := os.WriteFile(JobCompLog(dir), []byte(comp), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Summarize(cfg, dir, time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	// a: 2 h; b: 0.5 h + 0.5 h.
	if s.OnHours != 3 || s.AllOnHours != 4 || s.Spend != 3 || s.AllOnSpend != 4 || s.PowerOns != 1 || s.PowerOffs != 1 {
		t.Errorf("summary %+v", s)
	}
	if s.Jobs["COMPLETED"] != 2 || s.Killed() != 1 {
		t.Errorf("jobs %v, killed %d", s.Jobs, s.Killed())
	}
	var b strings.Builder
	s.Write(&b)
	if !strings.Contains(b.String(), "25% saved") || !strings.Contains(b.String(), "killed or failed: 1") {
		t.Errorf("summary text:\n%s", b.String())
	}
}

func TestBurst(t *testing.T) {
	jobs := Burst(3, 1, time.Minute, 2*time.Minute)
	var kinds []string
	for _, j := range jobs {
		kinds = append(kinds, j.Kind)
	}
	if strings.Join(kinds, ",") != "light,heavy,light,light" {
		t.Errorf("burst %v", kinds)
	}
	if a := strings.Join(jobs[1].sbatchArgs(), " "); !strings.Contains(a, "--gres=gpu:1") || !strings.Contains(a, "--wrap=sleep 120") {
		t.Errorf("heavy job args %q", a)
	}
	if a := strings.Join(jobs[0].sbatchArgs(), " "); strings.Contains(a, "gres") {
		t.Errorf("light job args %q", a)
	}
}

// TestAlertmanagerConfig: the lab's fill of deploy/alertmanager/alertmanager.yml finds every
// value it replaces, and amtool accepts the result.
func TestAlertmanagerConfig(t *testing.T) {
	amtool := testutil.Tool(t, "amtool")
	conf, err := alertmanagerConfig(testutil.RepoRoot(t), "http://127.0.0.1:1", "/run/rota/webhook.token")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "alertmanager.yml")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(amtool, "check-config", path).CombinedOutput(); err != nil {
		t.Errorf("amtool check-config: %v\n%s", err, out)
	}
}
