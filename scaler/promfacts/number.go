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
		return 0, fmt.Errorf("%w: a %s", ErrNotOneNumber, v.Type())
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%w: %v", ErrNotOneNumber, f)
	}
	return f, nil
}
