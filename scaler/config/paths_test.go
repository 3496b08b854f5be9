package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rotahq/rota/internal/cmdline"
	"github.com/rotahq/rota/internal/secretfile"
)

// relative names every path rota reads, each relative: the file beside the config.
const relative = `
prometheus:
  url: http://127.0.0.1:9090
  http_client:
    authorization: {credentials_file: secrets/prom.token}
    tls_config: {ca_file: prom-ca.pem}
server:
  api_token_file: api.token
  webhook_token_file: secrets/webhook.token
store:
  backend: etcd
  etcd:
    endpoints: [https://127.0.0.1:2379]
    fleet: lab
    username: rota
    password_file: etcd.password
    tls_config: {ca_file: etcd-ca.pem, cert_file: etcd.pem, key_file: etcd-key.pem}
jobs:
  adapter: exec
  exec:
    state_command: ./state --site 'main site'
    demand_command: squeue-demand
    drain_command: /usr/local/lib/rota/drain
    resume_command: "'lib/my resume' --now"
  slurm: {conf: slurm.conf, bin_dir: bin}
  kubernetes: {kubeconfig: rota.kubeconfig}
pools:
  - name: gpu
    profile: {cpu_cores: 8}
    cost: {hourly: 1.5}
    nodes:
      - name: n1
        bmc: {protocol: redfish, host: 127.0.0.1, username: admin, password_file: bmc.password, ca_file: /etc/ssl/bmc-ca.pem}
      - name: n2
        bmc: {protocol: redfish, host: 127.0.0.2, username: admin, password_file: ../secrets/bmc.password, ca_file: bmc-ca.pem}
`

// A relative path in the file is read from the file's folder, as Prometheus reads its own: it
// was read from the working directory, so rota under systemd (in /) missed api.token beside
// /etc/rota/rota.yml, or read another file of that name.
func TestRelativePathsAreReadBesideTheFile(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "etc", "rota")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rota.yml"), []byte(relative), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "api.token"), []byte("beside the config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir() // the working directory holds an api.token of its own
	if err := os.WriteFile(filepath.Join(elsewhere, "api.token"), []byte("another file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(elsewhere)
	in := func(name string) string { return filepath.Join(dir, name) }
	file := filepath.Join(dir, "rota.yml")
	rel, err := filepath.Rel(elsewhere, file) // a relative --config.file
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{file, rel} {
		t.Run(path, func(t *testing.T) {
			c, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			hc, etcd, e := c.Prometheus.HTTPClient, c.Store.Etcd, c.Jobs.Exec
			for _, f := range []struct{ field, got, want string }{
				{"prometheus.http_client.authorization.credentials_file", hc.Authorization.CredentialsFile, in("secrets/prom.token")},
				{"prometheus.http_client.tls_config.ca_file", hc.TLSConfig.CAFile, in("prom-ca.pem")},
				{"server.api_token_file", c.Server.APITokenFile, in("api.token")},
				{"server.webhook_token_file", c.Server.WebhookTokenFile, in("secrets/webhook.token")},
				{"store.etcd.password_file", etcd.PasswordFile, in("etcd.password")},
				{"store.etcd.tls_config.ca_file", etcd.TLS.CAFile, in("etcd-ca.pem")},
				{"store.etcd.tls_config.cert_file", etcd.TLS.CertFile, in("etcd.pem")},
				{"store.etcd.tls_config.key_file", etcd.TLS.KeyFile, in("etcd-key.pem")},
				{"jobs.exec.state_command", e.State, cmdline.Join([]string{in("state"), "--site", "main site"})},
				{"jobs.exec.demand_command", e.Demand, "squeue-demand"}, // from PATH
				{"jobs.exec.drain_command", e.Drain, "/usr/local/lib/rota/drain"},
				{"jobs.exec.resume_command", e.Resume, cmdline.Join([]string{in("lib/my resume"), "--now"})},
				{"jobs.slurm.conf", c.Jobs.Slurm.Conf, in("slurm.conf")},
				{"jobs.slurm.bin_dir", c.Jobs.Slurm.BinDir, in("bin")},
				{"jobs.kubernetes.kubeconfig", c.Jobs.Kubernetes.Kubeconfig, in("rota.kubeconfig")},
				{"pools[0].nodes[0].bmc.password_file", c.Pools[0].Nodes[0].BMC.PasswordFile, in("bmc.password")},
				{"pools[0].nodes[0].bmc.ca_file", c.Pools[0].Nodes[0].BMC.CAFile, "/etc/ssl/bmc-ca.pem"},
				{"pools[0].nodes[1].bmc.password_file", c.Pools[0].Nodes[1].BMC.PasswordFile, filepath.Join(root, "etc", "secrets", "bmc.password")},
				{"pools[0].nodes[1].bmc.ca_file", c.Pools[0].Nodes[1].BMC.CAFile, in("bmc-ca.pem")},
			} {
				if f.got != f.want {
					t.Errorf("%s = %s, want %s", f.field, f.got, f.want)
				}
			}
			b, err := secretfile.Read("token file", c.Server.APITokenFile, 64)
			if err != nil || string(b) != "beside the config\n" {
				t.Errorf("server.api_token_file read %q (%v), want the file beside the config", b, err)
			}
		})
	}
}

// The store's path is state: resolved from the config's folder, a store path that was read
// from the working directory would open an empty store elsewhere, and rota forget what it
// drained and powered off. A relative one is refused, naming the field and where it pointed.
func TestRelativeStorePathIsRefused(t *testing.T) {
	dir, wd := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "rota.yml")
	if err := os.WriteFile(path, []byte(minimal+"store: {path: state/rota.db}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(wd)
	_, err := Load(path)
	if err == nil {
		t.Fatal("a relative store.path loaded")
	}
	for _, want := range []string{"store.path", `"state/rota.db" is relative`, filepath.Join(wd, "state", "rota.db"), "(line 11)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %s", err, want)
		}
	}
	if err := os.WriteFile(path, []byte(minimal+"store: {path: "+filepath.Join(dir, "rota.db")+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := Load(path); err != nil || c.Store.Path != filepath.Join(dir, "rota.db") {
		t.Errorf("an absolute store.path: %v", err)
	}
}
