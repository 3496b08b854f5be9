package testutil

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/freeport"
)

// InCI reports whether the tests run under CI (CI=true), where a missing prerequisite fails
// instead of skipping.
func InCI() bool {
	v, _ := strconv.ParseBool(os.Getenv("CI"))
	return v
}

// Missing skips the test locally, naming how to install what is missing, and fails it in CI.
func Missing(t testing.TB, what, install string) {
	t.Helper()
	msg := fmt.Sprintf("%s not found; install with: %s", what, install)
	if InCI() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// RepoRoot returns the repository root (the folder holding go.mod), found from the working
// directory of the test.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's folder")
		}
		dir = parent
	}
}

// Testdata returns the file at path (joined from parts) below the test package's testdata
// folder, failing the test if it cannot be read.
func Testdata(t testing.TB, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"testdata"}, parts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Tool returns the path of a binary that `make tools` provides: first .tools/bin at the
// repository root, then $PATH. Missing: skip locally, fail in CI.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(RepoRoot(t), ".tools", "bin", name)
	if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	Missing(t, name, "make tools")
	return ""
}

// FreePort returns a TCP port on 127.0.0.1 that was free when asked (see internal/freeport).
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := freeport.Pick("tcp")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// FreeUDPPort returns a UDP port on 127.0.0.1 that was free when asked (IPMI over LAN is UDP).
func FreeUDPPort(t testing.TB) int {
	t.Helper()
	p, err := freeport.Pick("udp")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Eventually polls cond every interval until it returns nil or timeout passes, then fails the
// test with the last error.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for {
		if err = cond(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %s: %v", what, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitHTTP polls url until it answers 200.
func WaitHTTP(t testing.TB, url string, timeout time.Duration) {
	t.Helper()
	WaitHTTPClient(t, http.DefaultClient, url, timeout)
}

// WaitHTTPClient is WaitHTTP through client (a TLS server's test client).
func WaitHTTPClient(t testing.TB, client *http.Client, url string, timeout time.Duration) {
	t.Helper()
	Eventually(t, timeout, "GET "+url, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return GetOK(ctx, client, url)
	})
}

// GetOK fetches url with client and wants 200.
func GetOK(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// Process is a command started by Start; its output goes to a log file in the test's
// temporary folder, shown when the test fails.
type Process struct {
	Cmd *exec.Cmd
	Log string
}

// Start runs name with args in its own process group and stops the group by pid at cleanup
// (SIGTERM, then SIGKILL after five seconds). The log is printed if the test failed.
func Start(t testing.TB, name string, args ...string) *Process {
	t.Helper()
	return StartEnv(t, nil, name, args...)
}

// StartEnv is Start with extra environment variables (KEY=VALUE) added to the test's own.
func StartEnv(t testing.TB, env []string, name string, args ...string) *Process {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), filepath.Base(name)+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	p := &Process{Cmd: cmd, Log: logPath}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		logFile.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("--- %s %s log ---\n%s", name, strings.Join(args, " "), tail(b, 4000))
			}
		}
	})
	return p
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// CheckHeaderLimit GETs url through client with 1 KiB of headers, answered 200, and with 100
// KiB, refused with 431 before any handler runs (every listener bounds headers at
// webconfig.MaxHeaderBytes); authorization, if not empty, is sent as the Authorization header.
func CheckHeaderLimit(t testing.TB, client *http.Client, url, authorization string) {
	t.Helper()
	for _, tc := range []struct {
		pad  int
		want int
	}{{1 << 10, http.StatusOK}, {100 << 10, http.StatusRequestHeaderFieldsTooLarge}} {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		req.Header.Set("X-Pad", strings.Repeat("a", tc.pad))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%d bytes of headers: %d, want %d", tc.pad, resp.StatusCode, tc.want)
		}
	}
}

// GetWithAuth fetches url through client, with HTTP basic auth when user is set, and returns
// the status and body (for exporters behind a web config with TLS and basic auth).
func GetWithAuth(client *http.Client, url, user, pass string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers (a process's output, loggers) and
// the test's reads.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
