package loop

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
	bolt "go.etcd.io/bbolt"

	"github.com/rotahq/rota/bmc"
	rotatest "github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/executor/executortest"
	"github.com/rotahq/rota/scaler/fleet"
)

// meter is a settable BMC power meter: a node without watts offers no reading.
type meter struct {
	mu    sync.Mutex
	watts map[string]float64
	asked map[string]int
}

func (m *meter) PowerReading(_ context.Context, node string) (bmc.Reading, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked[node]++
	w, ok := m.watts[node]
	if !ok {
		return bmc.Reading{}, bmc.ErrNoReading
	}
	return bmc.Reading{Watts: w, Source: "test"}, nil
}

// numbers answers carbon queries: a query without an entry has no number.
type numbers map[string]float64

func (n numbers) Number(_ context.Context, q string, _ time.Time) (float64, error) {
	if v, ok := n[q]; ok {
		return v, nil
	}
	return 0, errors.New("no series")
}

// metricValue is the sum of the samples of name whose labels include want.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	return rotatest.MetricValue(t, reg, name, want)
}

func approx(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// TestBooksGoOnAcrossARestart: the counters rota exports after a restart continue from the
// stored books (no reset for Prometheus to guess at); the minute no pass observed is unknown
// power, spent as if on and saving nothing, booked by the second pass (the first exports the
// series at 0); exported values equal the stored ones.
func TestBooksGoOnAcrossARestart(t *testing.T) {
	f := newFx(t, nil, nil)
	f.world.Set("gpu02", func(s *executortest.Server) { s.Power = bmc.StateOff })
	saving := map[string]string{"pool": "gpu", "department": "research"}
	unknown := map[string]string{"pool": "gpu", "power": "unknown"}
	f.pass()
	approx(t, "first pass books nothing", metricValue(t, f.reg, "rota_cost_saving_total", saving), 0)
	f.clock.Advance(time.Minute)
	f.pass()
	approx(t, "a minute off", metricValue(t, f.reg, "rota_cost_saving_total", saving), 24.0/60)
	approx(t, "gpu01 on", metricValue(t, f.reg, "rota_cost_spend_total", map[string]string{"pool": "gpu", "power": "on"}), 24.0/60)

	f.restart(nil)
	approx(t, "a restarted rota exports the stored books", metricValue(t, f.reg, "rota_cost_saving_total", saving), 24.0/60)
	f.clock.Advance(time.Minute)
	f.pass()
	approx(t, "the first pass exports its series, booking nothing", metricValue(t, f.reg, "rota_cost_spend_total", unknown), 0)
	f.clock.Advance(time.Minute)
	f.pass()
	approx(t, "observed again", metricValue(t, f.reg, "rota_cost_saving_total", saving), 2*24.0/60)
	approx(t, "the minute before the first pass is spent as if on", metricValue(t, f.reg, "rota_cost_spend_total", unknown), 2*24.0/60)

	books, err := f.st.Books()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range books.Counters {
		if c.Family != "saving" {
			continue
		}
		want := map[string]string{"pool": c.Labels[0], "department": c.Labels[1], "region": c.Labels[2], "currency": c.Labels[3]}
		approx(t, "stored = exported", metricValue(t, f.reg, "rota_cost_saving_total", want), c.Value)
	}
}

// TestBooksUseReadingsAndCarbon: a BMC's reading is the server's draw (asked once per
// interval, taken only in the power state it was read in; a BMC without one is asked again an
// hour later); a carbon query without a number leaves its region unknown.
func TestBooksUseReadingsAndCarbon(t *testing.T) {
	f := newFx(t, func(c *config.Config) {
		g := 400.0
		c.Accounting.Carbon = []config.Carbon{{Region: "eu", GramsPerKWh: &g}}
		for i := range c.Pools {
			c.Pools[i].Cost.Watts = 1000 // energy and carbon; the rent is the cost
		}
	}, nil)
	m := &meter{watts: map[string]float64{"gpu01": 2500, "gpu02": 15}, asked: map[string]int{}}
	f.loop.o.Meter = m
	f.world.Set("gpu02", func(s *executortest.Server) { s.Power = bmc.StateOff })
	f.pass()
	f.clock.Advance(time.Minute)
	f.pass()
	approx(t, "gpu01 measured", metricValue(t, f.reg, "rota_energy_node_joules_total", map[string]string{"node": "gpu01", "source": "bmc"}), 2500*60)
	approx(t, "gpu02 standby measured", metricValue(t, f.reg, "rota_energy_node_joules_total", map[string]string{"node": "gpu02", "source": "bmc"}), 15*60)
	approx(t, "cpu01 from the profile", metricValue(t, f.reg, "rota_energy_node_joules_total", map[string]string{"node": "cpu01", "source": "profile"}), 1000*60)
	approx(t, "avoided", metricValue(t, f.reg, "rota_energy_avoided_joules_total", map[string]string{"pool": "gpu", "carbon": "known"}), 985*60)
	approx(t, "avoided carbon", metricValue(t, f.reg, "rota_carbon_avoided_grams_total", map[string]string{"pool": "gpu"}), 985*60/3.6e6*400)
	approx(t, "draw gauge", metricValue(t, f.reg, "rota_fleet_node_power_watts", map[string]string{"node": "gpu01", "source": "bmc"}), 2500)
	if m.asked["gpu01"] != 1 || m.asked["cpu01"] != 1 {
		t.Errorf("asked %v: once per interval (5m), and a BMC without readings not again within the hour", m.asked)
	}
	// gpu02 powers on: its standby reading does not stand for it on.
	f.world.Set("gpu02", func(s *executortest.Server) { s.Power = bmc.StateOn })
	f.clock.Advance(time.Minute)
	f.pass()
	approx(t, "gpu02 on, no fresh reading in that state: the profile's watts", metricValue(t, f.reg, "rota_fleet_node_power_watts", map[string]string{"node": "gpu02", "source": "profile"}), 1000)

	f.cfg.Accounting.Carbon = []config.Carbon{{Region: "eu", Query: "carbon"}}
	f.loop.o.Numbers = numbers{}
	f.pass()
	approx(t, "unknown carbon", metricValue(t, f.reg, "rota_carbon_intensity_known", map[string]string{"region": "eu"}), 0)
	f.loop.o.Numbers = numbers{"carbon": 250}
	f.pass()
	approx(t, "known carbon", metricValue(t, f.reg, "rota_carbon_intensity_grams_per_kwh", map[string]string{"region": "eu"}), 250)
}

// TestDryRunCountsWouldSave: in dry run, the servers the pass decided to take down are
// booked as what they would have saved.
func TestDryRunCountsWouldSave(t *testing.T) {
	f := newFx(t, func(c *config.Config) { c.Policy.DryRun = true }, nil)
	f.propose = []fleet.Action{act(fleet.Drain, "gpu01", "gpu", fleet.ReasonIdle)}
	f.pass()
	f.clock.Advance(2 * time.Minute)
	f.pass()
	approx(t, "would save", metricValue(t, f.reg, "rota_cost_would_save_total", map[string]string{"pool": "gpu"}), 24.0*2/60)
	approx(t, "saved nothing", metricValue(t, f.reg, "rota_cost_saving_total", nil), 0)
}

// TestDamagedBooksStopTheBooksNotTheScaler: a stored books record that does not decode is left
// as it is; nothing is booked, rota_cost_books_ok says so, and passes go on.
func TestDamagedBooksStopTheBooksNotTheScaler(t *testing.T) {
	f := newFx(t, nil, nil)
	f.pass()
	f.ex.Wait()
	if err := f.st.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(f.path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("books")).Put([]byte("books"), []byte("{torn")) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	f.build(nil)
	f.clock.Advance(time.Minute)
	f.pass()
	if v := testutil.ToFloat64(f.loop.books.ok); v != 0 {
		t.Errorf("rota_cost_books_ok = %v, want 0", v)
	}
	if _, err := f.st.Books(); err == nil {
		t.Error("the damaged record was overwritten")
	}
}

// gpuPower answers the GPUs' draw per server.
type gpuPower map[string]float64

func (g gpuPower) GPUPower(context.Context, time.Time) (map[string]float64, error) { return g, nil }

// TestGPUMeasuredDraw: on a pool with base_watts, a server whose BMC gives no reading is
// measured as its base plus its GPUs' readings; a BMC reading wins; a server that is off is not
// measured by GPUs that cannot be read.
func TestGPUMeasuredDraw(t *testing.T) {
	f := newFx(t, func(c *config.Config) {
		c.Pools[1].Cost.Watts, c.Pools[1].Cost.BaseWatts = 3000, 500
	}, nil)
	f.loop.o.Meter = &meter{watts: map[string]float64{"gpu02": 2800}, asked: map[string]int{}}
	f.loop.o.GPUs = gpuPower{"gpu01": 1200, "gpu02": 900}
	f.pass()
	f.clock.Advance(time.Minute)
	f.pass()
	approx(t, "gpu01: base + GPUs", metricValue(t, f.reg, "rota_energy_node_joules_total", map[string]string{"node": "gpu01", "source": "gpu"}), 1700*60)
	approx(t, "gpu02: the BMC's reading", metricValue(t, f.reg, "rota_energy_node_joules_total", map[string]string{"node": "gpu02", "source": "bmc"}), 2800*60)
	approx(t, "gpu01's draw gauge", metricValue(t, f.reg, "rota_fleet_node_power_watts", map[string]string{"node": "gpu01", "source": "gpu"}), 1700)
}

// TestStandbyAboveTheWattsIsSaid: a server off whose BMC reads more than its pool's watts
// saves and avoids nothing (a negative amount is no total), which went unsaid; now
// rota_cost_node_standby_too_high says so, and the log warns once while it lasts (again
// when it comes back), not every pass.
func TestStandbyAboveTheWattsIsSaid(t *testing.T) {
	f := newFx(t, func(c *config.Config) {
		c.Pools[1].Cost = config.Cost{Watts: 1000, PricePerKWh: 0.3, Currency: "EUR"}
	}, nil)
	m := &meter{watts: map[string]float64{"gpu02": 1500}, asked: map[string]int{}}
	f.loop.o.Meter = m
	read := func(w float64) {
		m.mu.Lock()
		m.watts["gpu02"] = w
		m.mu.Unlock()
	}
	f.world.Set("gpu02", func(s *executortest.Server) { s.Power = bmc.StateOff })
	warnings := func() int {
		n := 0
		for _, e := range f.logs.AllEntries() {
			if e.Level == logrus.WarnLevel && e.Data["node"] == "gpu02" && e.Data["standby_watts"] == 1500.0 {
				n++
			}
		}
		return n
	}
	above := func(node string) float64 {
		return metricValue(t, f.reg, "rota_cost_node_standby_too_high", map[string]string{"node": node})
	}
	saving := map[string]string{"pool": "gpu"}
	for range 3 {
		f.pass()
		f.clock.Advance(time.Minute)
	}
	approx(t, "gpu02 above", above("gpu02"), 1)
	approx(t, "gpu01 (on) not above", above("gpu01"), 0)
	approx(t, "saving", metricValue(t, f.reg, "rota_cost_saving_total", saving), 0)
	approx(t, "avoided", metricValue(t, f.reg, "rota_energy_avoided_joules_total", saving), 0)
	if n := warnings(); n != 1 {
		t.Errorf("%d warnings over 3 passes, want 1", n)
	}
	read(15) // read again once the interval (5m) is over
	f.clock.Advance(5 * time.Minute)
	f.pass()
	f.clock.Advance(time.Minute)
	f.pass()
	approx(t, "gpu02 under its pool's watts", above("gpu02"), 0)
	if metricValue(t, f.reg, "rota_cost_saving_total", saving) <= 0 {
		t.Error("no saving under the pool's watts")
	}
	read(1500)
	f.clock.Advance(5 * time.Minute)
	f.pass()
	f.clock.Advance(time.Minute)
	f.pass()
	if n := warnings(); n != 2 {
		t.Errorf("%d warnings, want 2: once more when it came back", n)
	}
}
