package loop

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/bmc"
	"github.com/rotahq/rota/scaler/cost"
	"github.com/rotahq/rota/scaler/fleet"
	"github.com/rotahq/rota/scaler/store"
)

// Numbers answers queries that must give one number (promfacts.Reader.Number): a region's
// carbon intensity.
type Numbers interface {
	Number(ctx context.Context, query string, now time.Time) (float64, error)
}

// GPUPower reads what each server's GPUs draw now (promfacts.Reader.GPUPower), for the pools
// that give base_watts.
type GPUPower interface {
	GPUPower(ctx context.Context, now time.Time) (map[string]float64, error)
}

// noReadingRetry is how long a BMC that offers no power reading waits before it is asked
// again (a firmware update may add one; asking every interval would only load the BMC).
const noReadingRetry = time.Hour

// books is the loop's side of package cost: the books as last persisted, the BMCs' power
// readings, and the series about them.
type books struct {
	mu     sync.Mutex
	ledger *cost.Ledger // nil while the stored books cannot be read: nothing is booked
	broken error

	readings readings
	// standbyAbove are the servers last seen off drawing more than their pool's watts, so
	// that each is warned of once, not every pass (read and written by passes only).
	standbyAbove map[string]bool

	ok        prometheus.Gauge
	watts     *prometheus.GaugeVec
	standby   *prometheus.GaugeVec
	intensity *prometheus.GaugeVec
	known     *prometheus.GaugeVec
}

// newBooks reads the books from the store and registers their series, collected only while
// leading says so (a follower's books are the last leader's, already exported by it).
func newBooks(st *store.Store, reg prometheus.Registerer, leading func() bool) (*books, error) {
	b := &books{
		readings:     readings{by: map[string]reading{}},
		standbyAbove: map[string]bool{},
		ok: prometheus.NewGauge(prometheus.GaugeOpts{Name: "rota_cost_books_ok",
			Help: "1 while the cost books are kept and stored after each pass, 0 when the stored books could not be read or written."}),
		watts: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "rota_fleet_node_power_watts",
			Help: "What the books take a server to draw now, by source: bmc (its BMC's reading), gpu (the pool's base_watts plus its GPUs' readings) or profile (the pool's watts; unknown power counts as on)."},
			[]string{"node", "pool", "source"}),
		standby: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "rota_cost_node_standby_too_high",
			Help: "1 while a server is off and its measured standby draw is above its pool's watts: the books count no avoided energy, nor a saving on a pool paid by its energy, while it stays off; else 0."},
			[]string{"node", "pool"}),
		intensity: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "rota_carbon_intensity_grams_per_kwh",
			Help: "The carbon intensity the books use for a region's electricity, while known."}, []string{"region"}),
		known: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "rota_carbon_intensity_known",
			Help: "1 when the region's carbon intensity is known this pass, 0 when its query answered no number (its avoided energy is then counted, its carbon not)."},
			[]string{"region"}),
	}
	b.load(st)
	if reg != nil {
		for _, c := range []prometheus.Collector{cost.NewCollector(b.current), b.ok, b.watts, b.standby, b.intensity, b.known} {
			if err := reg.Register(leaderOnly{Collector: c, leading: leading}); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

// load reads the books from the store: at start, and at each term of an HA rota (another
// leader booked since). A record that does not decode is kept as it is (never overwritten) and
// no book is kept until it is repaired; the scaler runs on.
func (b *books) load(st *store.Store) {
	rec, err := st.Books()
	var ledger *cost.Ledger
	if err == nil {
		ledger, err = cost.Restore(rec.At, rec.Counters)
	}
	b.mu.Lock()
	b.ledger, b.broken = ledger, nil
	if err != nil {
		b.ledger = nil
		b.broken = fmt.Errorf("the stored cost books cannot be read, nothing is booked until they are repaired: %w", err)
	}
	b.mu.Unlock()
	b.ok.Set(b2f(err == nil))
}

func (b *books) current() *cost.Ledger {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ledger
}

// keep books the pass: the observation is booked for the time since the last pass, the new
// books are written to the store and only then exported (so what Prometheus saw never runs
// ahead of what a restart reads back). A failed write keeps the old books: the next pass
// books the time again.
func (l *Loop) keepBooks(ctx context.Context, p pass) {
	b := l.books
	if b.broken != nil {
		l.log.WithError(b.broken).Error("cost books")
		return
	}
	carbon := l.carbon(ctx, p.at)
	var takeDown map[string]bool
	if l.cfg.Policy.DryRun {
		takeDown = map[string]bool{}
		for _, a := range p.dec.Actions {
			if a.Kind == fleet.Drain || a.Kind == fleet.PowerOff {
				takeDown[a.Node] = true
			}
		}
	}
	obs := cost.Observe(p.snap, p.at, l.draws(ctx, p), takeDown, carbon)
	next := b.current().Accrue(l.cfg, obs)
	if err := l.o.Store.PutBooks(store.Books{At: next.At, Counters: next.Counters()}); err != nil {
		b.ok.Set(0)
		l.log.WithError(err).Error("cost books not written; this pass's time is booked by the next")
		return
	}
	b.mu.Lock()
	b.ledger = next
	b.mu.Unlock()
	b.ok.Set(1)
	l.exportDraw(obs)
	l.exportStandby(obs)
}

// draws are the servers' measured draws: the BMC's fresh reading, else, on a pool with
// base_watts, its base plus what its GPUs read now (a server that is on).
func (l *Loop) draws(ctx context.Context, p pass) map[string]cost.Draw {
	out := map[string]cost.Draw{}
	for n, w := range l.books.readings.fresh(p.snap, p.at, l.readingInterval()) {
		out[n] = cost.Draw{Watts: w, Source: cost.SourceBMC}
	}
	if l.o.GPUs == nil || !l.cfg.HasBaseWatts() {
		return out
	}
	gpus, err := l.o.GPUs.GPUPower(ctx, p.at)
	if err != nil {
		l.log.WithError(err).Warn("gpu power not read: the pools' watts count this pass")
		return out
	}
	for _, n := range p.snap.Nodes {
		pl := l.cfg.Pool(n.Pool)
		w, ok := gpus[n.Name]
		if _, measured := out[n.Name]; measured || !ok || pl == nil || pl.Cost.BaseWatts == 0 || n.Power != bmc.StateOn {
			continue
		}
		out[n.Name] = cost.Draw{Watts: pl.Cost.BaseWatts + w, Source: cost.SourceGPU}
	}
	return out
}

// exportDraw sets rota_fleet_node_power_watts from the observation.
func (l *Loop) exportDraw(p cost.Pass) {
	b := l.books
	b.watts.Reset()
	for _, o := range p.Nodes {
		pl := l.cfg.Pool(o.Pool)
		switch {
		case pl == nil:
		case o.Measured && o.Power != cost.PowerUnknown:
			b.watts.WithLabelValues(o.Node, o.Pool, o.Source).Set(o.Watts)
		case o.Power == cost.PowerOff:
			b.watts.WithLabelValues(o.Node, o.Pool, "profile").Set(0)
		default:
			b.watts.WithLabelValues(o.Node, o.Pool, "profile").Set(pl.Cost.Watts)
		}
	}
}

// exportStandby sets rota_cost_node_standby_too_high from the observation, and warns once of
// each server whose standby draw went above its pool's watts: the books clamp what it saves and
// avoids to none, which no counter shows.
func (l *Loop) exportStandby(p cost.Pass) {
	b := l.books
	b.standby.Reset()
	above := map[string]bool{}
	for _, o := range p.Nodes {
		pl := l.cfg.Pool(o.Pool)
		if pl == nil {
			continue
		}
		above[o.Node] = cost.StandbyAboveWatts(o, pl.Cost)
		b.standby.WithLabelValues(o.Node, o.Pool).Set(b2f(above[o.Node]))
		if above[o.Node] && !b.standbyAbove[o.Node] {
			l.log.WithFields(logrus.Fields{"node": o.Node, "pool": o.Pool, "standby_watts": o.Watts, "pool_watts": pl.Cost.Watts}).
				Warn("off, the server draws more than its pool's watts: no avoided energy (nor a saving, on a pool paid by its energy) is booked while it stays off; is cost.watts too low, or the reading not the server's?")
		}
	}
	b.standbyAbove = above
}

// carbon is each region's carbon intensity now: the config's number, or its query's one
// number; a query without one (absent, several series, Prometheus down) leaves the region
// unknown, never zero.
func (l *Loop) carbon(ctx context.Context, now time.Time) map[string]float64 {
	out := map[string]float64{}
	b := l.books
	for _, c := range l.cfg.Accounting.Carbon {
		v, err := 0.0, error(nil)
		switch {
		case c.GramsPerKWh != nil:
			v = *c.GramsPerKWh
		case l.o.Numbers == nil:
			err = errors.New("no Prometheus to ask")
		default:
			v, err = l.o.Numbers.Number(ctx, c.Query, now)
			if err == nil && v < 0 {
				err = fmt.Errorf("negative intensity %v", v)
			}
		}
		if err != nil {
			l.log.WithField("region", c.Region).WithError(err).Warn("carbon intensity unknown this pass")
			b.known.WithLabelValues(c.Region).Set(0)
			b.intensity.DeleteLabelValues(c.Region)
			continue
		}
		out[c.Region] = v
		b.known.WithLabelValues(c.Region).Set(1)
		b.intensity.WithLabelValues(c.Region).Set(v)
	}
	return out
}

func (l *Loop) readingInterval() time.Duration {
	if l.o.Meter == nil {
		return 0
	}
	return time.Duration(l.cfg.BMC.PowerReadingInterval)
}

// readings are the BMCs' last power readings.
type readings struct {
	mu sync.Mutex
	by map[string]reading
}

type reading struct {
	watts float64
	power bmc.State // the power state when it was read
	at    time.Time // zero: none
	next  time.Time // when to ask again
}

// read asks node's BMC for its draw when it is due, after its power state was read as power.
func (l *Loop) readDraw(ctx context.Context, node string, power bmc.State, now time.Time) {
	interval := l.readingInterval()
	if interval <= 0 || power == bmc.StateUnknown {
		return
	}
	rs := &l.books.readings
	rs.mu.Lock()
	r := rs.by[node]
	rs.mu.Unlock()
	if now.Before(r.next) {
		return
	}
	got, err := l.o.Meter.PowerReading(ctx, node)
	switch {
	case err == nil:
		r = reading{watts: got.Watts, power: power, at: now, next: now.Add(interval)}
	case errors.Is(err, bmc.ErrNoReading):
		r = reading{next: now.Add(noReadingRetry)}
		l.log.WithField("node", node).WithError(err).Debug("no power reading; the pool's watts count")
	default:
		r.next = now.Add(interval)
		l.log.WithField("node", node).WithError(err).Debug("power reading failed")
	}
	rs.mu.Lock()
	rs.by[node] = r
	rs.mu.Unlock()
}

// fresh returns the readings that stand for each server now: taken in the power state it is
// in, within two intervals.
func (rs *readings) fresh(snap fleet.Snapshot, now time.Time, interval time.Duration) map[string]float64 {
	out := map[string]float64{}
	if interval <= 0 {
		return out
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, n := range snap.Nodes {
		r, ok := rs.by[n.Name]
		if ok && !r.at.IsZero() && r.power == n.Power && now.Sub(r.at) <= 2*interval {
			out[n.Name] = r.watts
		}
	}
	return out
}
