package sim

import (
	"math"
	"strings"
	"testing"
)

// TestPricesAndCarbon: a replay prices each powered hour at its tariff's price of that hour of
// the trace's clock (the trace starts 2024-01-01 00:00 UTC, a Monday: the first 8 hours are
// night at 0.10, then day at 0.40), and counts the energy and CO2 avoided against the whole
// fleet on; a region whose intensity is a query is unknown in a replay.
func TestPricesAndCarbon(t *testing.T) {
	y := `accounting:
  tariffs:
    - name: site
      currency: EUR
      timezone: UTC
      windows:
        - {name: night, start: "20:00", end: "08:00", price_per_kwh: 0.10}
        - {name: day, start: "08:00", end: "20:00", price_per_kwh: 0.40}
  carbon:
    - {region: eu, grams_per_kwh: 250}
pools:
  - name: gpu
    profile: {cpu_cores: 96, gpus: 8}
    cost: {watts: 2000, tariff: site}
    boot_timeout: 5m
    labels: {region: eu}
`
	// Two servers busy 10 hours from midnight: 8 night hours and 2 day hours each.
	e := tinyEnv(t, replayConfig(t, y), "2", job(1, 0, 10*3600, 16))
	on := Run(e, AlwaysOn(), nil)
	want := 2 * 2.0 * (8*0.10 + 2*0.40)
	if math.Abs(on.Cost-want) > 1e-9 || on.Currency != "EUR" {
		t.Errorf("always-on cost %v %s, want %v EUR (night and day prices)", on.Cost, on.Currency, want)
	}
	// Planned in USD, the same spend at 1.1 dollars a euro.
	e = tinyEnv(t, replayConfig(t, "accounting:\n  currency: USD\n  exchange_rates: {EUR: 1.1}\n"+strings.TrimPrefix(y, "accounting:\n")), "2", job(1, 0, 10*3600, 16))
	if usd := Run(e, AlwaysOn(), nil); math.Abs(usd.Cost-1.1*want) > 1e-9 || usd.Currency != "USD" {
		t.Errorf("planned in USD: %v %s, want %v USD", usd.Cost, usd.Currency, 1.1*want)
	}
	if on.AvoidedKWh != 0 || on.CarbonUnknownKWh != 0 {
		t.Errorf("always-on avoided %v kWh", on.AvoidedKWh)
	}
	// One server busy 10 hours of a two-server fleet: the idle timeout turns the other off.
	e = tinyEnv(t, replayConfig(t, y), "2", job(1, 0, 10*3600, 8))
	r := Run(e, IdleTimeout(0), nil)
	if r.AvoidedKWh <= 0 || math.Abs(r.AvoidedCO2Kg-r.AvoidedKWh*0.25) > 1e-9 || r.CarbonUnknownKWh != 0 {
		t.Errorf("avoided %v kWh, %v kg CO2 (unknown %v); want kWh x 250 g", r.AvoidedKWh, r.AvoidedCO2Kg, r.CarbonUnknownKWh)
	}
	us := strings.NewReplacer("region: eu, grams_per_kwh: 250", `region: us, query: 'carbon_intensity{zone="US"}'`, "{region: eu}", "{region: us}").Replace(y)
	e = tinyEnv(t, replayConfig(t, us), "2", job(1, 0, 10*3600, 8))
	if r := Run(e, IdleTimeout(0), nil); r.AvoidedCO2Kg != 0 || r.CarbonUnknownKWh != r.AvoidedKWh || r.AvoidedKWh == 0 {
		t.Errorf("a query's region: %v kg, %v of %v kWh unknown; want all unknown", r.AvoidedCO2Kg, r.CarbonUnknownKWh, r.AvoidedKWh)
	}
}
