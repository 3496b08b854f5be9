package sim

import (
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/sim/trace"
)

// tinyConfig is one pool of 8-GPU servers costing 1 per hour, booting in 5 minutes; the policy
// is rota's default unless extra (YAML under policy:) says otherwise.
func tinyConfig(t testing.TB, policy string) *config.Config {
	t.Helper()
	y := "pools:\n  - name: gpu\n    profile: {cpu_cores: 96, gpus: 8}\n    cost: {hourly: 1}\n    boot_timeout: 5m\n"
	if policy != "" {
		y += "policy:\n" + policy
	}
	return replayConfig(t, y)
}

// replayConfig parses y as a replay reads its config.
func replayConfig(t testing.TB, y string) *config.Config {
	t.Helper()
	c, err := config.ParseFor([]byte(y), config.Replay)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// job is a trace job of n servers of 8 GPUs (or one server of gpus < 8).
func job(line int, submit, dur int64, gpus int) trace.Job {
	nodes, each := 1, gpus
	if gpus > 8 {
		nodes, each = gpus/8, 8
	}
	return trace.Job{Line: line, Submit: submit, Duration: dur, Nodes: nodes, GPUs: each}
}

func tinyEnv(t testing.TB, cfg *config.Config, fleet string, jobs ...trace.Job) *Env {
	t.Helper()
	tr := &trace.Trace{Format: trace.CSV, Start: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), Jobs: jobs}
	e, err := NewEnv(cfg, tr, Options{Fleet: fleet, Shutdown: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return e
}
