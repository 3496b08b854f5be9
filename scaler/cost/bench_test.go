package cost

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/config"
)

// bigFleet is n servers in two pools (owned CPU servers on a tariff, rented GPU servers),
// BMC readings on, ten departments.
func bigFleet(b *testing.B, n int) (*config.Config, Pass) {
	b.Helper()
	var y strings.Builder
	y.WriteString(`server: {webhook_auth_disabled: true}
bmc: {power_reading_interval: 5m}
accounting:
  tariffs:
    - {name: site, currency: EUR, windows: [{start: "08:00", end: "20:00", price_per_kwh: 0.3}, {start: "20:00", end: "08:00", price_per_kwh: 0.1}]}
  carbon: [{region: eu, grams_per_kwh: 300}]
pools:
`)
	for p, pool := range []string{"cpu", "gpu"} {
		cost := "{watts: 450, tariff: site, currency: EUR}"
		if pool == "gpu" {
			cost = "{hourly: 24, watts: 6500, currency: EUR}"
		}
		fmt.Fprintf(&y, "  - name: %s\n    profile: {cpu_cores: 64, gpus: %d}\n    cost: %s\n    labels: {region: eu, department: d%d}\n    nodes:\n", pool, p*8, cost, p)
		for i := range n / 2 {
			fmt.Fprintf(&y, "      - {name: %s%05d, bmc: {protocol: ipmi, host: h, username: u, password_env: P}}\n", pool, i)
		}
	}
	cfg, err := config.Parse([]byte(y.String()))
	if err != nil {
		b.Fatal(err)
	}
	p := Pass{At: time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC), Carbon: map[string]float64{"eu": 300}}
	for i, pl := range cfg.Pools {
		for j, nd := range pl.Nodes {
			o := Observation{Node: nd.Name, Pool: pl.Name, Region: "eu", Owner: fmt.Sprintf("d%d", i), Power: []Power{PowerOn, PowerOff}[j%2]}
			if o.Power == PowerOn {
				o.Holds = []Hold{{Department: fmt.Sprintf("d%d", j%10), CPUs: 32, GPUs: 4 * i}}
				o.Watts, o.Measured, o.Source = 500, j%3 == 0, SourceBMC
			}
			p.Nodes = append(p.Nodes, o)
		}
	}
	return cfg, p
}

// BenchmarkAccrue is one pass of the books over 10,000 servers, and the size of what the store
// keeps of them (bytes/books).
func BenchmarkAccrue(b *testing.B) {
	cfg, p := bigFleet(b, 10000)
	l := (&Ledger{}).Accrue(cfg, p)
	b.ResetTimer()
	for i := range b.N {
		p.At = p.At.Add(time.Minute)
		l = l.Accrue(cfg, p)
		if i == 0 {
			raw, err := json.Marshal(l.Counters())
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(raw)), "bytes/books")
			b.ReportMetric(float64(len(l.totals)), "series")
		}
	}
}
