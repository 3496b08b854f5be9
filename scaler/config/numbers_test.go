package config

import (
	"math"
	"strings"
	"testing"
)

// No key takes .nan or .inf: a NaN passes a range check written the wrong way round (a
// cpu_threshold of NaN made no server ever idle; a min_on_share of NaN made the floor
// int(Ceil(NaN)), math.MinInt64), and an infinite price or factor overflows the sums it enters.
// The decoder refuses them for every number, with the key's path and line.
func TestNumbersMustBeFinite(t *testing.T) {
	cases := []struct {
		name, yaml, path string
	}{
		{"idle cpu threshold", minimal + "policy: {idle: {cpu_threshold: .nan}}\n", "policy.idle.cpu_threshold"},
		{"idle gpu threshold", minimal + "policy: {idle: {gpu_threshold: .NaN}}\n", "policy.idle.gpu_threshold"},
		{"underuse", minimal + "policy: {underuse: {gpu_threshold: .inf}}\n", "policy.underuse.gpu_threshold"},
		{"spares factor", minimal + "policy: {spares: {factor: .inf}}\n", "policy.spares.factor"},
		{"spares max share", minimal + "policy: {spares: {max_share: .nan}}\n", "policy.spares.max_share"},
		{"spares quantile", minimal + "policy: {spares: {quantile: -.inf}}\n", "policy.spares.quantile"},
		{"disruption share", minimal + "policy: {disruption: {max_power_offs_share: .nan}}\n", "policy.disruption.max_power_offs_share"},
		{"break-even wear", minimal + "policy: {break_even: {wear_cost: .inf}}\n", "policy.break_even.wear_cost"},
		{"moves factor", minimal + "policy: {moves: {min_saving_factor: .inf}}\n", "policy.moves.min_saving_factor"},
		{"schedule floor", minimal + "policy: {schedules: [{name: a, start: '08:00', end: '18:00', min_on_share: .nan}]}\n", "policy.schedules[0].min_on_share"},
		{"hourly", strings.Replace(minimal, "hourly: 1.5", "hourly: .inf", 1), "pools[0].cost.hourly"},
		{"watts", strings.Replace(minimal, "hourly: 1.5", "watts: .nan, price_per_kwh: 0.3", 1), "pools[0].cost.watts"},
		{"price per kWh", strings.Replace(minimal, "hourly: 1.5", "watts: 500, price_per_kwh: +.inf", 1), "pools[0].cost.price_per_kwh"},
		{"base watts", strings.Replace(minimal, "hourly: 1.5", "hourly: 1.5, base_watts: .inf", 1), "pools[0].cost.base_watts"},
		{"tariff price", strings.Replace(owned, "price_per_kwh: 0.40", "price_per_kwh: .nan", 1), "accounting.tariffs[0].windows[0].price_per_kwh"},
		{"carbon", strings.Replace(owned, "grams_per_kwh: 300", "grams_per_kwh: .inf", 1), "accounting.carbon[0].grams_per_kwh"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := problemsOf(t, tc.yaml, Daemon)
			if p, ok := got[tc.path]; !ok || !strings.Contains(p.Message, "is not a finite number") || p.Line == 0 {
				t.Errorf("no finite-number problem with a line at %s; got %v", tc.path, got)
			}
		})
	}
}

// A finite number past 10^12 is refused too: an hourly cost of 1e308 made the books' spend
// infinite after two hours, and the store refuses to keep an infinity, so the books stopped
// for good. 10^12 itself passes.
func TestNumbersAreBounded(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, path string
	}{
		{"hourly", strings.Replace(minimal, "hourly: 1.5", "hourly: 1e308", 1), "pools[0].cost.hourly"},
		{"price per kWh", strings.Replace(minimal, "hourly: 1.5", "watts: 500, price_per_kwh: 2e12", 1), "pools[0].cost.price_per_kwh"},
		{"wear", minimal + "policy: {break_even: {wear_cost: -1e300}}\n", "policy.break_even.wear_cost"},
		// Whole numbers too: two servers of 2^62 cores overflowed the pool's sum.
		{"cores", strings.Replace(minimal, "cpu_cores: 8", "cpu_cores: 4611686018427387904", 1), "pools[0].profile.cpu_cores"},
		{"cycles", minimal + "policy: {node: {max_cycles_per_day: 10000000000000}}\n", "policy.node.max_cycles_per_day"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := problemsOf(t, tc.yaml, Daemon)
			if p, ok := got[tc.path]; !ok || !strings.Contains(p.Message, "is beyond 1e+12") || p.Line == 0 {
				t.Errorf("no bound problem with a line at %s; got %v", tc.path, got)
			}
		})
	}
	if c, err := Parse([]byte(strings.Replace(minimal, "hourly: 1.5", "hourly: 1e12", 1))); err != nil || c.Pools[0].Cost.Hourly != 1e12 {
		t.Errorf("hourly: 1e12 refused: %v", err)
	}
	// A size in bytes is no count: 2 TiB of memory written as a number passes.
	if c, err := Parse([]byte(strings.Replace(minimal, "cpu_cores: 8", "cpu_cores: 8, memory: 2199023255552", 1))); err != nil || c.Pools[0].Profile.Memory != 2<<40 {
		t.Errorf("memory: 2199023255552 refused: %v", err)
	}
}

// Validation refuses NaN and infinities too, for a config built in Go (or one whose
// numbers came from anywhere but the decoder): each range check fails for NaN.
func TestValidateRefusesNonFiniteNumbers(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		name, path string
		set        func(c *Config)
	}{
		{"idle cpu threshold", "policy.idle.cpu_threshold", func(c *Config) { c.Policy.Idle.CPUThreshold = nan }},
		{"idle gpu threshold", "policy.idle.gpu_threshold", func(c *Config) { c.Policy.Idle.GPUThreshold = nan }},
		{"underuse", "policy.underuse.gpu_threshold", func(c *Config) { c.Policy.Underuse.GPUThreshold = nan }},
		{"spares factor NaN", "policy.spares.factor", func(c *Config) { c.Policy.Spares.Factor = nan }},
		{"spares factor Inf", "policy.spares.factor", func(c *Config) { c.Policy.Spares.Factor = inf }},
		{"spares max share", "policy.spares.max_share", func(c *Config) { c.Policy.Spares.MaxShare = nan }},
		{"spares quantile", "policy.spares.quantile", func(c *Config) { c.Policy.Spares.Quantile = nan }},
		{"moves factor", "policy.moves.min_saving_factor", func(c *Config) { c.Policy.Moves.MinSavingFactor = nan }},
		{"schedule floor", "policy.schedules[0].min_on_share", func(c *Config) {
			c.Policy.Schedules = []Schedule{{Name: "a", Window: Window{Start: "08:00", End: "18:00"}, MinOnShare: nan}}
		}},
		{"hourly", "pools[0].cost.hourly", func(c *Config) { c.Pools[0].Cost.Hourly = inf }},
		{"watts", "pools[0].cost.watts", func(c *Config) {
			c.Pools[0].Cost.Hourly, c.Pools[0].Cost.Watts, c.Pools[0].Cost.PricePerKWh = 0, nan, 0.3
		}},
		{"price per kWh", "pools[0].cost.price_per_kwh", func(c *Config) {
			c.Pools[0].Cost.Hourly, c.Pools[0].Cost.Watts, c.Pools[0].Cost.PricePerKWh = 0, 500, inf
		}},
		{"base watts", "pools[0].cost.base_watts", func(c *Config) { c.Pools[0].Profile.GPUs, c.Pools[0].Cost.BaseWatts = 8, inf }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(minimal))
			if err != nil {
				t.Fatal(err)
			}
			tc.set(c)
			got := problemsOfValidate(t, c)
			if _, ok := got[tc.path]; !ok {
				t.Errorf("no problem at %s; got %v", tc.path, got)
			}
		})
	}
	t.Run("tariff price and carbon", func(t *testing.T) {
		c, err := Parse([]byte(owned))
		if err != nil {
			t.Fatal(err)
		}
		c.Accounting.Tariffs[0].Windows[0].PricePerKWh = inf
		c.Accounting.Carbon[0].GramsPerKWh = &inf
		got := problemsOfValidate(t, c)
		for _, path := range []string{"accounting.tariffs[0].windows[0].price_per_kwh", "accounting.carbon[0].grams_per_kwh"} {
			if _, ok := got[path]; !ok {
				t.Errorf("no problem at %s; got %v", path, got)
			}
		}
	})
}

func problemsOfValidate(t *testing.T, c *Config) map[string]Problem {
	t.Helper()
	got := map[string]Problem{}
	if err := c.Validate(); err != nil {
		for _, p := range err.(*ValidationError).Problems {
			got[p.Path] = p
		}
	}
	return got
}

// A fraction given for a whole number is refused: yaml.v3 cut it (max_cycles_per_day: 1.5 was
// 1; backlog.queued_jobs: 0.9 was 0, "spill at once"; pools[].min: 0.3 was 0). A whole number
// written as a float (2.0, 1e1) is still that number.
func TestWholeNumbersRefuseFractions(t *testing.T) {
	cases := []struct {
		name, yaml, path string
	}{
		{"cycles", minimal + "policy: {node: {max_cycles_per_day: 1.5}}\n", "policy.node.max_cycles_per_day"},
		{"backlog", minimal + "policy: {backlog: {queued_jobs: 0.9}}\n", "policy.backlog.queued_jobs"},
		{"schedule backlog", minimal + "policy: {schedules: [{name: a, start: '08:00', end: '18:00', backlog_queued_jobs: 2.5}]}\n", "policy.schedules[0].backlog_queued_jobs"},
		{"quota", minimal + "policy: {quotas: [{department: d, pool: cpu, max_servers: 0.5}]}\n", "policy.quotas[0].max_servers"},
		{"pool min", strings.Replace(minimal, "cost: {hourly: 1.5}", "cost: {hourly: 1.5}\n    min: 0.3", 1), "pools[0].min"},
		{"pool max", strings.Replace(minimal, "cost: {hourly: 1.5}", "cost: {hourly: 1.5}\n    max: 0.5", 1), "pools[0].max"},
		{"class gpus", minimal + "classes: [{name: a, max_gpus: 0.5}, {name: b}]\n", "classes[0].max_gpus"},
		{"bmc port", strings.Replace(minimal, "host: 127.0.0.1,", "host: 127.0.0.1, port: 623.5,", 1), "pools[0].nodes[0].bmc.port"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := problemsOf(t, tc.yaml, Daemon)
			if p, ok := got[tc.path]; !ok || !strings.Contains(p.Message, "is not a whole number") || p.Line == 0 {
				t.Errorf("no whole-number problem with a line at %s; got %v", tc.path, got)
			}
		})
	}
	c, err := Parse([]byte(minimal + "policy: {node: {max_cycles_per_day: 2.0}, backlog: {queued_jobs: 1e1}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Policy.Node.MaxCyclesPerDay != 2 || c.Policy.Backlog.QueuedJobs != 10 {
		t.Errorf("2.0 and 1e1 read as %d and %d", c.Policy.Node.MaxCyclesPerDay, c.Policy.Backlog.QueuedJobs)
	}
}

// A number with a leading zero is refused: yaml.v3 reads 0623 as octal, as YAML 1.1 did, so
// port: 0623 was port 403 and cpu_cores: 010 was 8, in silence. 0o10, 0x10 and 08 (no octal)
// read as they say, as does a size (its own decimal reader).
func TestLeadingZerosAreNotOctal(t *testing.T) {
	cases := []struct {
		name, yaml, path, want string
	}{
		{"bmc port", strings.Replace(minimal, "host: 127.0.0.1,", "host: 127.0.0.1, port: 0623,", 1), "pools[0].nodes[0].bmc.port", `"0623" is octal to YAML (403): write it without the leading zero, or 0o623 for octal`},
		{"cores", strings.Replace(minimal, "cpu_cores: 8", "cpu_cores: 010", 1), "pools[0].profile.cpu_cores", `"010" is octal to YAML (8): write it without the leading zero, or 0o10 for octal`},
		{"negative", minimal + "policy: {backlog: {queued_jobs: -010}}\n", "policy.backlog.queued_jobs", `"-010" is octal to YAML (-8): write it without the leading zero, or -0o10 for octal`},
		{"price", strings.Replace(minimal, "hourly: 1.5", "hourly: 012", 1), "pools[0].cost.hourly", `"012" is octal to YAML (10): write it without the leading zero, or 0o12 for octal`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := problemsOf(t, tc.yaml, Daemon)
			if p := got[tc.path]; p.Message != tc.want || p.Line == 0 || len(got) != 1 {
				t.Errorf("problems %v, want %s: %s", got, tc.path, tc.want)
			}
		})
	}
	c, err := Parse([]byte(strings.Replace(minimal, "cpu_cores: 8", "cpu_cores: 0o10, gpus: 08, memory: 0755", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if pr := c.Pools[0].Profile; pr.CPUCores != 8 || pr.GPUs != 8 || pr.Memory != 755 {
		t.Errorf("0o10, 08, 0755 read as %d, %d, %d", pr.CPUCores, pr.GPUs, pr.Memory)
	}
}

// A quoted number is refused as text and said to be one: `port: "623"` was `"623" is not a
// whole number`, which it is.
func TestQuotedNumbersAreSaidToBeQuoted(t *testing.T) {
	quoted := `is quoted, so YAML reads it as text: write the number without quotes`
	for _, tc := range []struct{ name, yaml, path, want string }{
		{"port", strings.Replace(minimal, "host: 127.0.0.1,", `host: 127.0.0.1, port: "623",`, 1), "pools[0].nodes[0].bmc.port", `"623" ` + quoted},
		{"cores", strings.Replace(minimal, "cpu_cores: 8", "cpu_cores: '8'", 1), "pools[0].profile.cpu_cores", `"8" ` + quoted},
		{"price", strings.Replace(minimal, "hourly: 1.5", `hourly: "1.5"`, 1), "pools[0].cost.hourly", `"1.5" ` + quoted},
		{"no number", strings.Replace(minimal, "cpu_cores: 8", `cpu_cores: "eight"`, 1), "pools[0].profile.cpu_cores", `"eight" is not a whole number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := problemsOf(t, tc.yaml, Daemon)
			if p := got[tc.path]; p.Message != tc.want || len(got) != 1 {
				t.Errorf("problems %v, want %s: %s", got, tc.path, tc.want)
			}
		})
	}
}
