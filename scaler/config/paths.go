package config

import (
	"path/filepath"
	"strings"

	promconfig "github.com/prometheus/common/config"

	"github.com/rotahq/rota/internal/cmdline"
)

// resolvePaths makes every relative path the file names (files rota reads, the programs it
// runs) relative to dir, the file's own folder, as Prometheus and Alertmanager read theirs:
// rota under systemd runs in /, where `api_token_file: api.token` beside /etc/rota/rota.yml
// would not be found, or another file read. The one path to state, store.path, is not
// resolved: see validateStore.
func (c *Config) resolvePaths(dir string) {
	c.Prometheus.HTTPClient.SetDirectory(dir)
	c.Store.Etcd.TLS.SetDirectory(dir)
	for _, p := range []*string{
		&c.Server.APITokenFile, &c.Server.WebhookTokenFile, &c.Store.Etcd.PasswordFile,
		&c.Jobs.Slurm.Conf, &c.Jobs.Slurm.BinDir, &c.Jobs.Kubernetes.Kubeconfig,
	} {
		*p = promconfig.JoinDir(dir, *p)
	}
	e := &c.Jobs.Exec
	for _, line := range []*string{&e.State, &e.Demand, &e.Drain, &e.Resume, &e.Watch, &e.Move} {
		*line = programIn(dir, *line)
	}
	for i := range c.Pools {
		for j := range c.Pools[i].Nodes {
			b := &c.Pools[i].Nodes[j].BMC
			b.PasswordFile = promconfig.JoinDir(dir, b.PasswordFile)
			b.CAFile = promconfig.JoinDir(dir, b.CAFile)
		}
	}
}

// programIn is the command line with its program taken from dir where it is a relative path
// (./drain, lib/drain), as kubectl takes a kubeconfig's exec plugin from the kubeconfig's
// folder; a bare name (squeue-state) is looked up in PATH, and a line that does not split is
// left for the exec adapter to report.
func programIn(dir, line string) string {
	words, err := cmdline.Split(line)
	if err != nil || !strings.Contains(words[0], "/") || filepath.IsAbs(words[0]) {
		return line
	}
	words[0] = filepath.Join(dir, words[0])
	return cmdline.Join(words)
}
