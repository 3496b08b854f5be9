package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/sim/trace"
)

func classConfig(t *testing.T) *config.Config {
	t.Helper()
	c, err := config.Parse([]byte(`server: {webhook_auth_disabled: true}
policy:
  schedules: [{name: night, start: '22:00', end: '06:00'}]
classes:
  - {name: batch, partitions: [batch], defer: {until: night, max: 12h}}
  - {name: web, partitions: [web], service: true}
  - {name: other}
pools:
  - {name: gpu, profile: {cpu_cores: 96, gpus: 8}, cost: {hourly: 1}, boot_timeout: 5m}
`))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A deferrable job that arrives at noon when every server is off waits for the night window
// (22:00) under rota, not for a boot; a service job at the same time waits a boot; the
// report gives each class its waits.
func TestDeferredWorkWaitsForItsWindow(t *testing.T) {
	noon := int64(12 * 3600)
	batch := job(3, noon, 600, 8)
	batch.Class = "batch"
	web := job(4, noon, 12*3600, 8) // holds its server past the window's start
	web.Class = "web"
	e := tinyEnv(t, classConfig(t), "2", job(2, 0, 60, 8), batch, web)
	r := Run(e, Rota("rota"), nil)
	waits := map[string]float64{}
	for _, c := range r.Classes {
		waits[c.Class] = c.P50
	}
	if waits["batch"] != 10*3600+300 {
		t.Errorf("batch waited %vs, want until 22:00 and a boot (36300s)", waits["batch"])
	}
	if waits["web"] < 300 || waits["web"] > 302 {
		t.Errorf("web waited %vs, want one boot", waits["web"])
	}
	base := Run(e, IdleTimeout(10*time.Minute), nil)
	for _, c := range base.Classes {
		if c.Class == "batch" && c.P50 > 302 {
			t.Errorf("the baseline defers nothing, yet batch waited %vs", c.P50)
		}
	}
}

func TestUnknownClassInTrace(t *testing.T) {
	j := job(7, 0, 60, 1)
	j.Class = "gold"
	tr := &trace.Trace{Format: trace.CSV, Start: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), Jobs: []trace.Job{j}}
	_, err := NewEnv(classConfig(t), tr, Options{Fleet: "1"})
	if err == nil || !strings.Contains(err.Error(), `line 7: class "gold"`) {
		t.Errorf("err = %v, want the line and class named", err)
	}
}
