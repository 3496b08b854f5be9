package alerts

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"

	"github.com/rotahq/rota/scaler/config"
)

// FuzzGenerate checks, for any policy values and pool names, that the rule file reads back as
// the rules it was made from (no threshold, name or expression is mangled by YAML), that each
// threshold reads back exactly, and that a window's step count never exceeds the window. The
// one refusal allowed is a pool name that yaml.v3 cannot write as a label and read back (a
// leading line break: config validation refuses such names), never a name config.IsName
// accepts.
func FuzzGenerate(f *testing.F) {
	f.Add(0.2, 0.05, uint32(600), uint16(15), 10, "gpu-h100")
	f.Add(1e-7, 1.0, uint32(1), uint16(1), 0, "a.b_c")
	f.Add(0.333333333333, 0.1, uint32(86400), uint16(7), 1000000, "x: y # 'q' \"z\"")
	f.Fuzz(func(t *testing.T, cpu, gpu float64, windowS uint32, stepS uint16, queued int, pool string) {
		if stepS == 0 || math.IsNaN(cpu) || math.IsInf(cpu, 0) || math.IsNaN(gpu) || math.IsInf(gpu, 0) {
			t.Skip()
		}
		c := config.Default()
		c.Policy.Idle.CPUThreshold, c.Policy.Idle.GPUThreshold = cpu, gpu
		c.Policy.Idle.Window = model.Duration(time.Duration(windowS) * time.Second)
		c.Prometheus.ScrapeInterval = model.Duration(time.Duration(stepS) * time.Second)
		c.Policy.Backlog.QueuedJobs = queued
		c.Pools = []config.Pool{{Name: pool, BootTimeout: model.Duration(time.Minute)}}
		b, err := Generate(c, "fuzz")
		if err != nil {
			label := RuleFile{Groups: []Group{{Name: "rota", Rules: []Rule{{Alert: "A", Expr: "1", Labels: map[string]string{"pool": pool}}}}}}
			if _, lerr := marshal("", label); lerr == nil || config.IsName(pool) {
				t.Fatalf("pool %q: %v", pool, err)
			}
			return
		}
		var back RuleFile
		if err := yaml.Unmarshal(b, &back); err != nil {
			t.Fatalf("generated YAML does not parse: %v", err)
		}
		if want := Rules(c); !reflect.DeepEqual(back, want) {
			t.Fatalf("rules changed through YAML:\n got %+v\nwant %+v", back, want)
		}
		for _, v := range []float64{cpu, gpu} {
			if got, err := strconv.ParseFloat(num(v), 64); err != nil || got != v {
				t.Errorf("threshold %v written as %q", v, num(v))
			}
		}
		e := NewExpr(c)
		if n := e.IdleSteps(); time.Duration(n)*time.Duration(e.Step) > time.Duration(e.Policy.Idle.Window) {
			t.Errorf("%d steps of %s exceed the %s window", n, e.Step, e.Policy.Idle.Window)
		}
		if !strings.Contains((fleetExpr{Expr: e, all: sourceExprs(c)}).idleAlert(), num(cpu)) {
			t.Errorf("idle alert lacks the CPU threshold %s", num(cpu))
		}
	})
}
