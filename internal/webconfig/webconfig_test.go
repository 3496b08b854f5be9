package webconfig

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/rotahq/rota/internal/testutil"
)

func hash(t *testing.T, pass string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

// The users guard requests by basic auth; SIGHUP's ReloadUsers takes a changed file and keeps
// the users in force when the file no longer loads.
func TestUsersAndReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "web.yml")
	write := func(content string) {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("basic_auth_users:\n  alice: " + hash(t, "a-pass") + "\n")
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if tls, err := f.TLS(); tls != nil || err != nil {
		t.Errorf("TLS() = %v, %v without tls_server_config", tls, err)
	}
	ok := func(user, pass string) bool {
		r := httptest.NewRequest("GET", "/metrics", nil)
		if user != "" {
			r.SetBasicAuth(user, pass)
		}
		return f.Authorized(r)
	}
	check := func(when string, want map[[2]string]bool) {
		t.Helper()
		for cred, w := range want {
			for range 2 { // the second answer comes from memory
				if got := ok(cred[0], cred[1]); got != w {
					t.Errorf("%s: %s/%s authorized %v, want %v", when, cred[0], cred[1], got, w)
				}
			}
		}
	}
	check("loaded", map[[2]string]bool{{"alice", "a-pass"}: true, {"alice", "nope"}: false, {"bob", "b-pass"}: false, {"", ""}: false})
	write("basic_auth_users:\n  bob: " + hash(t, "b-pass") + "\n")
	if err := f.ReloadUsers(); err != nil {
		t.Fatal(err)
	}
	check("reloaded", map[[2]string]bool{{"alice", "a-pass"}: false, {"bob", "b-pass"}: true})
	write("basic_auth_users:\n  carol: not-a-hash\n")
	if err := f.ReloadUsers(); err == nil {
		t.Error("a broken file reloaded")
	}
	check("after a failed reload", map[[2]string]bool{{"bob", "b-pass"}: true})
	certPEM, keyPEM := testutil.SelfSigned(t)
	cert, key := filepath.Join(filepath.Dir(path), "cert.pem"), filepath.Join(filepath.Dir(path), "key.pem")
	for path, b := range map[string][]byte{cert: certPEM, key: keyPEM} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// What Load refuses, and what the listener only takes at start, are refused too (they were
	// "reloaded", the users taken and the rest silently left unapplied): found by SIGHUP after
	// adding rate_limit to a running rota's file.
	for name, extra := range map[string]string{
		"rate_limit": "rate_limit: {interval: 1s, burst: 1}\n",
		"headers":    "http_server_config:\n  headers: {X-Frame-Options: deny}\n",
		"http2":      "http_server_config:\n  http2: false\n",
		"tls":        "tls_server_config: {cert_file: " + cert + ", key_file: " + key + "}\n",
	} {
		write("basic_auth_users:\n  dave: " + hash(t, "d-pass") + "\n" + extra)
		if err := f.ReloadUsers(); err == nil {
			t.Errorf("a file with %s reloaded", name)
		}
		check("after "+name+" refused", map[[2]string]bool{{"bob", "b-pass"}: true, {"dave", "d-pass"}: false})
	}

	var none *File
	if !none.Authorized(httptest.NewRequest("GET", "/metrics", nil)) || !none.HTTP2() {
		t.Error("no web config should leave /metrics open")
	}
}
