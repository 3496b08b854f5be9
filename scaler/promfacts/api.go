package promfacts

import (
	"fmt"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	promconfig "github.com/prometheus/common/config"

	"github.com/rotahq/rota/scaler/config"
)

// NewAPI is a Prometheus HTTP API client for p: its URL and HTTP client config (basic auth,
// bearer token file, TLS, proxy).
func NewAPI(p config.Prometheus) (v1.API, error) {
	rt, err := promconfig.NewRoundTripperFromConfig(p.HTTPClient, "rota")
	if err != nil {
		return nil, fmt.Errorf("prometheus http client: %w", err)
	}
	client, err := api.NewClient(api.Config{Address: p.URL, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("prometheus client: %w", err)
	}
	return v1.NewAPI(client), nil
}
