package config

import (
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Each duration near time.Duration's limit (290y) validated, and rota's sums and products of
// them overflowed to negative (twice store.etcd.lease_ttl, three evaluation intervals, an idle
// window after a power-on). Each is refused now with its path, line, value and maximum; the
// maximum itself passes. The cases cover every field with a `max` tag.
func TestDurationsAreBounded(t *testing.T) {
	cases := []struct {
		path, yaml, max string
	}{
		{"prometheus.timeout", "", "1h"},
		{"prometheus.scrape_interval", "", "1h"},
		{"store.etcd.lease_ttl", "", "1h"},
		{"store.etcd.dial_timeout", "", "1h"},
		{"store.etcd.request_timeout", "", "1h"},
		{"jobs.timeout", "", "1h"},
		{"jobs.watch_interval", "", "1h"},
		{"bmc.min_command_interval", "", "1h"},
		{"bmc.operation_timeout", "", "1h"},
		{"bmc.graceful_timeout", "", "1h"},
		{"bmc.power_reading_interval", "", "1h"},
		{"policy.evaluation_interval", "", "1h"},
		{"policy.idle.window", "", "1w"},
		{"policy.backlog.for", "", "1w"},
		{"policy.underuse.window", "", "1w"},
		{"policy.spares.window", "", "1w"},
		{"policy.break_even.wear_time", "", "1w"},
		{"policy.forecast.min_history", "", "1y"},
		{"policy.telemetry.max_age", "", "1w"},
		{"policy.cooldown.scale_up", "", "1w"},
		{"policy.cooldown.scale_down", "", "1w"},
		{"policy.node.min_on", "", "1w"},
		{"policy.node.min_off", "", "1w"},
		{"policy.disruption.window", "", "1w"},
		{"policy.drain.timeout", "", "1w"},
		{"policy.failure.backoff", "", "1w"},
		{"policy.failure.max_backoff", "", "1w"},
		{"policy.failure.alert_window", "", "1w"},
		{"policy.moves.restart_cost", "", "1w"},
		{"policy.moves.estimate", "", "1y"},
		{"policy.moves.tail", "", "1w"},
		{"policy.moves.window", "", "1d"},
		{"accounting.stale_after", "", "1w"},
		{"pools[0].boot_timeout", strings.Replace(minimal, "cost: {hourly: 1.5}", "cost: {hourly: 1.5}\n    boot_timeout: V", 1), "1d"},
		{"classes[0].defer.max", minimal + "classes: [{name: b, partitions: [b], defer: {until: night, max: V}}, {name: rest}]\n" +
			"policy: {schedules: [{name: night, start: '22:00', end: '06:00'}]}\n", "1w"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			y := tc.yaml
			if y == "" {
				y = minimal + flowAt(tc.path, "V")
			}
			got := problemsOf(t, strings.Replace(y, "V", "290y", 1), Daemon)
			want := "290y is longer than " + tc.max + ", the longest it may be"
			if p, ok := got[tc.path]; !ok || p.Message != want || p.Line == 0 {
				t.Errorf("no problem %q with a line at %s; got %v", want, tc.path, got)
			}
			// At its maximum the field may have other problems (a graceful timeout of 1h is
			// not shorter than the operation's 5m), not this one.
			if _, err := Parse([]byte(strings.Replace(y, "V", tc.max, 1))); err != nil && strings.Contains(err.Error(), tc.path+": "+tc.max+" is longer") {
				t.Errorf("%s, its maximum, refused: %v", tc.max, err)
			}
		})
	}
	covered := map[string]bool{}
	for _, tc := range cases {
		covered[tc.path] = true
	}
	for path := range durationFields(reflect.TypeFor[Config](), "") {
		if !covered[path] {
			t.Errorf("%s is a duration with no case here", path)
		}
	}
}

// An evaluation interval out of its range is its one problem: three of 100y made the default
// accounting.stale_after negative, and three of 0s made it zero, refused too though the file
// never set it.
func TestDerivedDefaultsDoNotOverflow(t *testing.T) {
	for _, every := range []string{"100y", "0s"} {
		got := problemList(t, minimal+"policy: {evaluation_interval: "+every+"}\n", Daemon)
		if len(got) != 1 || got[0].Path != "policy.evaluation_interval" {
			t.Errorf("evaluation_interval %s: problems %v, want policy.evaluation_interval alone", every, got)
		}
	}
}

// A max_backoff under the backoff says both values: the problem alone ("is shorter than
// policy.failure.backoff") left the operator to look up a backoff they may never have set.
func TestMaxBackoffSaysBothValues(t *testing.T) {
	got := problemsOf(t, minimal+"policy: {failure: {max_backoff: 1m}}\n", Daemon)
	want := "1m is shorter than policy.failure.backoff (10m), the first wait it bounds"
	if p := got["policy.failure.max_backoff"]; p.Message != want {
		t.Errorf("max_backoff: %v, want %q", p, want)
	}
}

// A count that rota multiplies by a duration is bounded the same way: alert_after failures
// are as many scrape intervals in the generated rule tests.
func TestAlertAfterIsBounded(t *testing.T) {
	got := problemsOf(t, minimal+"policy: {failure: {alert_after: 1000000000000}}\n", Daemon)
	want := "1000000000000 is more than 10000, the most it may be"
	if p := got["policy.failure.alert_after"]; p.Message != want {
		t.Errorf("alert_after: %v, want %q", p, want)
	}
	if _, err := Parse([]byte(minimal + "policy: {failure: {alert_after: 10000}}\n")); err != nil {
		t.Errorf("alert_after: 10000 refused: %v", err)
	}
}

// Every duration of the config has a maximum within a year (a field added without one fails
// here), and each `max` tag reads.
func TestEveryDurationHasAMaximum(t *testing.T) {
	fields := durationFields(reflect.TypeFor[Config](), "")
	for path, f := range fields {
		if f.Tag.Get("max") == "" {
			t.Errorf("%s is a duration without a max tag", path)
			continue
		}
		if limit := time.Duration(maxOf(f)); limit <= 0 || limit > 365*24*time.Hour {
			t.Errorf("%s: max %s is not within a year", path, limit)
		}
	}
	if len(fields) < 30 {
		t.Errorf("found %d durations: the walk missed most", len(fields))
	}
}

// durationFields are the durations of t and the structs of rota's it holds, by path (a list's
// item as [0]).
func durationFields(t reflect.Type, path string) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	if t = innermost(t); t.Kind() != reflect.Struct {
		return out
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		fpath := joinPath(path, name)
		switch {
		case opts == "inline":
			fpath = path
		case f.Type.Kind() == reflect.Slice:
			fpath += "[0]"
		}
		switch {
		case !f.IsExported():
		case f.Type == durationType:
			out[fpath] = f
		case strings.HasPrefix(innermost(f.Type).PkgPath(), rotaModule):
			maps.Copy(out, durationFields(f.Type, fpath))
		}
	}
	return out
}

// flowAt is YAML setting path (policy.idle.window) to v: policy: {idle: {window: v}}.
func flowAt(path, v string) string {
	keys := strings.Split(path, ".")
	s := v
	for i := len(keys) - 1; i > 0; i-- {
		s = "{" + keys[i] + ": " + s + "}"
	}
	return keys[0] + ": " + s + "\n"
}

// durationsOf calls each with every duration in v (a config, or part of one).
func durationsOf(v reflect.Value, each func(time.Duration)) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			durationsOf(v.Elem(), each)
		}
	case reflect.Slice:
		for i := range v.Len() {
			durationsOf(v.Index(i), each)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			switch f := v.Type().Field(i); {
			case !f.IsExported():
			case f.Type == durationType:
				each(time.Duration(v.Field(i).Int()))
			case strings.HasPrefix(innermost(f.Type).PkgPath(), rotaModule):
				durationsOf(v.Field(i), each)
			}
		}
	}
}
