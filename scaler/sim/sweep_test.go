package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"

	"github.com/rotahq/rota/scaler/config"
)

// TestSweepVariantsSetWhatTheyName: each knob a sweep moves is set, in the policy its row
// runs, to the value its name says, and to one the config did not have (a row named for a
// knob it does not move would put a second copy of rota's own point on the plot).
func TestSweepVariantsSetWhatTheyName(t *testing.T) {
	for _, policy := range []string{"", "  break_even: {idle_periods: true, wear_time: 1h}\n  spares: {quantile: 0.3}\n"} {
		base := tinyConfig(t, policy).Policy
		for _, v := range SweepVariants(&base) {
			key, want, ok := strings.Cut(strings.TrimPrefix(v.Name, "rota "), "=")
			if !ok {
				t.Fatalf("variant %q names no key=value", v.Name)
			}
			p := base
			v.Set(&p)
			was, got := policyValue(t, &base, key), policyValue(t, &p, key)
			if !sameValue(got, want) {
				t.Errorf("%q sets %s to %s", v.Name, key, got)
			}
			if sameValue(was, want) {
				t.Errorf("%q: the config's %s is %s already", v.Name, key, was)
			}
		}
	}
}

// TestSweepRunsEveryRow: a sweep replays the baseline at every timeout (and at the one rota
// is judged against, in its place among them), rota and each variant, in that order, after
// the lower bound.
func TestSweepRunsEveryRow(t *testing.T) {
	e := tinyEnv(t, tinyConfig(t, ""), "peak", randomJobs(60, 3)...)
	rs, err := Compare(t.Context(), e, SweepPolicies(e, 15*time.Minute), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"lower-bound"}
	for _, d := range []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute,
		20 * time.Minute, 30 * time.Minute, time.Hour} {
		want = append(want, IdleTimeout(d).Name())
	}
	want = append(want, "rota")
	for _, v := range SweepVariants(&e.Config.Policy) {
		want = append(want, v.Name)
	}
	var got []string
	for _, r := range rs {
		got = append(got, r.Policy)
		if r.Policy != "lower-bound" && r.JobsRun != 60 {
			t.Errorf("%s ran %d of 60 jobs", r.Policy, r.JobsRun)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("rows %v, want %v", got, want)
	}
}

// policyValue is the value at the dotted key of the policy as its YAML says it.
func policyValue(t *testing.T, p *config.Policy, key string) string {
	t.Helper()
	b, err := yaml.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var node any
	if err := yaml.Unmarshal(b, &node); err != nil {
		t.Fatal(err)
	}
	for _, part := range strings.Split(key, ".") {
		m, ok := node.(map[string]any)
		if !ok {
			t.Fatalf("policy has no %s", key)
		}
		if node, ok = m[part]; !ok {
			t.Fatalf("policy has no %s", key)
		}
	}
	b, err = yaml.Marshal(node)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// sameValue compares a YAML value with a variant's, as durations where both are.
func sameValue(yamlValue, named string) bool {
	if d, err := time.ParseDuration(named); err == nil {
		y, err := model.ParseDuration(yamlValue)
		return err == nil && time.Duration(y) == d
	}
	return yamlValue == named
}

// TestSparesNote: a pool under 10 servers keeps no warm spares at the default max_share (a
// tenth, rounded down), so the sweep's rows that move only the spares' settings replay as rota
// does; the note says so, naming them, and names no row that moves anything else. On 20
// servers the cap is 2 and nothing is said. A second pool of 20 leaves those rows free to
// differ there.
func TestSparesNote(t *testing.T) {
	jobs := randomJobs(30, 5)
	small := tinyEnv(t, tinyConfig(t, ""), "6", jobs...)
	n := SparesNote(small, true)
	for _, want := range []string{"pool gpu (6 servers) keeps no warm spares", "max_share 0.1", "none under 10 servers",
		"so rota spares.quantile=0, rota spares.quantile=0.5, rota spares.quantile=0.95 replay as rota does"} {
		if !strings.Contains(n, want) {
			t.Errorf("note %q lacks %q", n, want)
		}
	}
	if strings.Contains(n, "break_even") {
		t.Errorf("note %q names a row that moves more than the spares", n)
	}
	// What the note says holds: those rows replay as rota does.
	rs, err := Compare(t.Context(), small, SweepPolicies(small, 10*time.Minute), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Result{}
	for _, r := range rs {
		byName[r.Policy] = r
	}
	rota := byName["rota"]
	for _, row := range sparesRows(&small.Config.Policy) {
		r := byName[row]
		if r.ServerHours != rota.ServerHours || r.WaitP95 != rota.WaitP95 || r.PowerOns != rota.PowerOns {
			t.Errorf("%s: %.1f server-hours, p95 %.0fs, %d power-ons; rota %.1f, %.0fs, %d", row,
				r.ServerHours, r.WaitP95, r.PowerOns, rota.ServerHours, rota.WaitP95, rota.PowerOns)
		}
	}
	if n := SparesNote(small, false); !strings.Contains(n, "keeps no warm spares") || strings.Contains(n, "rota spares") {
		t.Errorf("without a sweep: note %q, want the pool and no rows", n)
	}
	if n := SparesNote(tinyEnv(t, tinyConfig(t, ""), "20", jobs...), true); n != "" {
		t.Errorf("20 servers: note %q, want none", n)
	}
	if n := SparesNote(tinyEnv(t, tinyConfig(t, "  spares: {max_share: 0}\n"), "20", jobs...), false); !strings.Contains(n, "max_share is 0") {
		t.Errorf("max_share 0: note %q", n)
	}
	var dear []string
	for i := range 20 {
		dear = append(dear, fmt.Sprintf("{name: d%d}", i+1))
	}
	mixed := tinyEnv(t, replayConfig(t, strings.Replace(twoPools, "[{name: d1}, {name: d2}, {name: d3}]", "["+strings.Join(dear, ", ")+"]", 1)), "config", jobs...)
	if n := SparesNote(mixed, true); !strings.Contains(n, "pool cheap (3 servers) keeps no warm spares") || !strings.Contains(n, "differ from rota only on the other pools") {
		t.Errorf("pools of 3 and 20: note %q, want cheap named and the rows free to differ on dear", n)
	}
}
