package report

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/sim"
	"github.com/rotahq/rota/scaler/sim/trace"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// tinyReport replays a small fixed workload under every policy.
func tinyReport(t *testing.T) *Report {
	t.Helper()
	cfg, err := config.ParseFor([]byte("pools:\n  - name: gpu\n    profile: {cpu_cores: 96, gpus: 8}\n    cost: {watts: 5000, price_per_kwh: 0.2}\n    boot_timeout: 5m\n"), config.Replay)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []trace.Job
	for i := range 40 {
		// bursts of four every 90 minutes, one of them a two-server gang
		nodes, gpus := 1, 1+i%8
		if i%4 == 3 {
			nodes, gpus = 2, 8
		}
		jobs = append(jobs, trace.Job{Line: i + 2, Submit: int64(i/4) * 5400, Duration: int64(1200 + 300*(i%5)), Nodes: nodes, GPUs: gpus})
	}
	tr := &trace.Trace{Format: trace.CSV, Start: time.Unix(0, 0).UTC(), Jobs: jobs, Notes: []string{"tiny"}}
	e, err := sim.NewEnv(cfg, tr, sim.Options{Fleet: "peak"})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := sim.Compare(context.Background(), e, []sim.Policy{sim.AlwaysOn(), sim.IdleTimeout(10 * time.Minute), sim.Rota("rota")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return New("tiny", e, rs)
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n%s", name, got)
	}
}

// TestDeterministicAndGolden runs the whole replay twice and compares every output byte for
// byte; the table and the CSV are also checked against golden files.
func TestDeterministicAndGolden(t *testing.T) {
	var outs [2]map[string][]byte
	for i := range outs {
		r := tinyReport(t)
		dir := t.TempDir()
		files, err := r.Write(dir, "tiny")
		if err != nil {
			t.Fatal(err)
		}
		var tab bytes.Buffer
		if err := r.Table(&tab); err != nil {
			t.Fatal(err)
		}
		outs[i] = map[string][]byte{"table": tab.Bytes()}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			outs[i][filepath.Base(f)] = b
		}
	}
	if len(outs[0]) != 7 {
		t.Fatalf("%d outputs, want the table and 6 files", len(outs[0]))
	}
	for name, b := range outs[0] {
		if !bytes.Equal(b, outs[1][name]) {
			t.Errorf("%s differs between two runs", name)
		}
	}
	golden(t, "tiny.txt", outs[0]["table"])
	golden(t, "tiny-results.csv", outs[0]["tiny-results.csv"])
}

func TestShort(t *testing.T) {
	cases := []struct {
		name string
		sec  float64
		want string
	}{
		{"zero", 0, "0s"}, {"seconds", 45, "45s"}, {"minutes", 300, "5.0m"}, {"hours", 9000, "2.5h"}, {"negative", -300, "-5.0m"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := short(c.sec); got != c.want {
				t.Errorf("short(%v) = %q, want %q", c.sec, got, c.want)
			}
		})
	}
}

func TestHourlyMeans(t *testing.T) {
	// 2 servers for the first half hour, 4 from then: the first hour averages 3.
	s := steps{t: []int64{0, 1800}, v: []float64{2, 4}}
	got := s.hourly(0, 7200)
	if len(got) != 2 || got[0].Y != 3 || got[1].Y != 4 || got[1].X != 1.0/24 {
		t.Errorf("hourly = %v", got)
	}
}

// A one-job trace leaves no policy with both waits and a time series: the wait plot had no
// line, and its log axis no range (gonum panicked, "Values must be greater than 0 for a log
// scale"). Every file is written; so is a replay where every wait is under 6s.
func TestFilesOfTinyTraces(t *testing.T) {
	cfg, err := config.ParseFor([]byte("pools:\n  - name: gpu\n    profile: {cpu_cores: 96, gpus: 8}\n    cost: {hourly: 1}\n    boot_timeout: 5m\n"), config.Replay)
	if err != nil {
		t.Fatal(err)
	}
	for name, jobs := range map[string][]trace.Job{
		"one job":       {{Line: 2, Duration: 3600, Nodes: 1, GPUs: 8}},
		"no job waits":  {{Line: 2, Duration: 60, Nodes: 1, GPUs: 1}, {Line: 3, Submit: 10, Duration: 60, Nodes: 1, GPUs: 1}},
		"a zero-length": {{Line: 2, Duration: 0, Nodes: 1, GPUs: 1}, {Line: 3, Duration: 1, Nodes: 1, GPUs: 1}}, // alone, refused
	} {
		t.Run(name, func(t *testing.T) {
			tr := &trace.Trace{Format: trace.CSV, Start: time.Unix(0, 0).UTC(), Jobs: jobs}
			e, err := sim.NewEnv(cfg, tr, sim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rs, err := sim.Compare(context.Background(), e, []sim.Policy{sim.AlwaysOn(), sim.IdleTimeout(10 * time.Minute), sim.Rota("rota")}, nil)
			if err != nil {
				t.Fatal(err)
			}
			files, err := New(name, e, rs).Write(t.TempDir(), "t")
			if err != nil || len(files) != 6 {
				t.Fatalf("wrote %v: %v", files, err)
			}
			for _, f := range files {
				if st, err := os.Stat(f); err != nil || st.Size() == 0 {
					t.Errorf("%s: %v", f, err)
				}
			}
		})
	}
}

// A row waiting less at p95 than always-on (extra_p95 under 0) is named in a note saying why
// that can be; with none, nothing is said.
func TestBelowAlwaysOnNote(t *testing.T) {
	rows := []sim.Result{{Policy: "lower-bound"}, {Policy: "always-on"}, {Policy: "idle-10m0s", ExtraWaitP95: 60}, {Policy: "rota", ExtraWaitP95: -533}}
	n := belowAlwaysOn(rows)
	if len(n) != 1 || !strings.Contains(n[0], "extra_p95 below 0 (rota)") || !strings.Contains(n[0], "no floor") {
		t.Errorf("note %q, want rota named", n)
	}
	rows[3].ExtraWaitP95 = 0
	if n := belowAlwaysOn(rows); n != nil {
		t.Errorf("no row below always-on: note %q", n)
	}
}

// Rows under test with the same figures are named together; the idle timeouts, the bound and
// always-on are not rows under test, and rows that differ in anything are not alike.
func TestAlikeNote(t *testing.T) {
	rows := []sim.Result{{Policy: "lower-bound", ServerHours: 10}, {Policy: "always-on", ServerHours: 10},
		{Policy: "idle-10m0s", ServerHours: 12, WaitP95: 300}, {Policy: "rota", ServerHours: 12, WaitP95: 300},
		{Policy: "rota, q=0", ServerHours: 12, WaitP95: 300}, {Policy: "rota, q=0.5", ServerHours: 12, WaitP95: 300},
		{Policy: "rota, q=0.95", ServerHours: 13, WaitP95: 200}, {Policy: "rota, no holds", ServerHours: 13, WaitP95: 200, PowerOffs: 1}}
	n := alike(rows)
	if len(n) != 1 || !strings.HasSuffix(n[0], ": rota = rota, q=0 = rota, q=0.5") {
		t.Errorf("note %q, want rota, q=0 and q=0.5 alike and nothing else", n)
	}
	rows[4].WaitMean, rows[5].PowerOns = 1, 1
	if n := alike(rows); n != nil {
		t.Errorf("no rows alike: note %q", n)
	}
}
