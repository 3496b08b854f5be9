package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rotahq/rota/alerts"
	"github.com/rotahq/rota/internal/atomicfile"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/inventory"
)

// URLs of the lab's services.
func (l *Lab) PrometheusURL() string { return l.Config.Prometheus.URL }
func (l *Lab) RotaURL() string       { return "http://" + l.Config.Server.ListenAddress }
func (l *Lab) AlertmanagerURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d", l.port("alertmanager"))
}

// APITokenFile is the file holding the token rotactl needs to talk to the lab's rota.
func (l *Lab) APITokenFile() string { return l.Config.Server.APITokenFile }

func (l *Lab) port(name string) int {
	p, _ := l.Ports.TCP(name) // ports only fail to be chosen at start, which Start reports
	return p
}

// fill replaces each key of repl, which must occur exactly once in s.
func fill(s string, repl map[string]string) (string, error) {
	for old, with := range repl {
		if n := strings.Count(s, old); n != 1 {
			return "", fmt.Errorf("%q occurs %d times, want once", old, n)
		}
		s = strings.Replace(s, old, with, 1)
	}
	return s, nil
}

// startPrometheus installs deploy/prometheus as the lab's Prometheus folder: prometheus.yml with
// the lab's scrape interval (rota's prometheus.scrape_interval) and addresses filled in, the
// rules generated from the lab config, and the inventory's targets, then starts it.
func (l *Lab) startPrometheus(ctx context.Context) error {
	d := filepath.Join(l.Dir, "prometheus")
	b, err := os.ReadFile(filepath.Join(l.opts.Root, "deploy", "prometheus", "prometheus.yml"))
	if err != nil {
		return err
	}
	interval := l.Config.Prometheus.ScrapeInterval.String()
	conf, err := fill(string(b), map[string]string{
		"scrape_interval: 15s":                             "scrape_interval: " + interval,
		"scrape_timeout: 10s":                              "scrape_timeout: " + interval,
		"evaluation_interval: 15s":                         "evaluation_interval: " + interval,
		"refresh_interval: 1m":                             "refresh_interval: " + interval,
		`targets: ["127.0.0.1:9093"]`:                      fmt.Sprintf(`targets: ["127.0.0.1:%d"]`, l.port("alertmanager")),
		`targets: ["` + config.DefaultListenAddress + `"]`: `targets: ["` + l.Config.Server.ListenAddress + `"]`,
	})
	if err != nil {
		return fmt.Errorf("deploy/prometheus/prometheus.yml: %w", err)
	}
	if err := os.WriteFile(filepath.Join(d, "prometheus.yml"), []byte(conf), 0o644); err != nil {
		return err
	}
	rules, err := alerts.Generate(l.Config, l.ConfigFile)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(d, "rules", "rota-rules.yml"), rules, 0o644); err != nil {
		return err
	}
	groups, err := inventory.Targets(l.Config)
	if err != nil {
		return err
	}
	targets, err := inventory.Marshal(groups)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(d, "targets", "lab.json"), targets); err != nil {
		return err
	}
	promURL := l.PrometheusURL()
	if err := l.run("prometheus", nil, l.tools.prometheus, "--config.file="+filepath.Join(d, "prometheus.yml"),
		"--web.listen-address="+strings.TrimPrefix(promURL, "http://"), "--storage.tsdb.path="+filepath.Join(d, "data"),
		"--web.enable-lifecycle"); err != nil {
		return err
	}
	return waitFor(ctx, 90*time.Second, "prometheus ready", func() error { return getOK(ctx, promURL+"/-/ready") })
}

// operatorsConfig is the operators' receiver config in deploy/alertmanager, to be filled. The
// lab has no people to tell: it removes it, leaving that receiver without a config.
const operatorsConfig = "    webhook_configs:\n      - url: FILL-IN-the-operators-webhook-url\n        send_resolved: true\n"

// alertmanagerConfig is deploy/alertmanager/alertmanager.yml with rota's webhook URL and token
// file filled in and the operators' receiver left empty.
func alertmanagerConfig(root, rotaURL, tokenFile string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "deploy", "alertmanager", "alertmanager.yml"))
	if err != nil {
		return "", err
	}
	conf, err := fill(string(b), map[string]string{
		"http://" + config.DefaultListenAddress + "/api/v1/alerts": rotaURL + "/api/v1/alerts",
		"/etc/alertmanager/rota-webhook.token":                     tokenFile,
		operatorsConfig:                                            "",
	})
	if err != nil {
		return "", fmt.Errorf("deploy/alertmanager/alertmanager.yml: %w", err)
	}
	return conf, nil
}

// startAlertmanager writes the lab's Alertmanager config (alertmanagerConfig) and starts
// Alertmanager with gossip off.
func (l *Lab) startAlertmanager(ctx context.Context) error {
	d := filepath.Join(l.Dir, "alertmanager")
	conf, err := alertmanagerConfig(l.opts.Root, l.RotaURL(), l.Config.Server.WebhookTokenFile)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(d, "alertmanager.yml"), []byte(conf), 0o644); err != nil {
		return err
	}
	if err := l.run("alertmanager", nil, l.tools.alertmanager, "--config.file="+filepath.Join(d, "alertmanager.yml"),
		"--web.listen-address="+strings.TrimPrefix(l.AlertmanagerURL(), "http://"), "--storage.path="+filepath.Join(d, "data"),
		"--cluster.listen-address="); err != nil {
		return err
	}
	return waitFor(ctx, 60*time.Second, "alertmanager ready", func() error { return getOK(ctx, l.AlertmanagerURL()+"/-/ready") })
}

// startRota starts rota with the lab config and waits until it has finished its first pass.
func (l *Lab) startRota(ctx context.Context) error {
	if err := l.run("rota", nil, l.tools.rota, "--config.file="+l.ConfigFile); err != nil {
		return err
	}
	return l.WaitRota(ctx)
}

// WaitRota waits until rota answers ready (its first pass, repair included, is done).
func (l *Lab) WaitRota(ctx context.Context) error {
	return waitFor(ctx, 90*time.Second, "rota ready", func() error { return getOK(ctx, l.RotaURL()+"/-/ready") })
}
