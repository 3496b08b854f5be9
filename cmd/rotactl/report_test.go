package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/cost/report"
)

// backfill is a month of the books as rota exports them, written as OpenMetrics and turned into
// TSDB blocks with promtool (one block: the default 2h blocks take promtool 40s), as a real
// Prometheus would have stored them (every 5 minutes from
// October 31st to December 1st 2026).
type backfill struct {
	name, labels string
	// value is the counter at hour h since 2026-10-31T00:00Z; ok false: no sample (rota down).
	value func(h float64) (float64, bool)
}

// Hours from 2026-10-31T00:00Z: November begins at 24 and ends at 744.
const novStart, novEnd = 24.0, 744.0

func steady(rate float64) func(float64) (float64, bool) {
	return func(h float64) (float64, bool) { return rate * h, true }
}

// from: 0 until h0, then rate per hour.
func from(h0, rate float64) func(float64) (float64, bool) {
	return func(h float64) (float64, bool) { return rate * max(h-h0, 0), true }
}

// restart is a counter with rota down on November 10th 00:00-10:00 (no samples): before,
// then after.
func restart(before, after func(h float64) float64) func(float64) (float64, bool) {
	down := novStart + 9*24
	return func(h float64) (float64, bool) {
		switch {
		case h > down && h < down+10:
			return 0, false
		case h >= down+10:
			return after(h), true
		}
		return before(h), true
	}
}

var books = []backfill{
	// platform on cpu, 1/h: 720 in November.
	{"rota_cost_spend_total", `pool="cpu",department="platform",region="eu",currency="EUR",power="on",basis="hourly"`, steady(1)},
	// physics on gpu from November 29th, 10/h: 240.
	{"rota_cost_spend_total", `pool="gpu",department="physics",region="eu",currency="EUR",power="on",basis="profile"`, from(novEnd-24, 10)},
	// research on gpu, 2/h; rota is down on November 10th 00:00-10:00 and books those 10 hours
	// as unknown power when it is back: 1420 on + 20 unknown.
	{"rota_cost_spend_total", `pool="gpu",department="research",region="eu",currency="EUR",power="on",basis="profile"`,
		restart(func(h float64) float64 { return 2 * h }, func(h float64) float64 { return 2 * (h - 10) })},
	{"rota_cost_spend_total", `pool="gpu",department="research",region="eu",currency="EUR",power="unknown",basis="profile"`,
		restart(func(float64) float64 { return 0 }, func(float64) float64 { return 20 })},
	// A failed gpu server left on for the last 5 hours, 2/h.
	{"rota_cost_spend_total", `pool="gpu",department="research",region="eu",currency="EUR",power="failed",basis="profile"`, from(novEnd-5, 2)},
	{"rota_cost_saving_total", `pool="gpu",department="research",region="eu",currency="EUR"`, steady(3)},
	// A cpu server off from November 5th to 10th, 1/h: 120.
	{"rota_cost_saving_total", `pool="cpu",department="platform",region="eu",currency="EUR"`, func(h float64) (float64, bool) {
		return min(max(h-(novStart+4*24), 0), 120), true
	}},
	{"rota_cost_node_idle_total", `node="cpu01",pool="cpu",currency="EUR"`, steady(0.5)},
	{"rota_cost_borrowed_server_seconds_total", `pool="gpu",department="physics",owner="research"`, from(novEnd-24, 1800)},
	{"rota_cost_borrowed_total", `pool="gpu",department="physics",owner="research",currency="EUR"`, from(novEnd-24, 5)},
	{"rota_energy_node_joules_total", `node="cpu01",pool="cpu",source="profile"`, steady(450 * 3600)},
	{"rota_energy_node_joules_total", `node="gpu01",pool="gpu",source="bmc"`, steady(1000 * 3600)},
	// A GPU server measured by base_watts plus its GPUs' readings, 500 W: 360 kWh.
	{"rota_energy_node_joules_total", `node="gpu02",pool="gpu",source="gpu"`, steady(500 * 3600)},
	{"rota_energy_avoided_joules_total", `pool="gpu",department="research",region="eu",carbon="known"`, steady(3.6e6)},
	{"rota_energy_avoided_joules_total", `pool="gpu",department="research",region="us",carbon="unknown"`, steady(1.8e6)},
	{"rota_carbon_avoided_grams_total", `pool="gpu",department="research",region="eu"`, steady(300)},
}

// startBackfilledPrometheus writes books (each family's series together, as OpenMetrics wants)
// as blocks and serves them from a real Prometheus.
func startBackfilledPrometheus(t *testing.T, books []backfill) string {
	t.Helper()
	promtool := testutil.Tool(t, "promtool")
	prometheus := testutil.Tool(t, "prometheus")
	dir := t.TempDir()
	var om strings.Builder
	t0 := time.Date(2026, 10, 31, 0, 0, 0, 0, time.UTC)
	names := map[string]bool{}
	for _, b := range books {
		if !names[b.name] {
			fmt.Fprintf(&om, "# TYPE %s counter\n", strings.TrimSuffix(b.name, "_total"))
			names[b.name] = true
		}
		for i := 0; i <= int((novEnd)*12); i++ {
			h := float64(i) / 12
			if v, ok := b.value(h); ok {
				fmt.Fprintf(&om, "%s{%s} %v %d\n", b.name, b.labels, v, t0.Add(time.Duration(i)*5*time.Minute).Unix())
			}
		}
	}
	om.WriteString("# EOF\n")
	in := filepath.Join(dir, "books.om")
	if err := os.WriteFile(in, []byte(om.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", "--quiet", "--max-block-duration=768h", in, data).CombinedOutput(); err != nil {
		t.Fatalf("promtool tsdb create-blocks-from openmetrics: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global: {scrape_interval: 5m}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	testutil.Start(t, prometheus, "--config.file="+cfg, "--web.listen-address="+addr,
		"--storage.tsdb.path="+data, "--storage.tsdb.retention.time=100y")
	url := "http://" + addr
	testutil.WaitHTTP(t, url+"/-/ready", 60*time.Second)
	return url
}

// TestReportFromPrometheus: `rotactl report --month 2026-11` reads November from a real
// Prometheus: series that start and stop inside the month, a rota restart (a gap, then the
// counters going on), unknown power and a failed server, October and December left out. The
// figures are the books' to the cent: increase() extrapolates at most one scrape back to the
// month's start, at the month's mean rate (see docs/rules.md, "How exact increase() is").
func TestReportFromPrometheus(t *testing.T) {
	url := startBackfilledPrometheus(t, books)
	var stdout, stderr strings.Builder
	if code := run(t.Context(), []string{"report", "--month", "2026-11", "--prometheus.url", url, "--format", "json"},
		env{stdout: &stdout, stderr: &stderr}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var got struct {
		Month   string            `json:"month"`
		From    time.Time         `json:"from"`
		To      time.Time         `json:"to"`
		Partial bool              `json:"partial"`
		Money   []report.MoneyRow `json:"money"`
		Use     []report.UseRow   `json:"use"`
	}
	if err := json.Unmarshal([]byte(stdout.String()), &got); err != nil {
		t.Fatalf("%v:\n%s", err, stdout.String())
	}
	if got.Partial || !got.From.Equal(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)) || !got.To.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("period %s to %s (partial %v), want November", got.From, got.To, got.Partial)
	}
	money := map[string]report.MoneyRow{}
	for _, m := range got.Money {
		money[m.By+"/"+m.Name+"/"+m.Currency] = m
	}
	use := map[string]report.UseRow{}
	for _, u := range got.Use {
		use[u.By+"/"+u.Name] = u
	}
	cent := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 0.01 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	cent("platform spend", money["department/platform/EUR"].Spend, 720)
	cent("physics spend (the last 24 hours)", money["department/physics/EUR"].Spend, 240)
	cent("research spend (on, unknown and failed)", money["department/research/EUR"].Spend, 1420+20+10)
	cent("research unknown power", money["department/research/EUR"].UnknownPower, 20)
	cent("research failed", money["department/research/EUR"].Failed, 10)
	cent("research saving", money["department/research/EUR"].Saving, 2160)
	cent("platform saving (5 days)", money["department/platform/EUR"].Saving, 120)
	cent("physics borrowed", money["department/physics/EUR"].Borrowed, 120)
	cent("gpu pool spend", money["pool/gpu/EUR"].Spend, 240+1450)
	cent("cpu pool idle", money["pool/cpu/EUR"].Idle, 360)
	cent("physics borrowed hours", use["department/physics"].BorrowedHours, 12)
	cent("cpu drawn kWh", use["pool/cpu"].DrawnKWh, 324)
	cent("gpu measured kWh (by a BMC and by the GPUs)", use["pool/gpu"].MeasuredKWh, 720+360)
	cent("avoided kWh", use["department/research"].AvoidedKWh, 720+360)
	cent("avoided kWh, carbon unknown", use["department/research"].CarbonUnknownKWh, 360)
	cent("avoided CO2 kg", use["pool/gpu"].AvoidedCO2Kg, 216)

	for _, format := range []string{"table", "csv"} {
		stdout.Reset()
		if code := run(t.Context(), []string{"report", "--month", "2026-11", "--prometheus.url", url, "--format", format},
			env{stdout: &stdout, stderr: &stderr}); code != 0 {
			t.Fatalf("%s: exit %d: %s", format, code, stderr.String())
		}
		for _, want := range []string{"physics", "research", "borrowed_server_hours", "avoided_co2_kg"} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("%s output lacks %q:\n%s", format, want, stdout.String())
			}
		}
	}
	stdout.Reset()
	run(t.Context(), []string{"report", "--month", "2026-11", "--prometheus.url", url}, env{stdout: &stdout, stderr: &stderr})
	t.Logf("rotactl report --month 2026-11:\n%s", stdout.String())
	if !strings.Contains(stdout.String(), "2026-11 (2026-11-01T00:00:00Z to 2026-12-01T00:00:00Z, UTC)") ||
		!strings.Contains(stdout.String(), "1450.00") || strings.Contains(stdout.String(), "fleet") {
		t.Errorf("table:\n%s", stdout.String())
	}
}

// TestReportKeepsFleetsApart: a real Prometheus holds two fleets' books, each fleet with a
// pool gpu of department research and a server gpu01. With prometheus.fleet set the report is
// that fleet's alone; unset, each fleet has its rows (a fleet column), never their sum.
func TestReportKeepsFleetsApart(t *testing.T) {
	var two []backfill
	for _, f := range []struct {
		fleet string
		rate  float64
	}{{"site-a", 1}, {"site-b", 10}} {
		fl := `fleet="` + f.fleet + `",`
		two = append(two,
			backfill{"rota_cost_spend_total", fl + `pool="gpu",department="research",region="eu",currency="EUR",power="on",basis="profile"`, steady(f.rate)},
			backfill{"rota_energy_node_joules_total", fl + `node="gpu01",pool="gpu",source="bmc"`, steady(f.rate * 1000 * 3600)})
	}
	// Each family's series together, as OpenMetrics wants.
	slices.SortStableFunc(two, func(a, b backfill) int { return strings.Compare(a.name, b.name) })
	url := startBackfilledPrometheus(t, two)
	file := filepath.Join(t.TempDir(), "rota.yml")
	if err := os.WriteFile(file, []byte("server: {webhook_auth_disabled: true}\nprometheus: {url: "+url+", fleet: site-a}\npools:\n  - name: gpu\n    profile: {cpu_cores: 8}\n    cost: {hourly: 1.5}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The rows as JSON names them (not report's types: the old rows had no fleet).
	type row struct {
		Fleet, By, Name string
		Spend           float64
		DrawnKWh        float64 `json:"drawn_kwh"`
	}
	report := func(args ...string) (fleet string, rows map[string]row, table string) {
		t.Helper()
		var stdout, stderr strings.Builder
		args = append([]string{"report", "--month", "2026-11"}, args...)
		if code := run(t.Context(), append(args, "--format", "json"), env{stdout: &stdout, stderr: &stderr}); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		var got struct {
			Fleet      string
			Money, Use []row
		}
		if err := json.Unmarshal([]byte(stdout.String()), &got); err != nil {
			t.Fatalf("%v:\n%s", err, stdout.String())
		}
		rows = map[string]row{}
		for table, rs := range map[string][]row{"money": got.Money, "use": got.Use} {
			for _, r := range rs {
				rows[table+"/"+r.Fleet+"/"+r.By+"/"+r.Name] = r
			}
		}
		stdout.Reset()
		if code := run(t.Context(), args, env{stdout: &stdout, stderr: &stderr}); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		return got.Fleet, rows, stdout.String()
	}
	cent := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 0.01 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}

	fleet, rows, table := report("--config.file", file)
	if fleet != "site-a" || len(rows) != 3 || !strings.Contains(table, "UTC, fleet site-a)") {
		t.Errorf("prometheus.fleet site-a: fleet %q, rows %v, table:\n%s", fleet, rows, table)
	}
	cent("site-a's gpu spend", rows["money/site-a/pool/gpu"].Spend, 720)
	cent("site-a's research spend", rows["money/site-a/department/research"].Spend, 720)
	cent("site-a's gpu drawn kWh", rows["use/site-a/pool/gpu"].DrawnKWh, 720)

	fleet, rows, table = report("--prometheus.url", url)
	if fleet != "" || len(rows) != 6 {
		t.Errorf("no prometheus.fleet: fleet %q, rows %v", fleet, rows)
	}
	for f, rate := range map[string]float64{"site-a": 1, "site-b": 10} {
		cent(f+"'s gpu spend", rows["money/"+f+"/pool/gpu"].Spend, 720*rate)
		cent(f+"'s gpu drawn kWh", rows["use/"+f+"/pool/gpu"].DrawnKWh, 720*rate)
	}
	if !strings.HasPrefix(strings.Split(table, "\n")[2], "fleet ") || !strings.Contains(table, "site-b") {
		t.Errorf("no fleet column:\n%s", table)
	}
}

func TestReportRejects(t *testing.T) {
	for _, args := range [][]string{
		{"report", "--month", "November"},
		{"report", "--month", "2999-01"},
		{"report", "--timezone", "Mars/Olympus"},
		{"report", "--format", "xml"},
	} {
		var stdout, stderr strings.Builder
		if code := run(t.Context(), args, env{stdout: &stdout, stderr: &stderr}); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage): %s", args, code, stderr.String())
		}
	}
	var stdout, stderr strings.Builder
	down := fmt.Sprintf("http://127.0.0.1:%d", testutil.FreePort(t))
	if code := run(t.Context(), []string{"report", "--month", "2026-11", "--prometheus.url", down}, env{stdout: &stdout, stderr: &stderr}); code != 1 ||
		!strings.Contains(stderr.String(), "querying prometheus") {
		t.Errorf("prometheus down: exit %d, %s", code, stderr.String())
	}
}

// TestReportConfigFile: report reads the daemon's config by default, as the other commands
// do, so on rota's host Prometheus' URL and http_client (auth, TLS) come from it; it read no
// config unless given one, and asked 127.0.0.1:9090 without auth. The default missing is a
// usage error naming the flag, unless --prometheus.url says where to read (TestReportRejects).
func TestReportConfigFile(t *testing.T) {
	const defaultFile = "/etc/rota/rota.yml"
	down := fmt.Sprintf("http://127.0.0.1:%d", testutil.FreePort(t))
	file := filepath.Join(t.TempDir(), "rota.yml")
	if err := os.WriteFile(file, []byte("server: {webhook_auth_disabled: true}\nprometheus: {url: "+down+"}\npools:\n  - name: cpu\n    profile: {cpu_cores: 8}\n    cost: {hourly: 1.5}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		args     []string
		code     int
		inStderr []string
	}{
		{"help names the default", []string{"--help"}, 0, []string{defaultFile}},
		{"default missing", nil, 2, []string{"--config.file", defaultFile, "--prometheus.url"}},
		{"given and missing", []string{"--config.file", file + ".absent"}, 1, []string{"reading config", file + ".absent"}},
		{"the config's URL", []string{"--config.file", file}, 1, []string{"querying prometheus", down}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat(defaultFile); err == nil && tc.args == nil {
				t.Skipf("%s exists on this machine: the default is not missing", defaultFile)
			}
			var stdout, stderr strings.Builder
			args := append([]string{"report", "--month", "2026-11"}, tc.args...)
			if code := run(t.Context(), args, env{stdout: &stdout, stderr: &stderr}); code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, stderr.String())
			}
			for _, s := range tc.inStderr {
				if !strings.Contains(stderr.String()+stdout.String(), s) {
					t.Errorf("output does not name %q: %s%s", s, stdout.String(), stderr.String())
				}
			}
		})
	}
}
