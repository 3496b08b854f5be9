package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/testutil"
)

var (
	buildDir  string
	buildOnce sync.Once
	binary    string
	buildErr  error
)

func TestMain(m *testing.M) {
	var err error
	if buildDir, err = os.MkdirTemp("", "rota-exporter-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(buildDir)
	os.Exit(code)
}

// exporterBinary builds rota-exporter once per test run, with go build, as `make build` does.
func exporterBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binary = filepath.Join(buildDir, "rota-exporter")
		out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// startExporter runs the binary on a free loopback port and waits until it serves.
func startExporter(t *testing.T, args ...string) string {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	testutil.Start(t, exporterBinary(t), append([]string{"--web.listen-address=" + addr}, args...)...)
	testutil.WaitHTTP(t, "http://"+addr+"/metrics", 30*time.Second)
	return addr
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

// TestBadInput: each mistake ends the process at once with exit code 1 and a clear message, and
// nothing was left listening.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	emptyProc := filepath.Join(dir, "empty-proc")
	if err := os.Mkdir(emptyProc, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{name: "malformed web config", args: []string{"--web.config.file=" + write("bad.yml", "tls_server_config: [not, a, map\n")}, want: "invalid web configuration"},
		{name: "web config with unknown field", args: []string{"--web.config.file=" + write("unknown.yml", "basic_auth_userz:\n  a: b\n")}, want: "field basic_auth_userz not found"},
		{name: "web config with missing certificate", args: []string{"--web.config.file=" + write("nocert.yml", "tls_server_config:\n  cert_file: /nonexistent/c.pem\n  key_file: /nonexistent/k.pem\n")}, want: "invalid web configuration"},
		{name: "missing web config file", args: []string{"--web.config.file=/nonexistent/web.yml"}, want: "no such file"},
		{name: "unknown collector", args: []string{"--collector.bogus"}, want: "unknown long flag '--collector.bogus'"},
		{name: "unknown collector disabled", args: []string{"--no-collector.bogus"}, want: "unknown long flag '--no-collector.bogus'"},
		{name: "procfs path missing", args: []string{"--path.procfs=/nonexistent/proc"}, want: "/nonexistent/proc"},
		{name: "procfs without stat", args: []string{"--path.procfs=" + emptyProc}, want: "reading cpu statistics"},
		{name: "bad log format", args: []string{"--log.format=xml"}, want: "--log.format: enum value must be one of logfmt,json"},
		{name: "gpu timeout not a duration", args: []string{"--collector.gpu.timeout=3"}, want: "--collector.gpu.timeout: "},
		{name: "slurm timeout not a duration", args: []string{"--collector.slurm.timeout=soon"}, want: "--collector.slurm.timeout: "},
		// ServeMux panicked on these, with a goroutine dump, exit 2.
		{name: "telemetry path without a slash", args: []string{"--web.telemetry-path=metrics"}, want: `--web.telemetry-path must start with /, got "metrics"`},
		{name: "telemetry path with a space", args: []string{"--web.telemetry-path=/a b"}, want: "--web.telemetry-path must be a plain path"},
		{name: "telemetry path under pprof", args: []string{"--web.telemetry-path=/debug/pprof/", "--web.enable-pprof"}, want: "which --web.enable-pprof serves"},
		// A wildcard served the metrics under any path below it.
		{name: "telemetry path with a wildcard", args: []string{"--web.telemetry-path=/m/{x}"}, want: "without spaces or braces"},
		{name: "negative max requests", args: []string{"--web.max-requests=-1"}, want: "--web.max-requests must not be negative (0 means no limit), got -1"},
		{name: "max requests not a number", args: []string{"--web.max-requests=forty"}, want: "--web.max-requests: "},
		{name: "bad gpu timeout", args: []string{"--collector.gpu.timeout=0s"}, want: "must be positive"},
		{name: "bad slurm timeout", args: []string{"--collector.slurm.timeout=0s"}, want: "--collector.slurm.timeout must be positive"},
		{name: "negative gomaxprocs", args: []string{"--runtime.gomaxprocs=-1"}, want: "must not be negative"},
		{name: "negative max connections", args: []string{"--web.max-connections=-1"}, want: "--web.max-connections must not be negative (0 means no limit), got -1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var stderr bytes.Buffer
			cmd := exec.CommandContext(ctx, exporterBinary(t), append([]string{"--web.listen-address=" + addr}, tc.args...)...)
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("exit: %v, want exit status 1; stderr:\n%s", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr does not say %q:\n%s", tc.want, stderr.String())
			}
			if strings.Contains(stderr.String(), "Listening on") {
				t.Errorf("it started listening before failing:\n%s", stderr.String())
			}
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
				t.Errorf("something listens on %s", addr)
			}
		})
	}
}

// TestVersion: --version prints prometheus/common's version block and exits 0.
func TestVersion(t *testing.T) {
	out, err := exec.Command(exporterBinary(t), "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "rota-exporter, version") || !strings.Contains(string(out), "go version:") {
		t.Fatalf("--version: %v\n%s", err, out)
	}
}

// TestPromtoolCheckMetrics: the live exposition, from this machine's /proc and NVML (absent
// here: the GPU collector reports itself unavailable), passes promtool's lint.
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool := testutil.Tool(t, "promtool")
	addr := startExporter(t, "--collector.cpu.per-cpu")
	body := get(t, "http://"+addr+"/metrics")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
	for _, name := range []string{
		"rota_node_cpu_seconds_total{mode=\"idle\"}", "rota_node_cpus ", "rota_node_logical_cpu_seconds_total{cpu=\"0\",mode=\"user\"}",
		"rota_node_memory_total_bytes ", "rota_node_memory_available_bytes ", "rota_gpu_devices ",
		"rota_exporter_collector_success{collector=\"gpu\"}", "rota_exporter_collector_duration_seconds{collector=\"cpu\"}",
		"rota_exporter_build_info{", "process_cpu_seconds_total ",
		// Whatever NVML says on this machine, CPU and memory carry on.
		`rota_exporter_collector_success{collector="cpu"} 1`, `rota_exporter_collector_success{collector="memory"} 1`,
	} {
		if !strings.Contains(body, "\n"+name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}

// TestRuntimeSettings: GOMAXPROCS is 1 unless --runtime.gomaxprocs (or the GOMAXPROCS
// environment variable) says otherwise, and the GC target is 50 unless GOGC is set, as the
// exporter's own go_* series report.
func TestRuntimeSettings(t *testing.T) {
	cases := []struct {
		name      string
		env, args []string
		want      []string
	}{
		{name: "defaults", want: []string{"go_sched_gomaxprocs_threads 1\n", "go_gc_gogc_percent 50\n"}},
		{name: "flag and GOGC", env: []string{"GOGC=80"}, args: []string{"--runtime.gomaxprocs=2"}, want: []string{"go_sched_gomaxprocs_threads 2\n", "go_gc_gogc_percent 80\n"}},
		{name: "GOMAXPROCS variable", env: []string{"GOMAXPROCS=3"}, want: []string{"go_sched_gomaxprocs_threads 3\n"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "defaults" && (os.Getenv("GOGC") != "" || os.Getenv("GOMAXPROCS") != "") {
				t.Skip("GOGC or GOMAXPROCS is set in this environment")
			}
			addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
			testutil.StartEnv(t, tc.env, exporterBinary(t), append([]string{"--web.listen-address=" + addr}, tc.args...)...)
			testutil.WaitHTTP(t, "http://"+addr+"/metrics", 30*time.Second)
			body := get(t, "http://"+addr+"/metrics")
			for _, want := range tc.want {
				if !strings.Contains(body, "\n"+want) {
					t.Errorf("/metrics lacks %q", want)
				}
			}
		})
	}
}

// TestDisabledCollectorsAndPath: --no-collector.<name> removes a collector,
// --web.telemetry-path moves the metrics, --web.disable-exporter-metrics leaves out the go_*,
// process_* and connection series, --log.format=json covers every log line.
func TestDisabledCollectorsAndPath(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	proc := testutil.Start(t, exporterBinary(t), "--web.listen-address="+addr, "--web.telemetry-path=/m",
		"--no-collector.gpu", "--no-collector.memory", "--web.disable-exporter-metrics", "--log.format=json")
	testutil.WaitHTTP(t, "http://"+addr+"/m", 30*time.Second)
	body := get(t, "http://"+addr+"/m")
	for _, absent := range []string{"rota_gpu_", "rota_node_memory", `collector="gpu"`, "go_goroutines", "process_cpu", "rota_exporter_http_connections"} {
		if strings.Contains(body, absent) {
			t.Errorf("/m has %s", absent)
		}
	}
	if !strings.Contains(body, `rota_exporter_collector_success{collector="cpu"} 1`) {
		t.Errorf("/m lacks the cpu collector:\n%s", body)
	}
	if !strings.Contains(get(t, "http://"+addr+"/"), `href="/m"`) {
		t.Errorf("landing page does not link /m")
	}
	// exporter-toolkit logs through log/slog; its lines must come out in the chosen format.
	logged, err := os.ReadFile(proc.Log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logged), `"msg":"Listening on"`) || !strings.Contains(string(logged), `"collectors":["cpu"]`) {
		t.Errorf("log is not JSON with exporter-toolkit's lines:\n%s", logged)
	}
}

// TestCollectorSelection: --collector.disable-defaults keeps only the collectors named, a
// scrape's collect[] narrows them further and an unknown one is a 400, and the landing page
// links no profile that is not served.
func TestCollectorSelection(t *testing.T) {
	addr := startExporter(t, "--collector.disable-defaults", "--collector.cpu", "--collector.memory")
	body := get(t, "http://"+addr+"/metrics")
	for _, c := range []string{"cpu", "memory"} {
		if !strings.Contains(body, `rota_exporter_collector_success{collector="`+c+`"} 1`) {
			t.Errorf("/metrics lacks the %s collector", c)
		}
	}
	if strings.Contains(body, `collector="gpu"`) {
		t.Error("--collector.disable-defaults left the GPU collector on")
	}
	body = get(t, "http://"+addr+"/metrics?collect[]=memory")
	if !strings.Contains(body, "rota_node_memory_total_bytes ") || strings.Contains(body, "rota_node_cpu") {
		t.Errorf("collect[]=memory:\n%s", body)
	}
	for path, want := range map[string]int{"/metrics?collect[]=gpu": http.StatusBadRequest, "/debug/pprof/": http.StatusNotFound} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	if strings.Contains(get(t, "http://"+addr+"/"), "debug/pprof") {
		t.Error("the landing page links /debug/pprof, which is not served")
	}
}

// TestWebConfigTLSAndBasicAuth: --web.config.file turns on TLS and basic auth (exporter-toolkit).
func TestWebConfigTLSAndBasicAuth(t *testing.T) {
	dir := t.TempDir()
	pool := selfSignedCert(t, dir)
	// bcrypt of "rota-secret" (cost 4).
	cfg := fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  rota: %s\n",
		filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), "$2a$04$A49qDQzEBp.e2CkkK.7Sy..MJyEmaKh5beb95jzOw/ab6/lRCoR6W")
	webCfg := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(webCfg, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	testutil.Start(t, exporterBinary(t), "--web.listen-address="+addr, "--web.config.file="+webCfg)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	url := "https://" + addr + "/metrics"
	status := func(user, pass string) (int, string, error) { return testutil.GetWithAuth(client, url, user, pass) }
	testutil.Eventually(t, 30*time.Second, "TLS exporter up", func() error {
		_, _, err := status("", "")
		return err
	})
	cases := []struct {
		name, user, pass string
		want             int
	}{
		{name: "no credentials", want: http.StatusUnauthorized},
		{name: "wrong password", user: "rota", pass: "nope", want: http.StatusUnauthorized},
		{name: "right password", user: "rota", pass: "rota-secret", want: http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body, err := status(tc.user, tc.pass)
			if err != nil || code != tc.want {
				t.Fatalf("status %d (%v), want %d", code, err, tc.want)
			}
			if code == http.StatusOK && !strings.Contains(body, "rota_node_cpus") {
				t.Errorf("body lacks rota_node_cpus")
			}
		})
	}
	// Plain HTTP to the TLS listener gets a 400, never metrics.
	if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("metrics served over plain HTTP")
		}
	}
}

// selfSignedCert writes cert.pem and key.pem for 127.0.0.1 into dir and returns a pool trusting it.
func selfSignedCert(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	certPEM, keyPEM := testutil.SelfSigned(t)
	for name, b := range map[string][]byte{"cert.pem": certPEM, "key.pem": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return pool
}

// TestProductionBinaryLinksNoMock: the go-nvml mock and gpufake stay out of rota-exporter.
func TestProductionBinaryLinksNoMock(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := string(out)
	if !strings.Contains(deps, "github.com/NVIDIA/go-nvml/pkg/nvml\n") {
		t.Fatalf("go list output does not look like a dependency list:\n%s", deps)
	}
	for _, banned := range []string{"github.com/NVIDIA/go-nvml/pkg/nvml/mock", "github.com/rotahq/rota/exporter/gpufake"} {
		if strings.Contains(deps, banned) {
			t.Errorf("rota-exporter links %s", banned)
		}
	}
}

// TestConnectionsBounded: --web.max-connections bounds the connections open at once on every
// kind of listener the exporter has (a listen address, TLS over it, a socket systemd passes):
// one more waits, unanswered, until one closes. Over TLS (exporter-toolkit's web config) the
// limit holds below the handshake.
func TestConnectionsBounded(t *testing.T) {
	dir := t.TempDir()
	pool := selfSignedCert(t, dir)
	webCfg := filepath.Join(dir, "web.yml")
	tlsCfg := fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\n", filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	if err := os.WriteFile(webCfg, []byte(tlsCfg), 0o600); err != nil {
		t.Fatal(err)
	}
	const max = 2
	limit := fmt.Sprintf("--web.max-connections=%d", max)
	onAddress := func(args ...string) func(t *testing.T) string {
		return func(t *testing.T) string {
			addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
			p := testutil.Start(t, exporterBinary(t), append([]string{"--web.listen-address=" + addr, limit}, args...)...)
			waitListening(t, p, addr)
			return addr
		}
	}
	cases := []struct {
		name  string
		start func(t *testing.T) string
		wrap  func(net.Conn) net.Conn
	}{
		{"plain", onAddress(), func(c net.Conn) net.Conn { return c }},
		{"tls", onAddress("--web.config.file=" + webCfg), func(c net.Conn) net.Conn {
			return tls.Client(c, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
		}},
		{"systemd socket", func(t *testing.T) string {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			f, err := l.(*net.TCPListener).File()
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			withSocket(t, f, "--web.systemd-socket", limit) // it listens already: no wait
			return l.Addr().String()
		}, func(c net.Conn) net.Conn { return c }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := tc.start(t)
			dial := func() (net.Conn, error) {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					return nil, err
				}
				return tc.wrap(c), nil
			}
			testutil.CheckConnectionLimit(t, dial, "/", max)
			// The listener's gauges: its bound, and the scrape alone open once the others closed.
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
				DialContext: func(context.Context, string, string) (net.Conn, error) { return dial() },
			}}
			want := []string{
				fmt.Sprintf("rota_exporter_http_connections_max{listener=%q} %d\n", addr, max),
				fmt.Sprintf("rota_exporter_http_connections_open{listener=%q} 1\n", addr),
			}
			testutil.Eventually(t, 10*time.Second, "the listener's gauges", func() error {
				defer client.CloseIdleConnections()
				code, body, err := testutil.GetWithAuth(client, "http://"+addr+"/metrics", "", "")
				if err != nil || code != http.StatusOK {
					return fmt.Errorf("%d %v", code, err)
				}
				for _, w := range want {
					if !strings.Contains(body, w) {
						return fmt.Errorf("no %q", w)
					}
				}
				return nil
			})
		})
	}
}

// TestSystemdSocketNotAStream: a socket systemd passes that is not a stream socket (a datagram
// one) stops the exporter with exit 1 and a message saying so; exporter-toolkit served a nil
// listener there and panicked.
func TestSystemdSocketNotAStream(t *testing.T) {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := c.(*net.UDPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd, out := withSocket(t, f, "--web.systemd-socket")
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit: %v, want exit status 1; output:\n%s", err, out)
	}
	if want := "socket 1 of the 1 systemd passed is not a stream socket"; !strings.Contains(out.String(), want) {
		t.Errorf("output does not say %q:\n%s", want, out)
	}
}

// withSocket starts the exporter with f as the one socket systemd passes (fd 3, LISTEN_FDS=1,
// LISTEN_PID its own pid, which sh knows before it execs), and kills it at cleanup.
func withSocket(t *testing.T, f *os.File, args ...string) (*exec.Cmd, *testutil.SyncBuffer) {
	t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", `LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" "$@"`, exporterBinary(t)}, args...)...)
	cmd.ExtraFiles = []*os.File{f}
	out := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("--- rota-exporter %s ---\n%s", strings.Join(args, " "), out)
		}
	})
	return cmd, out
}

// waitListening waits until the exporter's log says it listens on addr.
func waitListening(t *testing.T, p *testutil.Process, addr string) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, "exporter listening on "+addr, func() error {
		b, err := os.ReadFile(p.Log)
		if err != nil || !strings.Contains(string(b), addr) {
			return fmt.Errorf("not yet listening (%v)", err)
		}
		return nil
	})
}
