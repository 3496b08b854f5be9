package cost

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The exported names of the families, and what they count. These names are a contract with
// the rules, the cookbook, the dashboard and rotactl report: keep them exactly.
var familyHelp = [numFamilies][2]string{
	famSpend:           {"rota_cost_spend_total", "Money spent, by pool, the department charged (by its jobs' use, idle time by accounting.chargeback.idle), region, currency, power (on; failed: marked failed and still on; off: rent paid while off, or standby draw; unknown: the power state could not be read or no pass observed it, booked as if on) and basis (hourly: rent; measured: a measured draw at the energy price, the BMC's reading or a GPU pool's base_watts plus its GPUs' readings; profile: the pool's watts)."},
	famSaving:          {"rota_cost_saving_total", "Money saved by servers that are off, against the same servers left on (less their measured standby draw), by pool, the servers' department, region and currency. Unknown power is never a saving."},
	famWouldSave:       {"rota_cost_would_save_total", "In dry run, what the servers rota would have taken down (drained or powered off) would have saved while it would have."},
	famNodeIdle:        {"rota_cost_node_idle_total", "Spend on a server's capacity no job held (on, failed or unknown power), by server."},
	famBorrowedSeconds: {"rota_cost_borrowed_server_seconds_total", "Server-seconds a department's jobs held on servers of another department (owner), as shares of the servers."},
	famBorrowed:        {"rota_cost_borrowed_total", "Spend on capacity a department's jobs held on servers of another department (owner), charged to the borrower."},
	famNodeEnergy:      {"rota_energy_node_joules_total", "Energy a server drew, by source: bmc (its BMC's power reading), gpu (its pool's base_watts plus its GPUs' readings) or profile (the pool's watts, also for unknown power)."},
	famAvoidedEnergy:   {"rota_energy_avoided_joules_total", "Energy not drawn by servers that are off (the pool's watts less the measured standby draw), by pool, department, region and carbon (known: in rota_carbon_avoided_grams_total; unknown: the region's carbon intensity was not known)."},
	famAvoidedCarbon:   {"rota_carbon_avoided_grams_total", "CO2-equivalent not emitted: avoided energy times the region's carbon intensity, where known."},
}

// Collector exports the books that ledger returns (the latest persisted ones).
type Collector struct {
	ledger func() *Ledger
	descs  [numFamilies]*prometheus.Desc
}

// NewCollector builds the collector; ledger must be safe to call from the scrape's goroutine.
func NewCollector(ledger func() *Ledger) *Collector {
	c := &Collector{ledger: ledger}
	for f := range numFamilies {
		c.descs[f] = prometheus.NewDesc(familyHelp[f][0], familyHelp[f][1], familyLabels[f], nil)
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	l := c.ledger()
	if l == nil {
		return
	}
	for k, v := range l.totals {
		ch <- prometheus.MustNewConstMetric(c.descs[k.f], prometheus.CounterValue, v, k.labels[:len(familyLabels[k.f])]...)
	}
}
