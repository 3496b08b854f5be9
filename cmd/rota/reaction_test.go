package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/bmc/redfishemu"
	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/fleet"
)

// BenchmarkWebhookToFirstBMCCommand measures BENCHMARKS.md section 3's reaction: the time from
// an Alertmanager webhook's arrival at the real rota binary to the Reset POST it sends to the
// (emulated, in-process) Redfish BMC of the Off server that waiting work needs. The evaluation
// interval is an hour, so only the webhook starts the pass; min_off, cooldowns, the backlog
// threshold and the BMC command interval are zero, so nothing else gates the power-on. The end
// is the emulator's power hook for the completed power-on (transition delay zero), which fires
// a loopback HTTP call after the Reset was accepted: the figure slightly overstates rota's own
// time. Between iterations the server is taken back to Off through the emulator (not rota) and
// the waiting work is withdrawn, and that time is not counted.
func BenchmarkWebhookToFirstBMCCommand(b *testing.B) {
	log := logrus.New()
	log.SetOutput(&bytes.Buffer{})

	// The emulator's hook tells when the power-on it was sent completed (at once).
	poweredOn := make(chan time.Time, 16)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		var body struct{ Server, Power string }
		if err := json.NewDecoder(r.Body).Decode(&body); err == nil && body.Server == "n1" && body.Power == "On" {
			poweredOn <- at
		}
	}))
	b.Cleanup(hook.Close)
	emu, err := redfishemu.Start(redfishemu.Config{Servers: []redfishemu.ServerConfig{{
		Name: "n1", Listen: "127.0.0.1:0", Username: "rota", Password: "bmc-pw", Power: "Off",
		Hook: redfishemu.Hook{URL: hook.URL},
	}}}, clock.Real{}, logrus.NewEntry(log))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(emu.Close)
	bmcHost, bmcPort, _ := strings.Cut(emu.Server("n1").Addr(), ":")

	var exporterUp atomic.Bool
	prom := fakePrometheus(b, &exporterUp)

	dir := b.TempDir()
	write := func(name, content string) string {
		b.Helper()
		p := filepath.Join(dir, name)
		// Write then rename, so the job adapter never reads half a file.
		if err := os.WriteFile(p+".tmp", []byte(content), 0o600); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(p+".tmp", p); err != nil {
			b.Fatal(err)
		}
		return p
	}
	// The job manager is two files the exec adapter's programs print: what n1 runs (it
	// responds only while powered) and the work waiting.
	setJobs := func(responding, waiting bool) {
		write("state.json", fmt.Sprintf(`{"nodes": {"n1": {"jobs": 0, "cpus": 0, "gpus": 0, "drained": false, "drained_by_rota": false, "responding": %t}}}`, responding))
		demand := `{"demand": []}`
		if waiting {
			demand = fmt.Sprintf(`{"demand": [{"partition": "batch", "cpus": 4, "gpus": 0, "memory_bytes": 0, "nodes": 1, "count": 1, "since": %q}]}`,
				time.Now().UTC().Format(time.RFC3339Nano))
		}
		write("demand.json", demand)
	}
	setJobs(false, false)
	stateProg := write("state.sh", "#!/bin/sh\nexec cat "+filepath.Join(dir, "state.json")+"\n")
	demandProg := write("demand.sh", "#!/bin/sh\nexec cat "+filepath.Join(dir, "demand.json")+"\n")
	okProg := write("ok.sh", "#!/bin/sh\nexit 0\n")
	for _, p := range []string{stateProg, demandProg, okProg} {
		if err := os.Chmod(p, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	apiToken, webhookToken := tokenFiles(b, dir)
	listen := testutil.FreePort(b)
	cfg := write("rota.yml", fmt.Sprintf(`
prometheus: {url: %q, timeout: 2s}
server:
  listen_address: 127.0.0.1:%d
  api_token_file: %s
  webhook_token_file: %s
store: {path: %s}
jobs:
  adapter: exec
  timeout: 10s
  exec: {state_command: %s, demand_command: %s, drain_command: %s, resume_command: %s}
policy:
  evaluation_interval: 1h
  backlog: {queued_jobs: 0, for: 0s}
  cooldown: {scale_up: 0s, scale_down: 0s}
  node: {min_off: 0s, max_cycles_per_day: 100000}
bmc: {min_command_interval: 0s}
pools:
  - name: cpu-epyc
    profile: {cpu_cores: 8}
    cost: {hourly: 1.5, currency: EUR}
    nodes:
      - name: n1
        bmc: {protocol: redfish, host: %s, port: %s, username: rota, password_env: ROTA_TEST_BMC_PASSWORD, insecure_skip_verify: true}
`, prom, listen, apiToken, webhookToken, filepath.Join(dir, "rota.db"), stateProg, demandProg, okProg, okProg, bmcHost, bmcPort))

	rota := startRota(b, cfg, listen, "ROTA_TEST_BMC_PASSWORD=bmc-pw")
	waitFor := func(want fleet.State, nudge bool) { rota.waitFor("n1", want, nudge) }
	waitFor(fleet.StateOff, false)

	var total time.Duration
	var each []string
	b.ResetTimer()
	for range b.N {
		// Work waits that only n1, Off, can take; rota hears of it from the webhook alone.
		b.StopTimer()
		// The webhook comes when the loop is idle: a pass a nudge asks for starts at least 5 s
		// after the last one began (the last waitFor's), and this measures rota's reaction,
		// not that spacing.
		time.Sleep(5 * time.Second)
		setJobs(false, true)
		b.StartTimer()
		start := time.Now()
		rota.nudge()
		var at time.Time
		select {
		case at = <-poweredOn:
		case <-time.After(30 * time.Second):
			b.Fatal("no power-on reached the BMC within 30s of the webhook")
		}
		b.StopTimer()
		if at.Before(start) {
			b.Fatalf("the power-on reached the BMC %s before the webhook was sent", start.Sub(at))
		}
		total += at.Sub(start)
		each = append(each, at.Sub(start).Round(10*time.Microsecond).String())

		// Back to Off, through the emulator: rota first sees n1 boot and come up (its job
		// agent and exporter answer), then someone power it off, with no work waiting.
		waitFor(fleet.StateBooting, true)
		exporterUp.Store(true)
		setJobs(true, false)
		waitFor(fleet.StateOn, true)
		if err := emu.Server("n1").SetPower("Off"); err != nil {
			b.Fatal(err)
		}
		exporterUp.Store(false)
		setJobs(false, false)
		waitFor(fleet.StateOff, true)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(total)/float64(time.Millisecond)/float64(b.N), "ms/reaction")
	b.Logf("reactions (N=%d): %s", b.N, strings.Join(each, " "))
}
