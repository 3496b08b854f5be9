package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/bmc/redfishemu"
	"github.com/rotahq/rota/internal/clock"
	"github.com/rotahq/rota/internal/slurmlab"
	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// arrivalLab is one lab server, n1, behind an emulated Redfish BMC, in a real Slurm cluster
// driven by the real rota binary (adapter slurm, evaluation interval an hour: only the arrival
// of work can start a pass). The BMC's power hook stands for the server: power on starts n1's
// slurmd (a boot), power off stops it. With resumeProgram, Slurm's own power saving is on and
// its ResumeProgram/SuspendProgram is the real rotactl (`rotactl slurm resume|suspend`) and
// rota's pending-work watch is off, so Slurm's call is the only way rota hears of the work (with
// both, whichever comes first wakes the server: the watch, with reason backlog, now and then);
// without it, the watch (at its default interval) is the only way.
type arrivalLab struct {
	tb            testing.TB
	slurm         *slurmlab.Cluster
	emu           *redfishemu.Emulator
	rota          *rotaUnderTest
	power         chan powerEvent
	up            atomic.Bool // n1's exporter answers (its slurmd runs)
	resumeProgram bool
}

// powerEvent is a completed power transition of n1's BMC, when the hook heard of it.
type powerEvent struct {
	power string
	at    time.Time
}

func startArrivalLab(tb testing.TB, resumeProgram bool) *arrivalLab {
	tb.Helper()
	l := &arrivalLab{tb: tb, power: make(chan powerEvent, 16), resumeProgram: resumeProgram}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		var body struct{ Server, Power string }
		if err := json.NewDecoder(r.Body).Decode(&body); err == nil && body.Server == "n1" {
			l.power <- powerEvent{body.Power, at}
		}
	}))
	tb.Cleanup(hook.Close)
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	emu, err := redfishemu.Start(redfishemu.Config{Servers: []redfishemu.ServerConfig{{
		Name: "n1", Listen: "127.0.0.1:0", Username: "rota", Password: "bmc-pw", Power: "On",
		Hook: redfishemu.Hook{URL: hook.URL},
	}}}, clock.Real{}, logrus.NewEntry(log))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(emu.Close)
	l.emu = emu

	dir := tb.TempDir()
	cfg, listen := filepath.Join(dir, "rota.yml"), testutil.FreePort(tb)
	// The BMC password is in a file: slurmctld runs its programs with an environment of its own.
	password := filepath.Join(dir, "bmc.password")
	if err := os.WriteFile(password, []byte("bmc-pw"), 0o600); err != nil {
		tb.Fatal(err)
	}
	var extra []string
	watch := config.Default().Jobs.WatchInterval
	if resumeProgram {
		extra = l.powerSaving(dir, cfg)
		watch = 0
	}
	l.slurm = slurmlab.Start(tb, slurmlab.Options{
		Nodes: []slurmlab.Node{{Name: "n1", Partition: "batch", CPUs: 2, MemoryMB: 1000}},
		Extra: extra,
	})
	l.up.Store(true)
	apiToken, webhookToken := tokenFiles(tb, dir)
	bmcHost, bmcPort, _ := strings.Cut(emu.Server("n1").Addr(), ":")
	prom := testutil.Prometheus(tb, func(node string) bool { return node == "n1" && l.up.Load() })
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
prometheus: {url: %q, timeout: 2s}
server: {listen_address: 127.0.0.1:%d, api_token_file: %s, webhook_token_file: %s}
store: {path: %s}
jobs:
  adapter: slurm
  timeout: 10s
  watch_interval: %s
  slurm: {conf: %s, bin_dir: %s}
policy:
  evaluation_interval: 1h
  backlog: {queued_jobs: 0, for: 0s}
  cooldown: {scale_up: 0s, scale_down: 0s}
  node: {min_off: 0s, max_cycles_per_day: 100000}
bmc: {min_command_interval: 0s, graceful_timeout: 5s}
pools:
  - name: cpu
    profile: {cpu_cores: 2}
    cost: {hourly: 1.5, currency: EUR}
    boot_timeout: 2m
    nodes:
      - name: n1
        bmc: {protocol: redfish, host: %s, port: %s, username: rota, password_file: %s, insecure_skip_verify: true}
`, prom, listen, apiToken, webhookToken, filepath.Join(dir, "rota.db"), watch, l.slurm.Conf, l.slurm.BinDir, bmcHost, bmcPort, password)), 0o600); err != nil {
		tb.Fatal(err)
	}
	l.rota = startRota(tb, cfg, listen)
	l.rota.waitFor("n1", fleet.StateOn, false)
	l.off()
	return l
}

// powerSaving builds rotactl and returns slurm.conf's power saving lines: rotactl as Slurm's
// ResumeProgram and SuspendProgram, a node idle for 3 s suspended.
func (l *arrivalLab) powerSaving(dir, cfg string) []string {
	l.tb.Helper()
	bin := filepath.Join(dir, "rotactl")
	if out, err := exec.Command("go", "build", "-o", bin, "../rotactl").CombinedOutput(); err != nil {
		l.tb.Fatalf("building rotactl: %v\n%s", err, out)
	}
	wrapper := func(verb string) string {
		p := filepath.Join(dir, verb+".sh")
		script := fmt.Sprintf("#!/bin/sh\nexec %s slurm %s --config.file=%s \"$@\" 2>>%s\n", bin, verb, cfg, filepath.Join(dir, "rotactl.log"))
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			l.tb.Fatal(err)
		}
		return p
	}
	l.tb.Cleanup(func() {
		if l.tb.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "rotactl.log"))
			l.tb.Logf("rotactl log:\n%s", b)
		}
	})
	return []string{"SuspendProgram=" + wrapper("suspend"), "ResumeProgram=" + wrapper("resume"),
		"SuspendTime=3", "SuspendTimeout=5", "ResumeTimeout=60"}
}

// awaitPower waits for n1's BMC to complete a transition to want.
func (l *arrivalLab) awaitPower(want string, timeout time.Duration) time.Time {
	l.tb.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case e := <-l.power:
			if e.power == want {
				return e.at
			}
		case <-deadline:
			l.tb.Fatalf("n1's BMC did not go %s within %s", want, timeout)
		}
	}
}

// off brings n1 from on (rota says so) to off with no work queued, the way each setup powers a
// server off: with Slurm's power saving, Slurm suspends it when idle (rotactl slurm suspend);
// without it, someone powers it off and the server is drained with the reason rota gives a
// server it powered off (what the executor's PoweredOff does). rota sees it Off at its next pass.
func (l *arrivalLab) off() {
	l.tb.Helper()
	if !l.resumeProgram {
		if err := l.emu.Server("n1").SetPower("Off"); err != nil {
			l.tb.Fatal(err)
		}
	}
	l.awaitPower("Off", 60*time.Second)
	l.up.Store(false)
	l.slurm.StopNode("n1")
	if l.resumeProgram {
		l.slurm.WaitState(60*time.Second, "idle+powered_down", "n1")
	} else {
		l.slurm.Command("scontrol", "update", "nodename=n1", "state=drain", "reason=rota: powered off")
	}
	l.rota.waitFor("n1", fleet.StateOff, true)
}

// arrival submits a job that only n1 (off) can run and returns the time from sbatch to the
// power-on reaching n1's BMC; then it lets n1 boot, run the job, and go off again. Work
// arrives when it will, not in step with rota's watch or Slurm's power-saving thread: the
// submission waits a random part of a watch interval first, or a lab whose every cycle takes
// the same time would submit at the same phase of the watch each time and measure one delay.
func (l *arrivalLab) arrival() time.Duration {
	l.tb.Helper()
	// the watch's default interval (the watch is off with resumeProgram: any wait will do)
	time.Sleep(rand.N(time.Duration(config.Default().Jobs.WatchInterval)))
	start := time.Now()
	id := l.slurm.Submit("--partition=batch", "--wrap=true")
	at := l.awaitPower("On", 60*time.Second)
	took := at.Sub(start)
	l.slurm.ResumeNode("n1")
	l.up.Store(true)
	// A pass sees n1 ready and gives it back to Slurm (rota's drain resumed, or Slurm's
	// power saving done); then the job runs.
	l.rota.waitFor("n1", fleet.StateOn, true)
	testutil.Eventually(l.tb, 90*time.Second, "job "+id+" done", func() error {
		if s := l.slurm.JobState(id); s != "" && s != "COMPLETED" {
			return fmt.Errorf("job %s is %s", id, s)
		}
		return nil
	})
	l.off()
	return took
}

// TestWatchWakesAtArrival: with Slurm's power saving off and passes an hour apart, a job
// submitted for an off server has rota power it on: its pending-work watch saw the job.
func TestWatchWakesAtArrival(t *testing.T) {
	l := startArrivalLab(t, false)
	l.arrival()
}

// TestResumeProgramWakesThroughRota: with Slurm's power saving on, Slurm's ResumeProgram
// (rotactl slurm resume) has the running rota power the server on.
func TestResumeProgramWakesThroughRota(t *testing.T) {
	l := startArrivalLab(t, true)
	l.arrival()
	ex, err := l.rota.client.Explain(context.Background(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ex.History, func(r api.AuditRecord) bool { return r.Action == fleet.PowerOn })
	if i < 0 || ex.History[i].Reason != fleet.ReasonRequested {
		t.Fatalf("n1's last power-on is not the one Slurm asked rota for: %+v", ex.History)
	}
}

// BenchmarkSbatchToFirstBMCCommand measures BENCHMARKS.md section 3's lab reaction: from
// `sbatch` of a job that only an off server can run to the power-on reaching that server's
// (emulated Redfish) BMC, through a real Slurm cluster and the real rota binary (and, for
// resume_program, the real rotactl that Slurm runs), with rota's passes an hour apart. Run it
// with -benchtime=10x: it reports the median of the submissions and that median as a share of
// the default evaluation interval (1m), the delay a rota without the watch would add on
// average is half that. Each submission then boots the server, runs the job and powers the
// server off again, outside the timer. The end is the BMC's power hook, a loopback HTTP call
// after the Reset was accepted, so the figure slightly overstates the reaction.
func BenchmarkSbatchToFirstBMCCommand(b *testing.B) {
	for _, mode := range []struct {
		name          string
		resumeProgram bool
	}{{"watch", false}, {"resume_program", true}} {
		b.Run(mode.name, func(b *testing.B) {
			l := startArrivalLab(b, mode.resumeProgram)
			var each []time.Duration
			b.StopTimer()
			for range b.N {
				each = append(each, l.arrival())
			}
			slices.Sort(each)
			median := each[len(each)/2]
			if len(each)%2 == 0 {
				median = (each[len(each)/2-1] + each[len(each)/2]) / 2
			}
			b.ReportMetric(0, "ns/op") // the timer never runs: the measurement is each arrival's own
			b.ReportMetric(float64(median)/float64(time.Millisecond), "ms/median")
			b.ReportMetric(float64(median)/float64(time.Minute), "x-eval-interval")
			var s []string
			for _, d := range each {
				s = append(s, d.Round(time.Millisecond).String())
			}
			b.Logf("sbatch to the first BMC command (N=%d, sorted): %s", b.N, strings.Join(s, " "))
		})
	}
}
