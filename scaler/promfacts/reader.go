package promfacts

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	promconfig "github.com/prometheus/common/config"
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
	expr    alerts.Expr
	maxAge  time.Duration
	timeout time.Duration
	log     *logrus.Entry
}

// New builds a Reader for cfg.Prometheus (URL, timeout, HTTP client: auth, TLS, proxy), with
// the windows and thresholds of cfg.Policy.
func New(cfg *config.Config, log *logrus.Entry) (*Reader, error) {
	rt, err := promconfig.NewRoundTripperFromConfig(cfg.Prometheus.HTTPClient, "rota")
	if err != nil {
		return nil, fmt.Errorf("prometheus http client: %w", err)
	}
	client, err := api.NewClient(api.Config{Address: cfg.Prometheus.URL, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("prometheus client: %w", err)
	}
	return &Reader{
		api:     v1.NewAPI(client),
		expr:    alerts.NewExpr(cfg),
		maxAge:  time.Duration(cfg.Policy.Telemetry.MaxAge),
		timeout: time.Duration(cfg.Prometheus.Timeout),
		log:     log.WithField("component", "promfacts"),
	}, nil
}

// Read returns a view for each of nodes as of now. See the package doc for what makes an error
// and what makes a server not Present.
func (r *Reader) Read(ctx context.Context, nodes []string, now time.Time) (map[string]fleet.TelemetryView, error) {
	var res results
	for _, q := range r.queries(&res) {
		v, err := r.query(ctx, q.expr, now)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", q.name, err)
		}
		*q.into = v
	}
	return res.views(nodes, now, r.maxAge, r.expr.IdleSteps()), nil
}

// Ready reports whether a booted server's exporter serves: Prometheus scrapes it (up is 1) and
// its newest CPU sample is no older than policy.telemetry.max_age at now. It answers an error
// when Prometheus cannot be read; the executor counts that as not ready, so the pool's boot
// timeout governs a boot during a Prometheus outage.
func (r *Reader) Ready(ctx context.Context, node string, now time.Time) (bool, error) {
	v, err := r.query(ctx, r.expr.ExporterNewestSample(node), now)
	if err != nil {
		return false, fmt.Errorf("reading readiness of %s: %w", node, err)
	}
	newest, ok := get(v, node)
	if !ok {
		return false, nil
	}
	return now.Sub(time.UnixMilli(int64(newest*1000))) <= r.maxAge, nil
}

type namedQuery struct {
	name string
	expr string
	into *map[string]float64
}

// results holds each query's answer by node name.
type results struct {
	cpuMax, cpuSteps, gpuMax, gpuSteps, gpuMean, gpuProcesses, gpuDevices, newest, failing, unread map[string]float64
}

func (r *Reader) queries(res *results) []namedQuery {
	e := r.expr
	cpu, gpuMax := e.CPUUtilization(), e.GPUUtilizationMax()
	return []namedQuery{
		{"cpu max", e.IdleMax(cpu), &res.cpuMax},
		{"cpu coverage", e.IdleSamples(cpu), &res.cpuSteps},
		{"gpu max", e.IdleMax(gpuMax), &res.gpuMax},
		{"gpu coverage", e.IdleSamples(gpuMax), &res.gpuSteps},
		{"gpu mean", e.UnderuseMean(e.GPUUtilizationMean()), &res.gpuMean},
		{"gpu processes", e.GPUProcesses(), &res.gpuProcesses},
		{"gpu devices", e.GPUDevices(), &res.gpuDevices},
		{"newest sample", e.NewestSample(), &res.newest},
		{"failing collectors", e.CollectorsFailing(), &res.failing},
		{"unread gpus", e.GPUsUnread(), &res.unread},
	}
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
		return nil, fmt.Errorf("answer is a %s, not a vector", v.Type())
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
