package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
)

// rotaModule is the prefix of the packages whose structs validateBounds looks into: the config's
// own types hold the bounded fields; a library's (prometheus/common's HTTP client config) none.
const rotaModule = "github.com/rotahq/rota/"

// validateBounds reports each field whose value passes its `max` tag, with its path. Every
// duration of the config has one (1h for a call or a pass, 1d for a boot, 1w for a window, a
// wait, a dwell time, 1y for a history), and so has a count that is multiplied by one
// (policy.failure.alert_after, in scrape intervals in the generated rule tests). Durations near
// time.Duration's limit (about 292 years) used to validate, and the sums and multiples rota
// makes of them (in the planner, the loop, the books, the replay, the generated rules)
// overflowed to negative and turned decisions round: twice a lease_ttl of 200y made
// RotaNoLeader fire after one pass. Within a year each, a hundred of them added stay in range.
func (c *Config) validateBounds(p *problems) { bounds(p, reflect.ValueOf(c).Elem(), "") }

// bounds is validateBounds for v at path.
func bounds(p *problems, v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			bounds(p, v.Elem(), path)
		}
	case reflect.Slice:
		for i := range v.Len() {
			bounds(p, v.Index(i), path+"["+strconv.Itoa(i)+"]")
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			switch {
			case !f.IsExported():
			case f.Tag.Get("max") != "":
				atMost(p, joinPath(path, name), v.Field(i), maxOf(f))
			case !strings.HasPrefix(innermost(f.Type).PkgPath(), rotaModule):
			case opts == "inline":
				bounds(p, v.Field(i), path)
			case name != "":
				bounds(p, v.Field(i), joinPath(path, name))
			}
		}
	}
}

// atMost reports v (a duration or a whole number) at path when it passes limit.
func atMost(p *problems, path string, v reflect.Value, limit int64) {
	switch {
	case v.Int() <= limit:
	case v.Type() == durationType:
		p.add(path, "%s is longer than %s, the longest it may be", model.Duration(v.Int()), model.Duration(limit))
	default:
		p.add(path, "%d is more than %d, the most it may be", v.Int(), limit)
	}
}

// maxOf is field f's `max` tag as a number: nanoseconds for a duration. A tag that does not
// read is a mistake in rota's code (TestEveryDurationHasAMaximum reads them all).
func maxOf(f reflect.StructField) int64 {
	tag := f.Tag.Get("max")
	n, err := strconv.ParseInt(tag, 10, 64)
	if f.Type == durationType {
		var d model.Duration
		d, err = model.ParseDuration(tag)
		n = int64(d)
	}
	if err != nil {
		panic(fmt.Sprintf("config: field %s: max tag %q: %v", f.Name, tag, err))
	}
	return n
}

// innermost is t with its pointers and slices taken off: the type of what they hold.
func innermost(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	return t
}
