// Package etcdtest starts real etcd members for tests: the etcd binary `make tools` builds from
// go.mod's go.etcd.io/etcd/server/v3 into .tools/bin (missing: the test skips locally, fails
// in CI). Each member listens on loopback ports chosen at run time, keeps its data in the test's
// temporary folder and is stopped by pid at cleanup.
package etcdtest

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/testutil"
)

// Options tune a cluster; the zero value is plain HTTP.
type Options struct {
	// CertFile and KeyFile serve TLS to clients (https:// endpoints).
	CertFile, KeyFile string
	// ClientCertAuth refuses clients without a certificate signed by CertFile (which the
	// members' health checks present themselves).
	ClientCertAuth bool
	// MaxRequestBytes, if set, is each member's --max-request-bytes (etcd's default: 1.5 MiB).
	MaxRequestBytes int
}

// Cluster is a set of etcd members started together.
type Cluster struct {
	t       testing.TB
	bin     string
	opts    Options
	Members []*Member
	initial string
}

// Member is one etcd process.
type Member struct {
	Name      string
	ClientURL string
	peerURL   string
	dir       string
	proc      *testutil.Process
}

// Start runs a cluster of n members and waits until every one answers /health.
func Start(t testing.TB, n int, opts Options) *Cluster {
	t.Helper()
	c := &Cluster{t: t, bin: testutil.Tool(t, "etcd"), opts: opts}
	scheme := "http"
	if opts.CertFile != "" {
		scheme = "https"
	}
	var initial []string
	for i := range n {
		m := &Member{
			Name:      fmt.Sprintf("etcd%d", i),
			ClientURL: fmt.Sprintf("%s://127.0.0.1:%d", scheme, testutil.FreePort(t)),
			peerURL:   fmt.Sprintf("http://127.0.0.1:%d", testutil.FreePort(t)),
			dir:       filepath.Join(t.TempDir(), "data"),
		}
		c.Members = append(c.Members, m)
		initial = append(initial, m.Name+"="+m.peerURL)
	}
	c.initial = strings.Join(initial, ",")
	for _, m := range c.Members {
		c.start(m)
	}
	for _, m := range c.Members {
		c.waitHealthy(m)
	}
	return c
}

// Endpoints are the members' client URLs.
func (c *Cluster) Endpoints() []string {
	var out []string
	for _, m := range c.Members {
		out = append(out, m.ClientURL)
	}
	return out
}

func (c *Cluster) start(m *Member) {
	args := []string{
		"--name", m.Name, "--data-dir", m.dir, "--log-level", "error",
		"--listen-client-urls", m.ClientURL, "--advertise-client-urls", m.ClientURL,
		"--listen-peer-urls", m.peerURL, "--initial-advertise-peer-urls", m.peerURL,
		"--initial-cluster", c.initial, "--initial-cluster-state", "new", "--initial-cluster-token", "rota-test",
	}
	if c.opts.CertFile != "" {
		args = append(args, "--cert-file", c.opts.CertFile, "--key-file", c.opts.KeyFile)
	}
	if c.opts.ClientCertAuth {
		args = append(args, "--client-cert-auth", "--trusted-ca-file", c.opts.CertFile)
	}
	if c.opts.MaxRequestBytes > 0 {
		args = append(args, "--max-request-bytes", strconv.Itoa(c.opts.MaxRequestBytes))
	}
	m.proc = testutil.Start(c.t, c.bin, args...)
}

// waitHealthy polls the member's /health (a TLS member is asked without verifying it: the test
// only waits for it to serve).
func (c *Cluster) waitHealthy(m *Member) {
	c.t.Helper()
	tc := &tls.Config{InsecureSkipVerify: true}
	if c.opts.ClientCertAuth {
		cert, err := tls.LoadX509KeyPair(c.opts.CertFile, c.opts.KeyFile)
		if err != nil {
			c.t.Fatal(err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	testutil.WaitHTTPClient(c.t, hc, m.ClientURL+"/health", 60*time.Second)
}

// Kill stops the member with SIGKILL and waits until its process is gone.
func (c *Cluster) Kill(m *Member) {
	c.t.Helper()
	pid := m.proc.Cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	testutil.Eventually(c.t, 10*time.Second, "etcd "+m.Name+" gone", func() error {
		if syscall.Kill(pid, 0) == nil {
			return fmt.Errorf("pid %d still runs", pid)
		}
		return nil
	})
}

// Restart starts stopped members again on their data, and waits until each is healthy (a
// member alone has no quorum: they start together).
func (c *Cluster) Restart(ms ...*Member) {
	c.t.Helper()
	for _, m := range ms {
		c.start(m)
	}
	for _, m := range ms {
		c.waitHealthy(m)
	}
}

// Signal sends sig to the member's process (SIGSTOP freezes it, SIGCONT resumes it).
func (c *Cluster) Signal(m *Member, sig syscall.Signal) {
	c.t.Helper()
	if err := syscall.Kill(m.proc.Cmd.Process.Pid, sig); err != nil {
		c.t.Fatal(err)
	}
}
