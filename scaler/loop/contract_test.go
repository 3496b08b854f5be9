package loop

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/plan"
	"github.com/rotahq/rota/scaler/promfacts"
)

// cmd/rota wires the real planner and Prometheus reader into the loop: they must fit.
var (
	_ Planner   = plan.Plan
	_ Telemetry = (*promfacts.Reader)(nil)
)

// The alert rules and dashboards read these names: a rename breaks them silently, so the list
// is spelled out here once more, and the exposition must lint clean (promtool's rules).
func TestMetricNamesAreTheContract(t *testing.T) {
	contract := []string{
		"rota_scaler_actions_total", "rota_scaler_action_duration_seconds",
		"rota_scaler_telemetry_ok", "rota_scaler_jobs_ok",
		"rota_scaler_passes_total", "rota_scaler_last_pass_success_timestamp_seconds",
		"rota_scaler_pass_duration_seconds", "rota_scaler_decisions_total", "rota_scaler_skips",
		"rota_fleet_node_state", "rota_fleet_node_powered", "rota_fleet_node_cost_per_hour",
		"rota_fleet_node_saves_when_off", "rota_fleet_node_gpus_declared", "rota_fleet_pool_desired_servers",
		"rota_fleet_pool_powered_servers", "rota_scaler_pending_jobs", "rota_scaler_deferred_jobs", "rota_scaler_paused",
		"rota_scaler_dry_run", "rota_scaler_would_save_per_hour",
		// The books (a second pass books the first interval).
		"rota_cost_spend_total", "rota_cost_saving_total", "rota_cost_node_idle_total",
		"rota_energy_node_joules_total", "rota_fleet_node_power_watts", "rota_cost_books_ok",
		"rota_cost_node_standby_too_high",
	}
	f := newFx(t, func(c *config.Config) { c.Pools[0].Cost.Watts = 300 }, nil)
	f.world.SetDemand([]fleet.Demand{{Class: "light", Count: 1, Nodes: 1}})
	f.world.Set("cpu02", func(s *executortest.Server) { s.PowerUnknown = true })
	f.propose = []fleet.Action{act(fleet.Drain, "cpu01", "cpu", fleet.ReasonIdle), act(fleet.Drain, "cpu02", "cpu", fleet.ReasonIdle)}
	f.pass()
	f.world.Set("gpu02", func(s *executortest.Server) { s.Power = bmc.StateOff })
	f.clock.Advance(time.Minute)
	f.pass()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		got = append(got, mf.GetName())
	}
	for _, name := range contract {
		if !slices.Contains(got, name) {
			t.Errorf("%s not exported", name)
		}
	}
	problems, err := testutil.GatherAndLint(f.reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}
