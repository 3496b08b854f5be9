package promfacts

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// ErrNotOneNumber is wrapped by Number when the answer is not exactly one finite sample: an
// absent series is not zero.
var ErrNotOneNumber = errors.New("the query did not answer exactly one number")

// Number runs one instant query that must answer one finite sample (a scalar, or a vector of
// one series), such as a region's carbon intensity.
func (r *Reader) Number(ctx context.Context, query string, now time.Time) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	v, warnings, _, err := r.api.Query(ctx, query, now, v1.WithTimeout(r.timeout))
	if err != nil {
		return 0, err
	}
	if len(warnings) > 0 {
		return 0, fmt.Errorf("%w: %v", ErrPartialAnswer, warnings)
	}
	var f float64
	switch a := v.(type) {
	case *model.Scalar:
		f = float64(a.Value)
	case model.Vector:
		if len(a) != 1 {
			return 0, fmt.Errorf("%w: %d series", ErrNotOneNumber, len(a))
		}
		f = float64(a[0].Value)
	default:
		return 0, fmt.Errorf("%w: a %s", ErrNotOneNumber, AnswerType(v))
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%w: %v", ErrNotOneNumber, f)
	}
	return f, nil
}

// maxWatts bounds a believable GPU draw of one server (10 MW): past it (+Inf, a broken
// exporter) the reading is none, as a BMC's is.
const maxWatts = 1e7

// GPUPower is, per server, what its GPUs draw now in watts (rota-exporter's
// rota_gpu_power_watts, dcgm-exporter's power field), for the servers with a reading from every
// GPU their pool declares: a sum short of a GPU would under-count the server.
func (r *Reader) GPUPower(ctx context.Context, now time.Time) (map[string]float64, error) {
	out := map[string]float64{}
	for i, e := range r.sources {
		if !r.gpus[i] {
			continue
		}
		sum, err := r.query(ctx, e.GPUPower(), now)
		if err != nil {
			return nil, fmt.Errorf("reading gpu power from %s: %w", e.Source(), err)
		}
		count, err := r.query(ctx, e.GPUPowerCount(), now)
		if err != nil {
			return nil, fmt.Errorf("reading gpu power from %s: %w", e.Source(), err)
		}
		for node, w := range sum {
			ref, ok := r.servers[node]
			if !ok || ref.source != i || ref.gpus == 0 || !(count[node] >= float64(ref.gpus)) || !(w >= 0 && w < maxWatts) {
				continue
			}
			out[node] = w
		}
	}
	return out, nil
}
