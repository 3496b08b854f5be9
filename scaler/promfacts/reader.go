package promfacts

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/alerts"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// ErrPartialAnswer is returned (wrapped, with the warnings) when Prometheus answers with
// warnings: the answer may lack servers, and missing servers must not look idle.
var ErrPartialAnswer = errors.New("prometheus answered with warnings")

// Reader reads utilisation facts from Prometheus. It is safe for concurrent use.
type Reader struct {
	api     v1.API
	sources []alerts.Expr // one per telemetry source the pools use
	gpus    []bool        // per source: a pool reading it declares GPUs
	servers map[string]serverRef
	maxAge  time.Duration
	timeout time.Duration
	log     *logrus.Entry
}

// serverRef is where one server's facts come from.
type serverRef struct {
	source int // index into sources
	gpus   int // GPUs its pool declares
}

// New builds a Reader for cfg.Prometheus (URL, timeout, HTTP client: auth, TLS, proxy; its
// fleet, which every query selects where set), with the windows and thresholds of cfg.Policy
// and each pool's telemetry source and declared GPUs.
func New(cfg *config.Config, log *logrus.Entry) (*Reader, error) {
	promAPI, err := NewAPI(cfg.Prometheus)
	if err != nil {
		return nil, err
	}
	r := &Reader{
		api:     promAPI,
		servers: map[string]serverRef{},
		maxAge:  time.Duration(cfg.Policy.Telemetry.MaxAge),
		timeout: time.Duration(cfg.Prometheus.Timeout),
		log:     log.WithField("component", "promfacts"),
	}
	for i, name := range cfg.SourcesInUse() {
		r.sources = append(r.sources, alerts.NewExprFor(cfg, name).InFleet(cfg.Prometheus.Fleet))
		r.gpus = append(r.gpus, false)
		for _, p := range cfg.Pools {
			if p.Source() != name {
				continue
			}
			r.gpus[i] = r.gpus[i] || p.Profile.GPUs > 0
			for _, n := range p.Nodes {
				r.servers[n.Name] = serverRef{source: i, gpus: p.Profile.GPUs}
			}
		}
	}
	return r, nil
}

// ref is where a server's facts come from; a server the config does not name reads
// rota-exporter (the first source when any pool uses it) and declares no GPUs.
func (r *Reader) ref(node string) serverRef { return r.servers[node] }

// Read returns a view for each of nodes as of now. See the package doc for what makes an error
// and what makes a server not Present.
func (r *Reader) Read(ctx context.Context, nodes []string, now time.Time) (map[string]fleet.TelemetryView, error) {
	unknown, err := r.unknown(ctx, now)
	if err != nil {
		return nil, err
	}
	res := make([]*results, len(r.sources))
	for i, e := range r.sources {
		res[i] = &results{}
		for _, q := range queries(e) {
			v, err := r.query(ctx, q.expr, now)
			if err != nil {
				return nil, fmt.Errorf("reading %s from %s: %w", q.name, e.Source(), err)
			}
			res[i][q.fact] = v
		}
	}
	out := make(map[string]fleet.TelemetryView, len(nodes))
	for _, n := range nodes {
		ref := r.ref(n)
		e := r.sources[ref.source]
		s := server{gpus: ref.gpus}
		s.unknown, s.unknownBlocks = unknown.about(e.Source(), ref.gpus > 0)
		out[n] = res[ref.source].view(n, s, now, r.maxAge, e.IdleSteps())
	}
	return out, nil
}

// Ready reports whether a booted server's exporter serves: Prometheus scrapes it and its
// newest CPU sample is fresh at now (fleet.SampleFresh). It answers an error
// when Prometheus cannot be read; the executor counts that as not ready, so the pool's boot
// timeout governs a boot during a Prometheus outage.
func (r *Reader) Ready(ctx context.Context, node string, now time.Time) (bool, error) {
	v, err := r.query(ctx, r.sources[r.ref(node).source].ExporterNewestSample(node), now)
	if err != nil {
		return false, fmt.Errorf("reading readiness of %s: %w", node, err)
	}
	newest, ok := v[node]
	if !ok || !finite(newest) {
		return false, nil
	}
	return fleet.SampleFresh(time.UnixMilli(int64(newest*1000)), now, r.maxAge), nil
}

type namedQuery struct {
	name string
	expr string
	fact fact
}

// queries are the questions asked of one source; rota-exporter has its own collectors and
// device count to ask about too.
func queries(e alerts.Expr) []namedQuery {
	cpu, busyMax, busyCount := e.CPUUtilization(), e.GPUBusyMax(), e.GPUBusyCount()
	qs := []namedQuery{
		{"cpu max", e.IdleMax(cpu), cpuMax},
		{"cpu coverage", e.IdleSamples(cpu), cpuSteps},
		{"gpu max", e.IdleMax(busyMax), gpuMax},
		{"gpu coverage", e.IdleSamples(busyMax), gpuSteps},
		{"fewest gpus read", e.IdleMin(busyCount), gpuCountMin},
		{"gpus read", busyCount, gpuCountNow},
		{"gpu mean", e.UnderuseMean(e.GPUBusyMean()), gpuMean},
		{"newest sample", e.NewestSample(), newest},
	}
	if p := e.GPUProcesses(); p != "" {
		qs = append(qs, namedQuery{"gpu processes", p, gpuProcesses})
	}
	if e.Source() == config.RotaExporter {
		qs = append(qs,
			namedQuery{"gpu devices", e.GPUDevices(), gpuDevices},
			namedQuery{"failing collectors", e.CollectorsFailing(), failing},
			namedQuery{"failing gpu collector", e.GPUCollectorFailing(), gpuFailing},
			namedQuery{"unread gpus", e.GPUsUnread(busyCount), unread})
	} else {
		// No count of a server's GPUs: those read at any step of the window stand for it.
		qs = append(qs, namedQuery{"most gpus read", e.IdleMax(busyCount), gpuCountMax})
	}
	return qs
}

// query runs one instant query and returns its value per node label.
func (r *Reader) query(ctx context.Context, q string, now time.Time) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	// Infos (PromQL's hints, such as a counter name without _total) do not make an answer
	// partial; warnings do.
	v, warnings, _, err := r.api.Query(ctx, q, now, v1.WithTimeout(r.timeout))
	if err != nil {
		return nil, err
	}
	if len(warnings) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrPartialAnswer, strings.Join(warnings, "; "))
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("answer is a %s, not a vector", AnswerType(v))
	}
	out := make(map[string]float64, len(vec))
	for _, s := range vec {
		node := string(s.Metric["node"])
		if _, dup := out[node]; dup {
			// Two series for one server (it is a target in two pools): its facts are
			// ambiguous, so it has none.
			r.log.WithField("node", node).Warn("two series for one server; check the scrape targets' pool labels")
			out[node] = math.NaN()
			continue
		}
		out[node] = float64(s.Value)
	}
	return out, nil
}
