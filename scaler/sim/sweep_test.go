package sim

import (
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
