package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rotahq/rota/internal/testutil"
)

func TestSimulate(t *testing.T) {
	root := testutil.RepoRoot(t)
	cfg := filepath.Join(root, "deploy", "simulate", "rota-itp.yml")
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("jobs.csv", "submit,duration,gpus,cpus,nodes\n0,3600,8,0,1\n60,1800,16,0,2\n7200,600,1,0,\n")
	bad := write("bad.csv", "submit,duration,gpus,cpus\n0,60,1,0\n5,x,1,0\n")
	one := write("one.csv", "submit,duration,gpus,cpus,nodes\n0,3600,8,0,1\n")
	gang := write("gang.csv", "submit,duration,gpus,cpus,nodes\n0,3600,8,0,1\n0,600,32,0,4\n")
	cpuOnly := write("cpu.csv", "submit,duration,gpus,cpus,nodes\n0,3600,0,200,1\n")
	empty := write("empty.csv", "")
	header := write("header.csv", "submit,duration,gpus,cpus\n")
	class := write("class.csv", "submit,duration,gpus,cpus,class\n0,60,1,0,heavy\n5,60,1,0,Heavy\n")
	// A replay config holds no daemon settings: no server, store, prometheus or bmc section.
	small := write("small.yml", "pools:\n  - name: cpu\n    profile: {cpu_cores: 4}\n    cost: {hourly: 1}\n")
	swfCfg := filepath.Join(root, "deploy", "simulate", "rota-swf.yml")
	machine := filepath.Join(root, "scaler", "sim", "testdata", "machine4.swf")
	swf8 := write("swf8.yml", "pools:\n  - name: n\n    profile: {cpu_cores: 8}\n    cost: {watts: 300, price_per_kwh: 0.15}\n    boot_timeout: 5m\n")
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{"table and files", []string{"--trace", good, "--config", cfg, "--fleet", "3", "--out", filepath.Join(dir, "out")}, 0,
			[]string{"jobs: 3 jobs; fleet gpu: 3 servers (given)", "lower-bound", "always-on", "idle-10m0s", "rota", "jobs-waits.png"}, ""},
		{"sweep with the frontier plot", []string{"--trace", good, "--config", cfg, "--fleet", "3", "--sweep", "--out", filepath.Join(dir, "sweep")}, 0,
			[]string{"idle-1m0s", "idle-1h0m0s", "rota spares.quantile=0.95", "rota break_even.idle_periods=true", "jobs-pareto.png",
				"against the idle timeouts (x LB, p95 and mean wait, cycles a server-day):", "the timeouts' frontier", "dominate idle-10m0s (",
				"pool gpu (3 servers) keeps no warm spares", "rota spares.quantile=0.95 replay as rota does"}, ""},
		{"sweep judged against a timeout of its own", []string{"--trace", good, "--config", cfg, "--fleet", "3", "--sweep", "--idle-timeout", "15m"}, 0,
			[]string{"idle-15m0s", "idle-20m0s", "dominate idle-15m0s ("}, ""},
		{"malformed row named by line", []string{"--trace", bad, "--config", cfg}, 1, nil, "line 3: duration"},
		// A usage error naming the flag, before the trace is read (it was exit 1, after).
		{"bad fleet", []string{"--trace", good, "--config", cfg, "--fleet", "most"}, 2, nil, `--fleet: "most"`},
		// --out naming a file is refused before the replay (the trace here cannot even be read)
		{"out is a file", []string{"--trace", filepath.Join(dir, "none.csv"), "--config", cfg, "--out", good}, 1, nil, "--out: mkdir " + good + ": not a directory"},
		{"missing trace", []string{"--trace", filepath.Join(dir, "none.csv"), "--config", cfg}, 1, nil, "opening trace"},
		// --out panicked in the wait plot (a log axis with no line) on a one-job trace.
		{"one job with files", []string{"--trace", one, "--config", cfg, "--out", filepath.Join(dir, "one")}, 0, []string{"one-waits.png"}, ""},
		// No pool fits the job: a fleet of 0 servers used to print a table of zeros, exit 0.
		{"no server", []string{"--trace", cpuOnly, "--config", small}, 1, nil, "no pool of the config fits any of the trace's 1 jobs"},
		// Jobs that cannot run were in the JSON only.
		{"jobs that cannot run on stderr", []string{"--trace", gang, "--config", cfg, "--fleet", "2"}, 0, []string{"lower-bound"}, "1 job(s) cannot run on this fleet and are left out of every row; the first, line 3: needs 4 server(s)"},
		{"empty trace", []string{"--trace", empty, "--config", cfg}, 1, nil, "empty.csv: the file is empty"},
		// A class the config lacks was said without the file or the column.
		{"class of no config class", []string{"--trace", class, "--config", cfg}, 1, nil,
			`class.csv: line 3: class: "Heavy" is not a class of the config (it has light, medium, heavy)`},
		{"header only", []string{"--trace", header, "--config", cfg}, 1, nil, "header.csv: the trace has no jobs"},
		// An SWF header's MaxNodes sizes the fleet by default; --fleet peak is still there.
		{"swf machine size", []string{"--trace", machine, "--config", swfCfg}, 0, []string{"fleet ipsc: 4 servers (the trace's machine; peak need 7)"}, ""},
		{"swf peak", []string{"--trace", machine, "--config", swfCfg, "--fleet", "peak"}, 0, []string{"fleet ipsc: 7 servers (peak need 7)"}, ""},
		// A pool of more cores than the log's nodes still gives each job whole servers: with 8,
		// the four one-processor nodes held the jobs of 32 (peak need 1).
		{"swf pool of more cores", []string{"--trace", machine, "--config", swf8, "--fleet", "peak"}, 0,
			[]string{"fleet n: 7 servers (peak need 7)", "pool n replayed with the trace's 1 processor(s) per server, as its jobs take whole servers (its profile has 8 cpu_cores)"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"simulate"}, c.args...), env{stdout: &stdout, stderr: &stderr})
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.code, stdout.String(), stderr.String())
			}
			for _, s := range c.stdout {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout.String())
				}
			}
			if !strings.Contains(stderr.String(), c.stderr) {
				t.Errorf("stderr lacks %q:\n%s", c.stderr, stderr.String())
			}
		})
	}
}

func TestSimulateProgressOnlyOnATerminal(t *testing.T) {
	var out bytes.Buffer
	bar(&out, "rota")(500, 1000)
	if !strings.Contains(out.String(), "rota") || !strings.Contains(out.String(), " 50%") {
		t.Errorf("bar = %q", out.String())
	}
	root := testutil.RepoRoot(t)
	trace := filepath.Join(t.TempDir(), "j.csv")
	if err := os.WriteFile(trace, []byte("submit,duration,gpus,cpus\n0,60,1,0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tty := range []bool{false, true} {
		var stdout, stderr bytes.Buffer
		run(context.Background(), []string{"simulate", "--trace", trace, "--config", filepath.Join(root, "deploy", "simulate", "rota-itp.yml")},
			env{stdout: &stdout, stderr: &stderr, stderrTTY: tty})
		if drew := strings.Contains(stderr.String(), "100%"); drew != tty {
			t.Errorf("tty %v: progress drawn %v (%q)", tty, drew, stderr.String())
		}
	}
}

// TestSimulateITPServerSize: an ITP trace is split into servers of the GPU pool's profile.gpus
// unless --gpus-per-node is given, and a flag that differs from the profile is warned of. It was
// 8 whatever the profile: on 4-GPU servers the jobs of 8 GPUs and more could not run, on 16-GPU
// servers a 16-GPU job took two of them and the note said 8 GPUs per server.
func TestSimulateITPServerSize(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	itp := write("itp.csv", "job_id,submission_time,duration,num_gpu\na,0,3600,8\nb,60,1800,16\nc,120,600,2\n")
	cfg := func(gpus int) string {
		return write(fmt.Sprintf("gpu%d.yml", gpus), fmt.Sprintf("pools:\n  - name: gpu\n    profile: {cpu_cores: 96, gpus: %d}\n    cost: {hourly: 1}\n    boot_timeout: 5m\n", gpus))
	}
	cases := []struct {
		name           string
		args           []string
		stdout, stderr string
		notStderr      string
	}{
		{"4-GPU servers", []string{"--config", cfg(4)}, "4 GPUs per server", "", "cannot run"},
		{"16-GPU servers", []string{"--config", cfg(16)}, "16 GPUs per server", "", "cannot run"},
		{"the flag against the profile", []string{"--config", cfg(4), "--gpus-per-node", "8"}, "8 GPUs per server",
			"rotactl: warning: --gpus-per-node 8 differs from the profile.gpus of pool gpu (4 GPUs)", ""},
		{"the flag as the profile", []string{"--config", cfg(8), "--gpus-per-node", "8"}, "8 GPUs per server", "", "warning"},
	}
	// A negative size is refused, never taken for the default.
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"simulate", "--trace", itp, "--config", cfg(4), "--gpus-per-node=-3"}, env{stdout: io.Discard, stderr: &stderr}); code != 2 ||
		!strings.Contains(stderr.String(), "--gpus-per-node: -3 is negative: give a count above zero") {
		t.Errorf("--gpus-per-node -3: exit %d, %q", code, stderr.String())
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"simulate", "--trace", itp}, c.args...), env{stdout: &stdout, stderr: &stderr})
			if code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), c.stdout) {
				t.Errorf("stdout lacks %q:\n%s", c.stdout, stdout.String())
			}
			if !strings.Contains(stderr.String(), c.stderr) || (c.notStderr != "" && strings.Contains(stderr.String(), c.notStderr)) {
				t.Errorf("stderr %q; want %q and not %q", stderr.String(), c.stderr, c.notStderr)
			}
		})
	}
}

// TestSimulateNegativeWatchDelay: --watch-delay's help offers a negative value (the planner
// only at evaluation intervals), yet "--watch-delay -1s" failed with "expected argument for
// flag '--watch-delay'": kingpin took -1s for a flag. It is read as --watch-delay=-1s; a
// following flag is still a flag.
func TestSimulateNegativeWatchDelay(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "j.csv")
	if err := os.WriteFile(trace, []byte("submit,duration,gpus,cpus\n0,60,1,0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(testutil.RepoRoot(t), "deploy", "simulate", "rota-itp.yml")
	for _, args := range [][]string{{"--watch-delay", "-1s"}, {"--watch-delay=-1s"}, {"--watch-delay", "-5m", "--idle-timeout", "0s"}} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), append([]string{"simulate", "--trace", trace, "--config", cfg}, args...), env{stdout: &stdout, stderr: &stderr}); code != 0 || !strings.Contains(stdout.String(), "rota") {
			t.Errorf("%q: exit %d, %s", args, code, stderr.String())
		}
	}
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"simulate", "--trace", trace, "--config", cfg, "--watch-delay", "--sweep"}, env{stdout: io.Discard, stderr: &stderr}); code != 2 {
		t.Errorf("--watch-delay --sweep: exit %d, want 2 (%s)", code, stderr.String())
	}
}
