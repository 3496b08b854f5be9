package promfacts

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rotahq/rota/alerts"
)

// unknownTelemetry is, per telemetry source, the series its mapping names that Prometheus
// does not have (none names its server in the mapped label).
type unknownTelemetry map[string][]alerts.Mapped

// unknown asks Prometheus, for every series an external source's mapping names, whether any
// such series names a server. It runs each pass, so a fixed mapping clears by itself.
func (r *Reader) unknown(ctx context.Context, now time.Time) (unknownTelemetry, error) {
	out := unknownTelemetry{}
	for i, e := range r.sources {
		for _, m := range e.Mapped(r.gpus[i]) {
			v, err := r.query(ctx, e.SeriesPresent(m), now)
			if err != nil {
				return nil, fmt.Errorf("looking for %s of %s: %w", m.Metric, e.Source(), err)
			}
			if len(v) == 0 {
				out[e.Source()] = append(out[e.Source()], m)
			}
		}
	}
	return out, nil
}

// about describes the unknown series that concern a server of the source (GPU series only
// when its pool has GPUs), and whether one of them blocks its data from being whole.
func (u unknownTelemetry) about(source string, gpus bool) (string, bool) {
	var parts []string
	blocks := false
	for _, m := range u[source] {
		if m.GPU && !gpus {
			continue
		}
		parts = append(parts, describe(m))
		blocks = blocks || m.Blocking
	}
	return strings.Join(parts, "; "), blocks
}

func describe(m alerts.Mapped) string {
	return fmt.Sprintf("no %s series names a server in label %s (%s)", m.Metric, m.Label, m.What)
}

// CheckTelemetry lists, for the start-up log, every series a telemetry source's mapping names
// that Prometheus does not have: unknown telemetry, never read as zero.
func (r *Reader) CheckTelemetry(ctx context.Context, now time.Time) ([]string, error) {
	u, err := r.unknown(ctx, now)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range r.sources {
		for _, m := range u[e.Source()] {
			effect := "reported only"
			if m.Blocking {
				effect = "its servers count as having no data"
			}
			out = append(out, fmt.Sprintf("unknown telemetry in source %s: %s; %s", e.Source(), describe(m), effect))
		}
	}
	return out, nil
}
