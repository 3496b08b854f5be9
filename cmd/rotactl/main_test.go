package main

import (
	"strings"
	"testing"
)

// TestHelpStopsBeforeTheVerb: --help prints usage and exits 0 without running the verb (which
// here would fail for want of a config file), and no verb at all is a usage error.
func TestHelpStopsBeforeTheVerb(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		code     int
		inStderr string
	}{
		{"verb help", []string{"validate", "--help"}, 0, "validate"},
		{"top-level help", []string{"--help"}, 0, "power"},
		// every command that needs the config reads the daemon's by default, power too
		{"power's default config", []string{"power", "status", "--help"}, 0, "/etc/rota/rota.yml"},
		{"no verb", nil, 2, "command"},
		{"unknown verb", []string{"frobnicate"}, 2, "frobnicate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := rotactlInProcess(tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			if !strings.Contains(stderr+stdout, tc.inStderr) {
				t.Errorf("output does not mention %q:\n%s%s", tc.inStderr, stdout, stderr)
			}
			if strings.Contains(stderr, "no such file") {
				t.Errorf("the verb ran after --help: %s", stderr)
			}
		})
	}
}

// A URL flag that is no URL rotactl can call is a usage error naming the flag, before anything
// runs: `status --rota.url=127.0.0.1:10091` exited 1 with `"127.0.0.1:10091" is not an http(s)
// URL`, as if rota had failed, and `report --prometheus.url=127.0.0.1:9090` with url.Parse's
// words alone.
func TestBadURLsAreUsageErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		says string
	}{
		{"no scheme", []string{"status", "--rota.url=127.0.0.1:10091"}, `--rota.url: "127.0.0.1:10091" is not an http(s) URL`},
		{"other scheme", []string{"pin", "n1", "--rota.url=ftp://rota:10091"}, "--rota.url"},
		{"a query", []string{"pause", "--rota.url=http://rota:10091/?x=1"}, "--rota.url: \"http://rota:10091/?x=1\": rota's URL takes no query"},
		{"slurm resume", []string{"slurm", "resume", "--rota.url=rota:10091", "n1"}, "--rota.url"},
		{"prometheus", []string{"report", "--prometheus.url=127.0.0.1:9090"}, `--prometheus.url: "127.0.0.1:9090" is not an http(s) URL`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := rotactlInProcess(tc.args...)
			if code != 2 || !strings.Contains(stderr, tc.says) {
				t.Errorf("exit %d, want 2 saying %q\nstdout: %s\nstderr: %s", code, tc.says, stdout, stderr)
			}
		})
	}
}

// A duration flag that means nothing (negative; zero where zero is no bound) is a usage error
// naming the flag, before anything runs: `power --timeout=-5s` used to send its commands.
func TestMeaninglessDurationsAreUsageErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"power timeout negative", []string{"power", "on", "--timeout=-5s", "n1"}, 2, "--timeout"},
		{"power timeout zero", []string{"power", "status", "--timeout=0s", "n1"}, 2, "means nothing"},
		{"slurm timeout negative", []string{"slurm", "resume", "--timeout=-1m", "n1"}, 2, "negative"},
		{"api timeout zero", []string{"status", "--rota.timeout=0"}, 2, "--rota.timeout"},
		{"watch interval negative", []string{"status", "--watch", "--watch.interval=-5s"}, 2, "--watch.interval"},
		{"not a duration", []string{"status", "--rota.timeout=soon"}, 2, "not a duration"},
		{"max wait zero", []string{"simulate", "--trace=t", "--config=c", "--max-wait=0s"}, 2, "--max-wait"},
		{"shutdown negative", []string{"simulate", "--trace=t", "--config=c", "--shutdown=-1m"}, 2, "--shutdown"},
		// Where zero means something, the message offers it (it asked for "above zero").
		{"idle timeout negative", []string{"simulate", "--trace=t", "--config=c", "--idle-timeout=-1s"}, 2, "--idle-timeout: -1s is negative: give zero or a duration above it"},
		{"watch delay not a duration", []string{"simulate", "--trace=t", "--config=c", "--watch-delay=soon"}, 2, "--watch-delay: \"soon\" is not a duration"},
		{"watch delay negative is no watch", []string{"simulate", "--trace=/nonexistent", "--config=/nonexistent", "--watch-delay=-1s"}, 1, "nonexistent"},
		// Zero where zero means something runs on (and fails later, for want of the file).
		{"shutdown zero is at once", []string{"simulate", "--trace=/nonexistent", "--config=/nonexistent", "--shutdown=0s"}, 1, "nonexistent"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := rotactlInProcess(tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.says) {
				t.Errorf("exit %d, want %d saying %q\nstdout: %s\nstderr: %s", code, tc.code, tc.says, stdout, stderr)
			}
		})
	}
}

// A value kingpin itself refuses (an int, an enum) is a usage error naming the flag: `status
// -o yaml` said only "enum value must be one of table,json, got 'yaml'" and `simulate
// --gpus-per-node=x` "strconv.ParseFloat: parsing "x": invalid syntax", with no flag named.
func TestBadFlagValuesNameTheFlag(t *testing.T) {
	cases := []struct {
		name string
		args []string
		says string
	}{
		{"output", []string{"status", "-o", "yaml"}, "--output: enum value must be one of table,json, got 'yaml'"},
		{"power's output", []string{"power", "status", "--output=yaml", "n1"}, "--output: "},
		{"report format", []string{"report", "--format=xml"}, "--format: "},
		{"trace format", []string{"simulate", "--trace=t", "--config=c", "--format=gwf"}, "--format: "},
		{"gpus per node", []string{"simulate", "--trace=t", "--config=c", "--gpus-per-node=x"}, "--gpus-per-node: "},
		// Checked when the command line is parsed: a negative count failed after the config was
		// read, exit 1, and 0 was taken for the config's size, unsaid.
		{"gpus per node of none", []string{"simulate", "--trace=t", "--config=c", "--gpus-per-node=0"}, "--gpus-per-node: 0 means nothing here: give a count above zero"},
		{"negative gpus per node", []string{"simulate", "--trace=t", "--config=c", "--gpus-per-node=-3"}, "--gpus-per-node: -3 is negative: give a count above zero"},
		// Checked when the command line is parsed: it failed after the whole trace was read,
		// exit 1, saying `fleet "x" is not ...` with no flag named.
		{"fleet", []string{"simulate", "--trace=t", "--config=c", "--fleet=x"}, `--fleet: "x" is not auto, trace, peak, p95, config or a server count`},
		{"fleet of no server", []string{"simulate", "--trace=t", "--config=c", "--fleet=0"}, "--fleet: "},
		{"store target", []string{"store", "migrate", "--to=mysql"}, "--to: "},
		{"slurm unreachable", []string{"slurm", "resume", "--rota.unreachable=retry", "n1"}, "--rota.unreachable: "},
		// rotactl's own values are named once, not twice.
		{"own duration", []string{"status", "--rota.timeout=soon"}, "rotactl: --rota.timeout: \"soon\" is not a duration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := rotactlInProcess(tc.args...)
			if code != 2 || !strings.Contains(stderr, tc.says) {
				t.Errorf("exit %d, want 2 saying %q\nstdout: %s\nstderr: %s", code, tc.says, stdout, stderr)
			}
		})
	}
}
