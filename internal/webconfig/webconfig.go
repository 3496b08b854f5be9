// Package webconfig reads an exporter-toolkit web configuration file (the --web.config.file of
// Prometheus and its exporters, rota-exporter among them) for rota's own listener, which serves
// endpoints with credentials of their own (bearer tokens for the operator API and the webhook)
// beside /metrics. exporter-toolkit's server applies basic auth to every path, and one
// Authorization header cannot carry both a basic-auth user and a bearer token, so rota takes the
// file's parts itself: tls_server_config (TLS, client certificates) for the whole listener,
// basic_auth_users for /metrics, and http_server_config.http2. The rest (rate_limit,
// http_server_config.headers) is refused rather than silently ignored.
//
// It also holds what bounds rota's and rota-exporter's listeners alike (listener.go): the
// --web.max-connections flag and its limit on the listener, and the servers' timeouts and header
// size.
package webconfig

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/crypto/bcrypt"
	"gopkg.in/yaml.v3"
)

// File is a loaded web configuration file. Safe for concurrent use. A nil *File is no file:
// plain HTTP, /metrics open.
type File struct {
	path  string
	http2 bool
	tls   bool

	mu    sync.Mutex
	users map[string]string // user -> bcrypt hash; empty: /metrics is open
	// known remembers the outcome of credentials already checked: bcrypt is slow on purpose
	// (tens of ms), and Prometheus sends the same pair at every scrape.
	known map[[sha256.Size]byte]bool
	// bcryptMu lets one bcrypt comparison run at a time, so a flood of wrong passwords costs
	// one CPU, not all of them (as exporter-toolkit does).
	bcryptMu sync.Mutex
}

// maxKnown bounds the remembered credentials; the memory is forgotten when full.
const maxKnown = 256

// fakeHash is compared against for an unknown user, so a wrong user costs the same time as a
// wrong password (no user enumeration by timing). bcrypt of "fakepassword", as exporter-toolkit.
const fakeHash = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"

// Load checks the file as exporter-toolkit does (web.Validate: known keys, certificate and key
// readable, bcrypt hashes well formed) and refuses the keys rota's listener does not apply.
func Load(path string) (*File, error) {
	if err := web.Validate(path); err != nil {
		return nil, fmt.Errorf("web config %s: %w", path, err)
	}
	c, err := readApplied(path)
	if err != nil {
		return nil, err
	}
	f := &File{path: path, http2: c.HTTPConfig.HTTP2, tls: c.TLSConfig.IsEnabled()}
	f.setUsers(c)
	return f, nil
}

// readApplied is read, refusing the keys rota's listener does not apply.
func readApplied(path string) (*web.Config, error) {
	c, err := read(path)
	if err != nil {
		return nil, err
	}
	switch {
	case c.RateLimiterConfig.Interval != 0:
		return nil, fmt.Errorf("web config %s: rate_limit is not supported by rota's listener", path)
	case len(c.HTTPConfig.Header) > 0:
		return nil, fmt.Errorf("web config %s: http_server_config.headers is not supported by rota's listener", path)
	}
	return c, nil
}

// read decodes the file over exporter-toolkit's defaults (TLS 1.2 to 1.3, HTTP/2 on), with
// relative paths taken from the file's folder.
func read(path string) (*web.Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("web config: %w", err)
	}
	c := &web.Config{
		TLSConfig:  web.TLSConfig{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13},
		HTTPConfig: web.HTTPConfig{HTTP2: true},
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && len(bytes.TrimSpace(b)) > 0 {
		return nil, fmt.Errorf("web config %s: %w", path, err)
	}
	c.TLSConfig.SetDirectory(filepath.Dir(path))
	return c, nil
}

func (f *File) setUsers(c *web.Config) {
	users := map[string]string{}
	for u, h := range c.Users {
		users[u] = string(h)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.users, f.known = users, map[[sha256.Size]byte]bool{}
}

// ReloadUsers reads basic_auth_users again (rota does on SIGHUP); a file that no longer loads,
// that Load would refuse (rate_limit, headers), or that turns TLS or HTTP/2 on or off (the
// listener keeps what it started with until a restart) leaves the users in force and says why.
func (f *File) ReloadUsers() error {
	if err := web.Validate(f.path); err != nil {
		return fmt.Errorf("web config %s: %w", f.path, err)
	}
	c, err := readApplied(f.path)
	if err != nil {
		return err
	}
	switch {
	case c.TLSConfig.IsEnabled() != f.tls:
		return fmt.Errorf("web config %s: tls_server_config is %s now: the listener changes only at a restart", f.path, onOff(c.TLSConfig.IsEnabled()))
	case c.HTTPConfig.HTTP2 != f.http2:
		return fmt.Errorf("web config %s: http_server_config.http2 is %s now: the listener changes only at a restart", f.path, onOff(c.HTTPConfig.HTTP2))
	}
	f.setUsers(c)
	return nil
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// TLS returns the listener's TLS configuration, or nil when the file sets none. The file is read
// again at each handshake, so a renewed certificate is served without a restart.
func (f *File) TLS() (*tls.Config, error) {
	if f == nil || !f.tls {
		return nil, nil
	}
	protos := []string{"http/1.1"}
	if f.http2 {
		protos = []string{"h2", "http/1.1"}
	}
	load := func() (*tls.Config, error) {
		c, err := read(f.path)
		if err != nil {
			return nil, err
		}
		t, err := web.ConfigToTLSConfig(&c.TLSConfig)
		if err != nil {
			return nil, fmt.Errorf("web config %s: %w", f.path, err)
		}
		t.NextProtos = protos
		return t, nil
	}
	t, err := load()
	if err != nil {
		return nil, err
	}
	t.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) { return load() }
	return t, nil
}

// HTTP2 says whether the file allows HTTP/2 (over TLS).
func (f *File) HTTP2() bool { return f == nil || f.http2 }

// Authorized says whether r carries the basic-auth user and password of one of
// basic_auth_users; with none named, every request is.
func (f *File) Authorized(r *http.Request) bool {
	if f == nil {
		return true
	}
	f.mu.Lock()
	users := f.users
	f.mu.Unlock()
	if len(users) == 0 {
		return true
	}
	user, pass, ok := r.BasicAuth()
	if !ok {
		return false
	}
	hash, known := users[user]
	if !known {
		hash = fakeHash
	}
	key := sha256.Sum256([]byte(user + "\x00" + hash + "\x00" + pass))
	f.mu.Lock()
	good, seen := f.known[key]
	f.mu.Unlock()
	if seen {
		return good
	}
	f.bcryptMu.Lock()
	err := bcrypt.CompareHashAndPassword([]byte(hash), []byte(pass))
	f.bcryptMu.Unlock()
	good = known && err == nil
	f.mu.Lock()
	if len(f.known) >= maxKnown {
		f.known = map[[sha256.Size]byte]bool{}
	}
	f.known[key] = good
	f.mu.Unlock()
	return good
}
