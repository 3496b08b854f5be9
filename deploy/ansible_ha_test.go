package deploy

import (
	"bytes"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/etcdtest"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/config"
)

// haSite writes a site's rota.yml as an operator keeps it on the controller: one pool of one
// server whose BMC does not answer (rota starts, leads and fails that server's reads), no job
// manager, Prometheus on a closed port, the API on port.
func haSite(t *testing.T, dir string, port int) string {
	t.Helper()
	token := filepath.Join(dir, "api.token")
	if err := os.WriteFile(token, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	site := fmt.Sprintf(`prometheus: {url: "http://127.0.0.1:%d", timeout: 1s}
server:
  listen_address: 127.0.0.1:%d
  api_token_file: %s
  webhook_auth_disabled: true
store:
  path: %s
jobs: {adapter: none}
policy: {evaluation_interval: 1s}
pools:
  - name: cpu
    profile: {cpu_cores: 8}
    boot_timeout: 1m
    nodes:
      - name: cpu01
        bmc: {protocol: redfish, host: 127.0.0.1, port: %d, username: rota, password_env: ROTA_TEST_BMC_PASSWORD, insecure_skip_verify: true}
`, testutil.FreePort(t), port, token, filepath.Join(dir, "rota.db"), testutil.FreePort(t))
	path := filepath.Join(dir, "site-rota.yml")
	if err := os.WriteFile(path, []byte(site), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// newHARun is a run of the rota_ha role (this host in the group rota_scalers) on the site
// config of haSite, its files in the scratch folder.
func newHARun(t *testing.T, port int) *roleRun {
	r := newGroupRun(t, "rota_scalers")
	r.base = map[string]any{
		"rota_ha_config_src":     haSite(t, r.dir, port),
		"rota_ha_config_file":    r.path("etc/rota.yml"),
		"rota_ha_etc_dir":        r.path("etc"),
		"rota_ha_group":          "root",
		"rota_ha_unit_dir":       r.path("units"),
		"rota_ha_rotactl":        filepath.Join(binaries(t), "rotactl"),
		"rota_ha_manage_service": false,
	}
	return r
}

// TestAnsibleHARole: the rota_ha role writes this host's config (the site's, with store.etcd
// from the variables and store.path kept), the etcd CA and password files the config names, and
// the systemd drop-in; a second run changes nothing. The real rota, started on what was
// written, reaches a real etcd over TLS and leads. A client certificate and a user are written
// and named, and removed once their variables are dropped.
func TestAnsibleHARole(t *testing.T) {
	t.Parallel()
	port := testutil.FreePort(t)
	r := newHARun(t, port)
	certPEM, keyPEM := testutil.SelfSigned(t)
	certFile, keyFile := r.path("etcd-server.pem"), r.path("etcd-server-key.pem")
	for f, b := range map[string][]byte{certFile: certPEM, keyFile: keyPEM} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	etcd := etcdtest.Start(t, 1, etcdtest.Options{CertFile: certFile, KeyFile: keyFile})

	vars := map[string]any{
		"rota_ha_etcd_endpoints": etcd.Endpoints(),
		"rota_ha_etcd_fleet":     "site-test",
		"rota_ha_etcd_name":      "rota-a",
		"rota_ha_advertise_url":  fmt.Sprintf("http://127.0.0.1:%d", port),
		"rota_ha_lease_ttl":      "5s",
		"rota_ha_etcd_ca":        string(certPEM),
	}
	r.runTwice(vars)
	r.checkModes([]fileMode{
		{"etc", fs.ModeDir | 0o750}, {"etc/rota.yml", 0o640}, {"etc/etcd-ca.pem", 0o640},
		{"units/rota.service.d/etcd.conf", 0o644},
	})
	for _, gone := range []string{"etc/etcd.pem", "etc/etcd-key.pem", "etc/etcd.password"} {
		if _, err := os.Stat(r.path(gone)); !os.IsNotExist(err) {
			t.Errorf("%s written without its variable (%v)", gone, err)
		}
	}
	dropIn, err1 := os.ReadFile(r.path("units/rota.service.d/etcd.conf"))
	want, err2 := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "deploy", "systemd", "rota-etcd.conf"))
	if err1 != nil || err2 != nil || !bytes.Equal(dropIn, want) {
		t.Errorf("the drop-in is not deploy/systemd/rota-etcd.conf (%v, %v)", err1, err2)
	}

	cfg, err := config.Load(r.path("etc/rota.yml"))
	if err != nil {
		t.Fatalf("the written config: %v", err)
	}
	e := cfg.Store.Etcd
	if cfg.Store.Backend != config.BackendEtcd || cfg.Store.Path != r.path("rota.db") ||
		strings.Join(e.Endpoints, ",") != strings.Join(etcd.Endpoints(), ",") || e.Fleet != "site-test" ||
		e.Name != "rota-a" || e.TLS.CAFile != r.path("etc/etcd-ca.pem") || e.TLS.CertFile != "" ||
		e.Username != "" || time.Duration(e.LeaseTTL) != 5*time.Second || len(cfg.Pools) != 1 {
		t.Errorf("the written store section: %+v (backend %s, path %s)", e, cfg.Store.Backend, cfg.Store.Path)
	}

	// rota on what the role wrote: etcd over TLS with the CA file, and this rota leads.
	rotaBin := filepath.Join(binaries(t), "rota")
	testutil.StartEnv(t, []string{"ROTA_TEST_BMC_PASSWORD=pw"}, rotaBin, "--config.file", r.path("etc/rota.yml"))
	testutil.Eventually(t, 30*time.Second, "rota_ha_leader{fleet=\"site-test\"} 1", func() error {
		code, body, err := testutil.GetWithAuth(http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/metrics", port), "", "")
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("status %d: %v", code, err)
		}
		if !strings.Contains(body, "\nrota_ha_leader{fleet=\"site-test\"} 1\n") {
			return fmt.Errorf("not leading yet")
		}
		return nil
	})

	// A client certificate and etcd's authentication: their files are written and named; both
	// dropped again, the files go.
	withAuth := map[string]any{"rota_ha_etcd_cert": string(certPEM), "rota_ha_etcd_key": string(keyPEM),
		"rota_ha_etcd_username": "rota", "rota_ha_etcd_password": "pa55"}
	for k, v := range vars {
		withAuth[k] = v
	}
	r.runTwice(withAuth)
	r.checkModes([]fileMode{{"etc/etcd.pem", 0o640}, {"etc/etcd-key.pem", 0o640}, {"etc/etcd.password", 0o640}})
	if cfg, err := config.Load(r.path("etc/rota.yml")); err != nil {
		t.Error(err)
	} else if e := cfg.Store.Etcd; e.TLS.CertFile != r.path("etc/etcd.pem") || e.TLS.KeyFile != r.path("etc/etcd-key.pem") ||
		e.Username != "rota" || e.PasswordFile != r.path("etc/etcd.password") {
		t.Errorf("with a client certificate and a user, the store section: %+v", e)
	}
	if b, err := os.ReadFile(r.path("etc/etcd.password")); err != nil || string(b) != "pa55" {
		t.Errorf("the password file holds %q (%v)", b, err)
	}
	if n := r.run(vars); n == 0 {
		t.Error("dropping the certificate and the user changed nothing")
	}
	for _, gone := range []string{"etc/etcd.pem", "etc/etcd-key.pem", "etc/etcd.password"} {
		if _, err := os.Stat(r.path(gone)); !os.IsNotExist(err) {
			t.Errorf("%s left behind (%v)", gone, err)
		}
	}
}

// TestAnsibleHARoleRefusesBadVariables: bad variables (no endpoints, a fleet name etcd's prefix
// cannot hold, a lease rota refuses, ...) fail the play naming the variable or the config field
// (rotactl validate refuses what the role would write), and leave the config in place as it was.
// Apart from TestAnsibleHARole, so that scripts/mutants.txt's mutant of the role's validation is
// run against one refused play, not every play of the role.
func TestAnsibleHARoleRefusesBadVariables(t *testing.T) {
	t.Parallel()
	port := testutil.FreePort(t)
	r := newHARun(t, port)
	certPEM, _ := testutil.SelfSigned(t)
	endpoints := []string{"https://127.0.0.1:2379"} // never reached: validation reads the config alone
	vars := map[string]any{
		"rota_ha_etcd_endpoints": endpoints,
		"rota_ha_etcd_fleet":     "site-test",
		"rota_ha_etcd_name":      "rota-a",
		"rota_ha_advertise_url":  fmt.Sprintf("http://127.0.0.1:%d", port),
		"rota_ha_lease_ttl":      "5s",
		"rota_ha_etcd_ca":        string(certPEM),
	}
	if n := r.run(vars); n == 0 {
		t.Fatal("the first run changed nothing")
	}
	good, err := os.ReadFile(r.path("etc/rota.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		vars map[string]any
		says string
	}{
		{"no endpoints", map[string]any{"rota_ha_etcd_endpoints": []string{}}, "rota_ha_etcd_endpoints"},
		{"endpoints a string", map[string]any{"rota_ha_etcd_endpoints": "https://etcd1:2379"}, "rota_ha_etcd_endpoints"},
		{"a certificate without its key", map[string]any{"rota_ha_etcd_cert": string(certPEM)}, "rota_ha_etcd_key"},
		{"a bad fleet name", map[string]any{"rota_ha_etcd_fleet": "site a/b"}, "store.etcd.fleet"},
		{"a lease too short", map[string]any{"rota_ha_lease_ttl": "500ms"}, "store.etcd.lease_ttl"},
		{"an http endpoint beside https", map[string]any{"rota_ha_etcd_endpoints": append(slices.Clone(endpoints), "http://127.0.0.1:2379")}, "store.etcd.endpoints"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := map[string]any{}
			for k, v := range vars {
				bad[k] = v
			}
			for k, v := range tc.vars {
				bad[k] = v
			}
			out, err := r.play(nil, bad)
			if err == nil {
				t.Fatalf("the play passed:\n%s", out)
			}
			if !strings.Contains(out, tc.says) {
				t.Errorf("the failure does not name %s:\n%s", tc.says, out)
			}
			if now, err := os.ReadFile(r.path("etc/rota.yml")); err != nil || !bytes.Equal(now, good) {
				t.Errorf("the config in place changed (%v)", err)
			}
		})
	}
}
