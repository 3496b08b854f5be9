package config

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// owned is minimal with an owned pool on a tariff, in region eu-west.
const owned = `
server:
  webhook_auth_disabled: true
accounting:
  tariffs:
    - name: berlin
      currency: EUR
      timezone: Europe/Berlin
      windows:
        - {name: peak, days: [mon, tue, wed, thu, fri], start: "08:00", end: "20:00", price_per_kwh: 0.40}
        - {name: night, days: [mon, tue, wed, thu], start: "20:00", end: "08:00", price_per_kwh: 0.20}
        - {name: friday-evening, days: [fri], start: "20:00", end: "24:00", price_per_kwh: 0.20}
        - {name: weekend, days: [sat, sun], start: "00:00", end: "24:00", price_per_kwh: 0.10}
        - {name: monday-morning, days: [mon], start: "00:00", end: "08:00", price_per_kwh: 0.20}
  carbon:
    - {region: eu-west, grams_per_kwh: 300}
pools:
  - name: cpu
    profile: {cpu_cores: 8}
    cost: {watts: 1000, tariff: berlin}
    labels: {region: eu-west}
    nodes:
      - name: n1
        bmc: {protocol: ipmi, host: 127.0.0.1, username: admin, password_env: PW}
`

func TestTariffPrices(t *testing.T) {
	c, err := Parse([]byte(owned))
	if err != nil {
		t.Fatal(err)
	}
	cost := c.Pools[0].Cost
	if cost.Currency != "EUR" {
		t.Errorf("currency %s: a pool on a tariff takes the tariff's", cost.Currency)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	at := func(y int, mo time.Month, d, h, m int) time.Time { return time.Date(y, mo, d, h, m, 0, 0, berlin) }
	cases := []struct {
		name     string
		from, to time.Time
		want     float64
	}{
		{"one peak hour", at(2026, 11, 30, 9, 0), at(2026, 11, 30, 10, 0), 0.40},
		{"across peak's end at 20:00", at(2026, 11, 30, 19, 30), at(2026, 11, 30, 20, 30), 0.20 + 0.10},
		{"a whole weekday", at(2026, 11, 30, 0, 0), at(2026, 12, 1, 0, 0), 12*0.40 + 12*0.20},
		// Friday's night window runs past midnight into Saturday: it is Friday's.
		{"friday night into saturday", at(2026, 11, 27, 23, 0), at(2026, 11, 28, 1, 0), 0.20 + 0.10},
		{"a whole week", at(2026, 11, 30, 0, 0), at(2026, 12, 7, 0, 0), 5*(12*0.40+12*0.20) + 2*24*0.10},
		// 2026-03-29: clocks go from 02:00 to 03:00 in Berlin: the Sunday has 23 hours.
		{"the short day of summer time", at(2026, 3, 29, 0, 0), at(2026, 3, 30, 0, 0), 23 * 0.10},
		// 2026-10-25: 03:00 back to 02:00: 25 hours.
		{"the long day of winter time", at(2026, 10, 25, 0, 0), at(2026, 10, 26, 0, 0), 25 * 0.10},
		{"nothing when to is not after from", at(2026, 11, 30, 9, 0), at(2026, 11, 30, 9, 0), 0},
	}
	for _, tc := range cases {
		got := cost.EnergyCost(1000, tc.from, tc.to)
		if math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if got, want := cost.PerHourAt(at(2026, 11, 30, 9, 0)), 0.40; got != want {
		t.Errorf("PerHourAt peak: %v, want %v", got, want)
	}
	// The week: 60 h at 0.40, 60 h at 0.20, 48 h at 0.10.
	if got, want := cost.PerHour(), (60*0.40+60*0.20+48*0.10)/168; math.Abs(got-want) > 1e-12 {
		t.Errorf("PerHour (the week's mean): %v, want %v", got, want)
	}
	flat := Cost{Watts: 500, PricePerKWh: 0.3}
	if got := flat.EnergyCost(500, at(2026, 11, 30, 9, 0), at(2026, 11, 30, 11, 0)); math.Abs(got-0.3) > 1e-12 {
		t.Errorf("flat price over 2 h: %v, want 0.3", got)
	}
}

func TestAccountingRejects(t *testing.T) {
	pool := func(cost string) string {
		return strings.Replace(owned, "cost: {watts: 1000, tariff: berlin}", "cost: "+cost, 1)
	}
	windows := func(ws ...string) string {
		i := strings.Index(owned, "      windows:\n")
		j := strings.Index(owned, "  carbon:")
		return owned[:i] + "      windows:\n        - " + strings.Join(ws, "\n        - ") + "\n" + owned[j:]
	}
	cases := []struct {
		name, yaml, path, msg string
	}{
		{"a gap in the week", windows(`{name: day, start: "08:00", end: "20:00", price_per_kwh: 0.3}`, `{name: night, start: "21:00", end: "08:00", price_per_kwh: 0.1}`),
			"accounting.tariffs[0].windows", "no window prices sun 20:00-21:00"},
		{"two windows over one hour", windows(`{name: day, start: "08:00", end: "20:00", price_per_kwh: 0.3}`, `{name: night, start: "19:00", end: "08:00", price_per_kwh: 0.1}`),
			"accounting.tariffs[0].windows", `"day" and "night" both price sun 19:00-20:00`},
		{"a negative price", windows(`{name: all, start: "00:00", end: "24:00", price_per_kwh: -0.1}`),
			"accounting.tariffs[0].windows[0].price_per_kwh", "must not be negative"},
		{"no windows", windows()[:strings.Index(owned, "      windows:\n")] + "      windows: []\n" + owned[strings.Index(owned, "  carbon:"):],
			"accounting.tariffs[0].windows", "required"},
		{"a tariff in another currency", pool("{watts: 1000, tariff: berlin, currency: USD}"),
			"pools[0].cost.tariff", "one sum would add two currencies"},
		{"an unknown tariff", pool("{watts: 1000, tariff: paris}"), "pools[0].cost.tariff", `no tariff named "paris"`},
		{"a tariff and a flat price", pool("{watts: 1000, tariff: berlin, price_per_kwh: 0.3}"), "pools[0].cost", "not both"},
		{"rent and a tariff", pool("{hourly: 2, tariff: berlin}"), "pools[0].cost", "not both"},
		{"a tariff without watts", pool("{tariff: berlin}"), "pools[0].cost", "go together"},
		{"not a currency", pool("{hourly: 2, currency: euro}"), "pools[0].cost.currency", "not a currency code"},
		{"a price that is not a number", pool("{watts: 1000, price_per_kwh: .nan}"), "pools[0].cost.price_per_kwh", `".nan" is not a finite number`},
		{"carbon both ways", strings.Replace(owned, "{region: eu-west, grams_per_kwh: 300}", "{region: eu-west, grams_per_kwh: 300, query: 'x'}", 1),
			"accounting.carbon[0]", "one of them"},
		{"carbon negative", strings.Replace(owned, "grams_per_kwh: 300", "grams_per_kwh: -1", 1), "accounting.carbon[0].grams_per_kwh", "must not be negative"},
		{"carbon of a region with no server", strings.Replace(owned, "region: eu-west, grams", "region: mars, grams", 1),
			"accounting.carbon[0].region", `no server is in region "mars"`},
		{"pools in two currencies and none to plan in", usdPool(owned), "accounting.currency", "pools bill in EUR (cpu) and USD (rented)"},
		{"a pool's currency without a rate", usdPool(strings.Replace(owned, "accounting:\n", "accounting:\n  currency: EUR\n", 1)),
			"pools[1].cost.currency", "accounting.exchange_rates gives no rate for it"},
		{"a rate for the currency planned in", usdPool(strings.Replace(owned, "accounting:\n", "accounting:\n  currency: EUR\n  exchange_rates: {USD: 0.9, EUR: 1}\n", 1)),
			"accounting.exchange_rates.EUR", "EUR is accounting.currency"},
		{"a rate of nothing", usdPool(strings.Replace(owned, "accounting:\n", "accounting:\n  currency: EUR\n  exchange_rates: {USD: 0}\n", 1)),
			"accounting.exchange_rates.USD", "must be a positive number"},
		{"a rate for no currency", strings.Replace(owned, "accounting:\n", "accounting:\n  exchange_rates: {dollar: 1.1}\n", 1),
			"accounting.exchange_rates.dollar", "not a currency code"},
		{"planning in no currency", strings.Replace(owned, "accounting:\n", "accounting:\n  currency: euros\n", 1),
			"accounting.currency", "not a currency code"},
		{"an unknown idle rule", strings.Replace(owned, "accounting:\n", "accounting:\n  chargeback: {idle: everyone}\n", 1), "accounting.chargeback.idle", "not one of owner, pool"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("want a ValidationError, got %v", err)
			}
			for _, p := range ve.Problems {
				if p.Path == tc.path && strings.Contains(p.Message, tc.msg) {
					return
				}
			}
			t.Errorf("no problem at %s saying %q; got:\n%v", tc.path, tc.msg, err)
		})
	}
}

// usdPool adds to the config y a rented pool billed in USD.
func usdPool(y string) string {
	return y + `  - name: rented
    profile: {cpu_cores: 8}
    cost: {hourly: 2, currency: USD}
    nodes:
      - name: r1
        bmc: {protocol: ipmi, host: 127.0.0.2, username: admin, password_env: PW}
`
}

// Pools billed in two currencies are ranked in one, accounting.currency: converted at the
// configured rate, the books keeping each pool's own. One currency needs no setting.
func TestCurrencies(t *testing.T) {
	c, err := Parse([]byte(owned))
	if err != nil {
		t.Fatal(err)
	}
	if c.Accounting.Currency != "EUR" || c.Pools[0].Cost.PlanPerHour() != c.Pools[0].Cost.PerHour() {
		t.Errorf("one pool in EUR: plans in %q at %v/h, want EUR at its own %v", c.Accounting.Currency, c.Pools[0].Cost.PlanPerHour(), c.Pools[0].Cost.PerHour())
	}
	c, err = Parse([]byte(usdPool(strings.Replace(owned, "accounting:\n", "accounting:\n  currency: EUR\n  exchange_rates: {USD: 0.9, JPY: 0.006}\n", 1))))
	if err != nil {
		t.Fatal(err)
	}
	rented := c.Pools[1].Cost
	if rented.Currency != "USD" || rented.PerHour() != 2 || math.Abs(rented.PlanPerHour()-1.8) > 1e-12 || math.Abs(rented.InPlanCurrency(10)-9) > 1e-12 {
		t.Errorf("2 USD/h at 0.9 EUR a dollar: %v %s/h, planned at %v EUR/h; want 2 USD and 1.8 EUR", rented.PerHour(), rented.Currency, rented.PlanPerHour())
	}
	if own := c.Pools[0].Cost; own.PlanPerHour() != own.PerHour() {
		t.Errorf("a pool billed in EUR planned at %v, want its own %v", own.PlanPerHour(), own.PerHour())
	}
}

func TestAccountingDefaults(t *testing.T) {
	c, err := Parse([]byte(minimal + "policy: {evaluation_interval: 30s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := c.Accounting
	if a.Chargeback.Idle != IdleToOwner || time.Duration(a.StaleAfter) != 90*time.Second {
		t.Errorf("defaults: idle %q, stale_after %v; want owner and three evaluation intervals", a.Chargeback.Idle, a.StaleAfter)
	}
	if time.Duration(c.BMC.PowerReadingInterval) != 5*time.Minute {
		t.Errorf("bmc.power_reading_interval default %v, want 5m", c.BMC.PowerReadingInterval)
	}
	cb := Chargeback{Accounts: map[string]string{"phys-a": "physics"}}
	if cb.Department("phys-a") != "physics" || cb.Department("chem") != "chem" || cb.Department("") != "" {
		t.Error("accounts map to departments; others are their own; no account is none")
	}
}
