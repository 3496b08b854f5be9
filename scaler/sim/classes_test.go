package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
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

// A noon of deferrable batch work, with spares kept from a learned forecast, waits for the
// night window: the job manager would start it on any spare woken, so none is (each spare
// it took was replaced, and the whole pool woken for it at noon, before the fix).
func TestDeferredWorkWakesNoSpares(t *testing.T) {
	cfg := replayConfig(t, `pools:
  - {name: gpu, profile: {cpu_cores: 96, gpus: 8}, cost: {hourly: 1}, boot_timeout: 5m}
policy:
  schedules: [{name: night, start: '22:00', end: '06:00'}]
  forecast: {min_history: 2h}
classes:
  - {name: batch, partitions: [batch], defer: {until: night, max: 12h}}
  - {name: other}
`)
	var jobs []trace.Job
	for i := range 60 { // a day of bursts of other work, every 20 minutes, to learn from
		j := job(i+2, int64(i*1200), 900, 8*(1+i%3))
		j.Class = "other"
		jobs = append(jobs, j)
	}
	noon, night := int64(86400+12*3600), int64(86400+22*3600)
	for i := range 10 {
		j := job(100+i, noon+int64(i), 3600, 8)
		j.Class = "batch"
		jobs = append(jobs, j)
	}
	// woken between noon and the night window, the times and reasons
	wokenByDay := func(jobs []trace.Job) (woken []string, r Result) {
		log := &actionLog{Policy: Rota("rota")}
		r = Run(tinyEnv(t, cfg, "10", jobs...), log, nil)
		for _, a := range log.log {
			if a.Kind == fleet.PowerOn && a.at >= noon && a.at < night {
				woken = append(woken, fmt.Sprint(a.at, " ", a.Reason))
			}
		}
		return woken, r
	}
	// the same work, not deferrable, wakes spares at noon: the forecast wants them
	other := slices.Clone(jobs)
	for i := range other {
		other[i].Class = "other"
	}
	if woken, _ := wokenByDay(other); !slices.ContainsFunc(woken, func(s string) bool { return strings.HasSuffix(s, " spare") }) {
		t.Fatalf("the same work, not deferrable, woke no spare by day (%q): the test would prove nothing", woken)
	}
	woken, r := wokenByDay(jobs)
	if len(woken) > 0 {
		t.Errorf("servers woken between noon and the night window: %q", woken)
	}
	for _, c := range r.Classes {
		if c.Class == "batch" && c.P50 < float64(night-noon) {
			t.Errorf("batch waited %vs at the median, want until 22:00 (%ds)", c.P50, night-noon)
		}
	}
}

// actionLog is a policy that notes each action it takes, with its time.
type actionLog struct {
	Policy
	log []timedAction
}

type timedAction struct {
	at int64
	fleet.Action
}

func (l *actionLog) decide(w *world) []fleet.Action {
	acts := l.Policy.decide(w)
	for _, a := range acts {
		l.log = append(l.log, timedAction{w.now, a})
	}
	return acts
}

func TestUnknownClassInTrace(t *testing.T) {
	j := job(7, 0, 60, 1)
	j.Class = "gold"
	tr := &trace.Trace{Format: trace.CSV, Start: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), Jobs: []trace.Job{j}}
	_, err := NewEnv(classConfig(t), tr, Options{Fleet: "1"})
	// A trace.LineError, so that rotactl names the file too.
	var row trace.LineError
	if !errors.As(err, &row) || row.Line != 7 || err.Error() != `line 7: class: "gold" is not a class of the config (it has batch, web, other)` {
		t.Errorf("err = %v, want the line, column and class named, and the config's", err)
	}
}

// A quota is of a department: the trace's accounts are charged to departments
// (accounting.chargeback.accounts) before the planner sees them, as in the daemon, so two
// jobs of account phys-a share physics's one server and the second waits for the first.
func TestQuotasReadChargedDepartments(t *testing.T) {
	cfg := replayConfig(t, `policy:
  quotas: [{department: physics, pool: gpu, max_servers: 1}]
accounting: {chargeback: {accounts: {phys-a: physics}}}
pools:
  - {name: gpu, profile: {cpu_cores: 96, gpus: 8}, cost: {hourly: 1}, boot_timeout: 5m}
`)
	day := int64(24 * 3600)
	first, second := job(3, day, 3600, 8), job(4, day, 3600, 8)
	first.Department, second.Department = "phys-a", "phys-a"
	r := Run(tinyEnv(t, cfg, "2", job(2, 0, 60, 8), first, second), Rota("rota"), nil)
	if slices.Max(r.Waits) < 3600 {
		t.Errorf("waits %v: the second job of physics's quota of one server waited less than the first's hour", r.Waits)
	}
}

// A server labelled with a department is that department's in a replay as in the daemon:
// work of department b wakes b's own server, not a's that comes first by name (the replay
// gave its servers no labels, so every server was nobody's and quotas never gave back).
func TestReplayReadsServersDepartments(t *testing.T) {
	cfg := replayConfig(t, `pools:
  - name: gpu
    profile: {cpu_cores: 96, gpus: 8}
    cost: {hourly: 1}
    boot_timeout: 5m
    nodes:
      - {name: a1, labels: {department: a}}
      - {name: a2, labels: {department: a}}
      - {name: b1, labels: {department: b}}
`)
	day := int64(24 * 3600)
	bjob := job(3, day, 3600, 8)
	bjob.Department = "b"
	log := &actionLog{Policy: Rota("rota")}
	Run(tinyEnv(t, cfg, "3", job(2, 0, 60, 8), bjob), log, nil)
	var woken []string
	for _, a := range log.log {
		if a.Kind == fleet.PowerOn && a.at >= day {
			woken = append(woken, a.Node)
		}
	}
	if !slices.Equal(woken, []string{"b1"}) {
		t.Errorf("woken for department b's job: %q, want its own server b1", woken)
	}
}

// TestClassesByMemory: a generic CSV's memory column classifies its jobs, as a job manager's
// memory request does in the daemon: a class of max_memory takes only the jobs that fit it on
// each of their servers (the column is the whole job's, spread over its nodes). The column was
// not read: every job fell in the first class whatever it asked.
func TestClassesByMemory(t *testing.T) {
	cfg := replayConfig(t, `classes:
  - {name: small, max_memory: 64GiB}
  - {name: big}
pools:
  - {name: cpu, profile: {cpu_cores: 64, memory: 512GiB}, cost: {hourly: 1}, boot_timeout: 5m}
`)
	for _, c := range []struct {
		name, csv string
		want      []string
		// noted: the notes say that no job gives its memory
		noted bool
	}{
		{"no memory column", "submit,duration,gpus,cpus\n0,60,0,8\n", []string{"small"}, true},
		{"a size with a unit", "submit,duration,gpus,cpus,memory\n0,60,0,8,16GiB\n1,60,0,8,400GiB\n", []string{"small", "big"}, false},
		{"bytes", "submit,duration,gpus,cpus,Memory\n0,60,0,8,68719476736\n1,60,0,8,68719476737\n", []string{"small", "big"}, false},
		{"empty: unknown", "submit,duration,gpus,cpus,memory\n0,60,0,8,\n1,60,0,8,1GiB\n", []string{"small", "small"}, false},
		{"every row empty", "submit,duration,gpus,cpus,memory\n0,60,0,8,\n", []string{"small"}, true},
		{"every job of a class given", "submit,duration,gpus,cpus,class\n0,60,0,8,big\n", []string{"big"}, false},
		{"memory only where the class is given", "submit,duration,gpus,cpus,class,memory\n0,60,0,8,big,400GiB\n1,60,0,8,,\n", []string{"big", "small"}, true},
		{"spread over the nodes", "submit,duration,gpus,cpus,nodes,memory\n0,60,0,16,2,128GiB\n1,60,0,16,2,129GiB\n", []string{"small", "big"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, err := trace.Read(strings.NewReader(c.csv), trace.CSV, trace.Options{})
			if err != nil {
				t.Fatal(err)
			}
			e, err := NewEnv(cfg, tr, Options{Fleet: "2"})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, j := range e.Jobs {
				got = append(got, j.Class)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("classes %v, want %v", got, c.want)
			}
			noted := slices.ContainsFunc(e.Trace.Notes, func(n string) bool { return strings.Contains(n, "gives no job's memory") })
			if noted != c.noted {
				t.Errorf("noted %v, want %v: %q", noted, c.noted, e.Trace.Notes)
			}
		})
	}
}
