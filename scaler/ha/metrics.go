package ha

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// These names, and the label fleet, are a contract with the alert rules (RotaNoLeader,
// RotaLeaderFlapping, RotaConfigDiffers: each fleet scraped by one Prometheus alerts apart).
type metrics struct {
	leader        prometheus.Gauge
	terms         prometheus.Counter
	configDiffers prometheus.Gauge
}

// newMetrics labels the series with fleet (store.etcd.fleet); a rota on bbolt has none ("",
// which Prometheus leaves out).
func newMetrics(reg prometheus.Registerer, fleet string) (metrics, error) {
	var labels prometheus.Labels
	if fleet != "" {
		labels = prometheus.Labels{"fleet": fleet}
	}
	m := metrics{
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rota_ha_leader", ConstLabels: labels, Help: "1 while this rota leads (plans and acts), 0 while it follows; a single rota on a bbolt file always leads.",
		}),
		terms: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rota_ha_terms_total", ConstLabels: labels, Help: "Terms this rota began as leader.",
		}),
		configDiffers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rota_ha_leader_config_differs", ConstLabels: labels, Help: "1 while the leader decides by another config than this follower's (policy, classes, pools, accounting or BMC limits): a failover would change what the fleet does.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.leader, m.terms, m.configDiffers} {
			if err := reg.Register(c); err != nil {
				return metrics{}, fmt.Errorf("registering ha metrics: %w", err)
			}
		}
	}
	return m, nil
}
